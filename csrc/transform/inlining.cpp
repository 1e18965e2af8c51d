// SPDX-License-Identifier: Apache-2.0
// Inlining: legal compute-at positions, inlineAt, inlineMost, computeAt.
#include "loom/transform/inlining.h"

#include <algorithm>
#include <optional>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "loom/ir/exprs.h"
#include "loom/ir/iter_domain.h"
#include "loom/ir/transforms.h"
#include "loom/transform/id_graph.h"
#include "loom/transform/loop_graph.h"
#include "loom/transform/replay.h"
#include "transform/utils.h"

namespace loom::transform {

using namespace loom::ir;

namespace {

bool isReductionTv(const TensorView* tv) {
  Expr* d = tv->definition();
  return d != nullptr && (d->isA<ReductionOp>() || d->isA<WelfordOp>()) &&
         tv->domain()->hasReduction();
}

// Where tv's loop[0, pos) lands in consumer c: the consumer position just after the last
// consumer loop ID matched (alignLoops, loop_graph.h), or -1 (with the failing axis in `why`).
int64_t alignedConsumerPos(const TensorView* tv, const TensorView* c, int64_t pos,
                           const IdGraph& graph, std::string* why) {
  std::vector<int64_t> at;
  if (!alignLoops(tv, c, pos, graph, at, why)) return -1;
  return at.empty() ? 0 : at.back() + 1;
}

// The loops tensors share given the compute-at positions set so far, checked as a whole:
// sharing is transitive (x feeds y and z, so y's loop and z's loop become one through x), which
// the per-tensor rules of maxPos cannot see. Two rules:
//  * Per reduction R: one loop cannot hold tensors R reads (R's own reduction loop included) and
//    tensors that read R's result, unless it encloses R (one of R's loops left of its reduction
//    loops: the row loop, in whose body R's reduction loop separates the two). R's result exists
//    only after its reduction loop ends.
//  * One loop runs over one space: the members derived from the most real dims (counted as sets
//    of the exact graph, following definitions across tensors, so a reduction's rFactor pieces
//    and a producer without the consumer's broadcast count as the dims they come from) must hold
//    the dims of every other member. A broadcast resolved to different dims by two consumers (x[1,
//    N] against a[M, N] and b[K, N]) cannot share the loop of either resolution with the other.
class SharedLoops {
 public:
  // `pending`: tensors whose positions are chosen later (inlineMost's list); `skip`: one more.
  SharedLoops(const Fusion& fusion, const IdGraph& permissive, const IdGraph& exact,
              const TensorView* skip, const std::unordered_set<const TensorView*>& pending = {})
      : permissive_(&permissive), exact_(&exact) {
    std::vector<TensorView*> tvs = fusion.allTvs();
    std::vector<const TensorView*> reductions;
    for (TensorView* tv : tvs) {
      if (isReductionTv(tv)) reductions.push_back(tv);
    }
    const size_t nr = reductions.size();
    std::vector<std::unordered_set<const TensorView*>> after;
    for (const TensorView* r : reductions) {
      after.push_back(detail::downstreamOf(r));
      for (TensorView* sib : detail::siblingsOf(r)) after.back().erase(sib);
    }
    for (TensorView* tv : tvs) {
      auto down_of_tv = detail::downstreamOf(tv);
      for (int64_t k = 0; k < tv->nDims(); ++k) {
        IterDomain* id = tv->axis(k);
        if (index_.count(id)) continue;
        index_[id] = int64_t(parent_.size());
        parent_.push_back(int64_t(parent_.size()));
        Root root;
        root.up.assign(nr, false);
        root.down.assign(nr, false);
        root.encl.assign(nr, false);
        for (size_t r = 0; r < nr; ++r) {
          bool is_r = tv == reductions[r];
          for (TensorView* sib : detail::siblingsOf(reductions[r])) is_r = is_r || sib == tv;
          root.up[r] = is_r || down_of_tv.count(reductions[r]) != 0;
          root.down[r] = after[r].count(tv) != 0;
          if (is_r) {
            bool before_reduction = true;
            for (int64_t j = 0; j <= k; ++j) before_reduction &= !tv->axis(j)->isReduction();
            root.encl[r] = before_reduction;
          }
        }
        root.best = ownLeafSets(id);
        root.output_broadcast =
            tv->isFusionOutput() && id->isBroadcast() && !id->hasExpandedExtent();
        roots_.push_back(std::move(root));
      }
    }
    // Producer-consumer pairs and each tensor's axes, for the ordering rule.
    std::unordered_map<const TensorView*, size_t> tv_index;
    for (TensorView* tv : tvs) {
      tv_index[tv] = tvs_.size();
      tvs_.push_back(tv);
      axes_.emplace_back();
      for (IterDomain* id : tv->loop()) axes_.back().push_back(size_t(index_.at(id)));
    }
    for (TensorView* tv : tvs) {
      Expr* def = tv->definition();
      if (def == nullptr) continue;
      for (TensorView* p : detail::tvInputs(def)) {
        auto it = tv_index.find(p);
        if (it != tv_index.end()) pairs_.emplace_back(it->second, tv_index.at(tv));
      }
    }
    for (TensorView* tv : tvs) {
      Expr* def = tv->definition();
      if (def == nullptr) continue;
      auto outs = detail::tvOutputs(def);
      for (TensorView* sib : outs) {
        for (int64_t k = 0; k < std::min(sib->nDims(), outs[0]->nDims()); ++k) {
          unite({outs[0]->axis(k), sib->axis(k)});
        }
      }
    }
    decided_.assign(tvs_.size(), false);
    for (TensorView* p : tvs) {
      if (p != skip && pending.count(p) == 0) commit(p, p->computeAtPosition(), nullptr, false);
    }
  }

  // True when joining the loops of `ids` would break a rule; `why` says which.
  bool conflict(const std::vector<IterDomain*>& ids, std::string* why) const {
    std::vector<size_t> rs = rootsOf(ids);
    const size_t nr = roots_.front().up.size();
    for (size_t r = 0; r < nr; ++r) {
      bool up = false, down = false, encl = false;
      for (size_t x : rs) {
        up = up || roots_[x].up[r];
        down = down || roots_[x].down[r];
        encl = encl || roots_[x].encl[r];
      }
      if (up && down && !encl) {
        if (why != nullptr) {
          *why =
              "it would join loops holding both tensors a reduction reads and readers of its "
              "result; a loop that does not enclose the reduction cannot run before and after it";
        }
        return true;
      }
    }
    size_t most = 0;
    for (size_t x : rs) most = std::max(most, roots_[x].best.size());
    bool output_broadcast = false;
    for (size_t x : rs) output_broadcast = output_broadcast || roots_[x].output_broadcast;
    if (output_broadcast && most > 0) {
      if (why != nullptr) {
        *why =
            "it would run a fusion output's broadcast axis as a loop over a real dim: the store "
            "would repeat per element, and never happen when that dim is empty";
      }
      return true;
    }
    if (rs.size() >= 2 && unorderable(rs) && !unorderable({})) {
      if (why != nullptr) {
        *why =
            "the loops could not be ordered: a loop would hold both a tensor and a reader of "
            "a tensor computed after that loop from it";
      }
      return true;
    }
    const std::vector<int64_t>* space = nullptr;
    for (size_t x : rs) {
      if (roots_[x].best.size() == most) space = &roots_[x].best;
    }
    for (size_t x : rs) {
      if (!std::includes(space->begin(), space->end(), roots_[x].best.begin(),
                         roots_[x].best.end())) {
        if (why != nullptr) {
          *why =
              "it would join loops that run over different dims (a broadcast resolved to "
              "different dims by two consumers)";
        }
        return true;
      }
    }
    return false;
  }

  void unite(const std::vector<IterDomain*>& ids) {
    std::vector<size_t> rs = rootsOf(ids);
    if (rs.size() < 2) return;
    Root& into = roots_[rs[0]];
    for (size_t i = 1; i < rs.size(); ++i) {
      const Root& from = roots_[rs[i]];
      parent_[rs[i]] = int64_t(rs[0]);
      for (size_t r = 0; r < into.up.size(); ++r) {
        into.up[r] = into.up[r] || from.up[r];
        into.down[r] = into.down[r] || from.down[r];
        into.encl[r] = into.encl[r] || from.encl[r];
      }
      into.output_broadcast = into.output_broadcast || from.output_broadcast;
      if (from.best.size() > into.best.size()) into.best = from.best;
    }
  }

  // The loops `tv` shares at compute-at position `pos`: each axis k < pos with the consumer axes
  // it aligns to. Returns the largest prefix that breaks no rule (all of pos when none does).
  // `decide`: tv's position is chosen here (by maxPos or inlineMost), so its producer-consumer
  // pairs count for the ordering rule; positions found already set (and possibly changed later
  // by a scheduler's own inlineAt calls) do not.
  int64_t commit(const TensorView* tv, int64_t pos, std::string* why = nullptr,
                 bool decide = true) {
    if (auto it = std::find(tvs_.begin(), tvs_.end(), tv); decide && it != tvs_.end()) {
      decided_[size_t(it - tvs_.begin())] = true;
    }
    auto consumers = detail::consumersOf(tv);
    std::vector<std::vector<int64_t>> at(consumers.size());
    for (size_t c = 0; c < consumers.size(); ++c) {
      if (!alignLoops(tv, consumers[c], pos, *permissive_, at[c])) at[c].clear();
    }
    for (int64_t k = 0; k < pos; ++k) {
      std::vector<IterDomain*> ids{tv->axis(k)};
      for (size_t c = 0; c < consumers.size(); ++c) {
        if (size_t(k) < at[c].size()) ids.push_back(consumers[c]->axis(at[c][size_t(k)]));
      }
      if (conflict(ids, why)) return k;
      unite(ids);
    }
    return pos;
  }

 private:
  // True when joining the groups `rs` would leave some loop (or the kernel body) with children
  // that cannot be ordered: lowering places each tensor in the loops of its axes and orders the
  // loops and statements inside each loop by their producer-consumer dependencies; a cycle among
  // siblings (x's loop feeds y outside it, and y feeds a later member of x's loop) would need
  // that loop to run twice. Loops over broadcasts only are left out of the chains (lowering does
  // not make them loops). With `rs` empty: the groups as they are (a join is refused only when it
  // makes a cycle that was not there already).
  bool unorderable(const std::vector<size_t>& rs) const {
    auto group = [&](size_t root) {
      return !rs.empty() && std::find(rs.begin(), rs.end(), root) != rs.end() ? rs.front() : root;
    };
    // Chains only of the tensors in a counted pair, computed once each.
    std::vector<std::vector<size_t>> chains(tvs_.size());
    std::vector<bool> have(tvs_.size(), false);
    auto chain = [&](size_t t) -> const std::vector<size_t>& {
      if (have[t]) return chains[t];
      have[t] = true;
      for (size_t axis : axes_[t]) {
        size_t r = group(find(axis));
        bool trivial = roots_[r].best.empty();
        if (!rs.empty() && r == rs.front()) {
          for (size_t x : rs) trivial = trivial && roots_[x].best.empty();
        }
        if (!trivial) chains[t].push_back(r);
      }
      return chains[t];
    };
    // Nodes: loops by group root, statements as parent_.size() + tensor index; numbered densely.
    const size_t stmt = parent_.size();
    std::unordered_map<size_t, size_t> node;
    std::vector<std::pair<size_t, size_t>> edges;
    auto nodeOf = [&](size_t key) { return node.emplace(key, node.size()).first->second; };
    for (auto [p, c] : pairs_) {
      // A producer whose position is not chosen here may yet share the loops it would now seem
      // to leave: only positions decided by this inlining count.
      if (!decided_[p]) continue;
      const auto& a = chain(p);
      const auto& b = chain(c);
      size_t l = 0;
      while (l < a.size() && l < b.size() && a[l] == b[l]) ++l;
      size_t from = l < a.size() ? a[l] : stmt + p;
      size_t to = l < b.size() ? b[l] : stmt + c;
      if (from != to) edges.emplace_back(nodeOf(from), nodeOf(to));
    }
    // A cycle remains when Kahn's order cannot take every node.
    std::vector<std::vector<size_t>> succ(node.size());
    std::vector<size_t> indegree(node.size(), 0);
    for (auto [f, t] : edges) {
      succ[f].push_back(t);
      ++indegree[t];
    }
    std::vector<size_t> ready;
    for (size_t n = 0; n < node.size(); ++n) {
      if (indegree[n] == 0) ready.push_back(n);
    }
    size_t taken = 0;
    while (!ready.empty()) {
      size_t n = ready.back();
      ready.pop_back();
      ++taken;
      for (size_t t : succ[n]) {
        if (--indegree[t] == 0) ready.push_back(t);
      }
    }
    return taken < node.size();
  }

  struct Root {
    std::vector<bool> up, down, encl;
    std::vector<int64_t> best;      ///< sorted exact sets of the real dims of the widest member
    bool output_broadcast = false;  ///< holds a (not expanded) broadcast axis of a fusion output
  };

  // The dims loop ID `id` iterates: its own tensor's history walked down to IDs without a
  // definition there, each taken as the exact sets of the real dims it stands for (leafSets).
  // A member whose dims are a subset of the widest member's is indexed through that member's
  // history when the loop is promoted (lowering/promotion.cpp): x[N] in the loop of
  // merge(M, N), whatever its own schedule's pieces.
  std::vector<int64_t> ownLeafSets(const IterDomain* id) {
    std::vector<int64_t> result;
    std::vector<const IterDomain*> work{id};
    std::unordered_set<const IterDomain*> seen;
    while (!work.empty()) {
      const IterDomain* x = work.back();
      work.pop_back();
      if (!seen.insert(x).second) continue;
      Expr* d = x->definition();
      if (d != nullptr && (d->isA<Split>() || d->isA<Merge>())) {
        for (Val* in : d->inputs()) work.push_back(in->as<IterDomain>());
        continue;
      }
      for (int64_t s : leafSets(x)) {
        if (std::find(result.begin(), result.end(), s) == result.end()) result.push_back(s);
      }
    }
    std::sort(result.begin(), result.end());
    return result;
  }

  // The exact sets of the real dims `id` is derived from, by the first rule that applies to its
  // exact set: (1) a member defined by a root-to-logical Split/Merge (a reshape's, an rFactor's
  // pieces) expands to that expr's inputs' dims; (2) a set holding an ID without a definition
  // (a root or logical ID; reductions aside) is a dim of its own, or none when those are all
  // plain broadcasts; (3) otherwise it expands through a member's Split/Merge (a schedule's, in
  // any tensor). Rule 2 comes before 3 because exact inverses (the outer piece of
  // split(merge(b, i), extent(i)) maps back to b) make sets that are their own ancestors, and
  // expanding those would depend on which member is met first. A set met again on its own
  // expansion path counts as a dim. Memoized per set.
  std::vector<int64_t> leafSets(const IterDomain* id) {
    int64_t set = exact_->setOf(id);
    if (auto it = leaves_.find(set); it != leaves_.end()) return it->second;
    leaves_[set] = {set};  // in progress
    std::vector<int64_t> result;
    bool has_leaf = false;
    bool real_leaf = false;
    for (IterDomain* m : exact_->disjointSet(id)) {
      if (m->definition() != nullptr || m->isReduction()) continue;
      has_leaf = true;
      real_leaf = real_leaf || !(m->isBroadcast() && !m->hasExpandedExtent());
    }
    auto definitionOf = [&](bool rfactor_only) -> const Expr* {
      for (IterDomain* m : exact_->disjointSet(id)) {
        Expr* d = m->definition();
        if (d == nullptr || !(d->isA<Split>() || d->isA<Merge>())) continue;
        if (rfactor_only && !m->isRFactorProduct()) continue;
        bool self = false;
        for (Val* in : d->inputs()) self = self || exact_->setOf(in->as<IterDomain>()) == set;
        if (!self) return d;
      }
      return nullptr;
    };
    const Expr* def = definitionOf(/*rfactor_only=*/true);
    if (def != nullptr) {
      has_leaf = false;
    } else if (!has_leaf) {
      def = definitionOf(/*rfactor_only=*/false);
    }
    if (has_leaf) {
      if (real_leaf) result.push_back(expandedAsReal(id, set));
    } else if (def == nullptr) {
      if (!(id->isBroadcast() && !id->hasExpandedExtent())) result.push_back(set);
    } else {
      for (Val* in : def->inputs()) {
        for (int64_t x : leafSets(in->as<IterDomain>())) {
          if (std::find(result.begin(), result.end(), x) == result.end()) result.push_back(x);
        }
      }
    }
    std::sort(result.begin(), result.end());
    leaves_[set] = result;
    return result;
  }
  // An exact set of expanded broadcasts (and no real ID) is the same dim as a real ID of the
  // same extent it maps to permissively: x expanded to [8, N] and sum(x) over [r8, N] run over
  // one space. The smallest such exact set stands for it; `set` when there is none.
  int64_t expandedAsReal(const IterDomain* id, int64_t set) const {
    bool expanded_only = true;
    const IterDomain* expanded = nullptr;
    for (IterDomain* m : exact_->disjointSet(id)) {
      if (!m->isBroadcast()) expanded_only = false;
      if (m->hasExpandedExtent()) expanded = m;
    }
    if (!expanded_only || expanded == nullptr || !permissive_->contains(id)) return set;
    auto sameExtent = [&](const IterDomain* y) {
      const Scalar* a = expanded->logicalExtent();
      const Scalar* b = y->logicalExtent();
      auto ca = a->constInt();
      auto cb = b->constInt();
      return a == b || (ca.has_value() && cb.has_value() && *ca == *cb) ||
             exact_->sameSpace(expanded, y);
    };
    int64_t best = set;
    bool found = false;
    for (IterDomain* y : permissive_->disjointSet(id)) {
      if (y->isBroadcast() || !exact_->contains(y) || !sameExtent(y)) continue;
      int64_t ys = exact_->setOf(y);
      if (!found || ys < best) best = ys;
      found = true;
    }
    return best;
  }
  size_t find(size_t i) const {
    while (parent_[i] != int64_t(i)) i = size_t(parent_[i]);
    return i;
  }
  std::vector<size_t> rootsOf(const std::vector<IterDomain*>& ids) const {
    std::vector<size_t> rs;
    for (IterDomain* id : ids) {
      auto it = index_.find(id);
      if (it == index_.end()) continue;
      size_t r = find(size_t(it->second));
      if (std::find(rs.begin(), rs.end(), r) == rs.end()) rs.push_back(r);
    }
    return rs;
  }
  const IdGraph* permissive_;
  const IdGraph* exact_;
  std::vector<const TensorView*> tvs_;
  std::vector<std::vector<size_t>> axes_;  ///< per tvs_: the union-find index of each loop ID
  std::vector<std::pair<size_t, size_t>> pairs_;  ///< (producer, consumer) indices into tvs_
  std::vector<bool> decided_;                     ///< per tvs_: position chosen by this inlining
  std::unordered_map<const IterDomain*, int64_t> index_;
  std::vector<int64_t> parent_;
  std::vector<Root> roots_;
  std::unordered_map<int64_t, std::vector<int64_t>> leaves_;
};

// Computes the legal maximum; `why` receives the rule that stopped it.
int64_t maxPos(const TensorView* tv, const IdGraph& graph, InlineOptions options, std::string* why,
               const SharedLoops* shared = nullptr, bool* shared_limited = nullptr) {
  if (shared_limited != nullptr) *shared_limited = false;
  auto say = [&](auto&&... parts) {
    if (why == nullptr) return;
    std::ostringstream os;
    (os << ... << parts);
    *why = os.str();
  };
  if (tv->isFusionInput()) {
    say(tv->toString(), " is a fusion input");
    return 0;
  }
  auto consumers = detail::consumersOf(tv);
  if (consumers.empty()) {
    say(tv->toString(), " has no consumers");
    return 0;
  }
  // Reductions fed by tv, and for each the tensors after it that tv reaches through a consumer
  // that does not feed it (the tensors between are inlined, so tv's loop would be theirs), and
  // the reduction IDs (collected once, not per axis). tv's loop over a reduced ID would have to
  // run both before the reduction (feeding it) and after it, so tv is kept whole there: tv
  // branches into the reduction and past it. x -> cast -> sum with x -> cast' -> sub(cast',
  // mean) keeps x, not cast', as the persistent buffer, whatever order inlineMost visits them
  // in; a consumer feeding both (softmax's sub -> exp -> sum and exp -> div) branches itself.
  struct Crossing {
    const TensorView* r;
    std::vector<const TensorView*> late;
    std::vector<IterDomain*> reduction_ids;
  };
  auto downstream = detail::downstreamOf(tv);
  std::vector<Crossing> crossings;
  for (const TensorView* r : downstream) {
    if (!isReductionTv(r)) continue;
    auto after = detail::downstreamOf(r);
    std::unordered_set<const TensorView*> through_r{r};
    for (TensorView* sib : detail::siblingsOf(r)) through_r.insert(sib);
    std::vector<const TensorView*> late;
    for (TensorView* c : consumers) {
      if (through_r.count(c) != 0 || detail::downstreamOf(c).count(r) != 0) continue;
      if (after.count(c) != 0) late.push_back(c);
      for (const TensorView* t : detail::downstreamOf(c, through_r)) {
        if (after.count(t) != 0) late.push_back(t);
      }
    }
    if (late.empty()) continue;
    std::sort(late.begin(), late.end(),  // the message names the first, the same every time
              [](const TensorView* a, const TensorView* b) { return a->name() < b->name(); });
    std::vector<IterDomain*> reduction_ids;
    for (IterDomain* rid : detail::allIds(r)) {
      if (rid->isReduction()) reduction_ids.push_back(rid);
    }
    crossings.push_back({r, std::move(late), std::move(reduction_ids)});
  }
  // The rules of one tensor and its direct consumers: `local` is where the first one stops.
  int64_t local = tv->nDims();
  for (int64_t k = 0; k < tv->nDims() && local == tv->nDims(); ++k) {
    IterDomain* id = tv->axis(k);
    if (id->isReduction()) {
      say("axis ", k, " (", id->toString(), ") of ", tv->toString(),
          " is a reduction; its consumers cannot share that loop");
      local = k;
      break;
    }
    if (id->parallelType() == ParallelType::Vectorize) {
      say("axis ", k, " (", id->toString(), ") of ", tv->toString(), " is vectorized");
      local = k;
      break;
    }
    if (id->parallelType() == ParallelType::Bulk) {
      say("axis ", k, " (", id->toString(), ") of ", tv->toString(), " is a TMA copy's box");
      local = k;
      break;
    }
    if (!options.allow_unroll && id->parallelType() == ParallelType::Unroll) {
      say("axis ", k, " (", id->toString(), ") of ", tv->toString(), " is unrolled");
      local = k;
      break;
    }
    for (TensorView* c : consumers) {
      int64_t before = alignedConsumerPos(tv, c, k, graph, nullptr);
      int64_t after = alignedConsumerPos(tv, c, k + 1, graph, why);
      if (after < 0) {
        local = k;
        break;
      }
      for (int64_t j = before; j < after; ++j) {
        if (c->axis(j)->parallelType() == ParallelType::Vectorize) {
          say("axis ", j, " of consumer ", c->toString(), " is vectorized");
          local = k;
          break;
        }
        if (c->axis(j)->parallelType() == ParallelType::Bulk) {
          say("axis ", j, " of consumer ", c->toString(), " is a TMA copy's box");
          local = k;
          break;
        }
        // One loop has one parallel type: a thread or block type meeting another type cannot
        // share it (serial takes the other's). Only the consumer ID tv's own maps to counts
        // (the others in the range are the consumer's extra loops, such as broadcast ones).
        const ParallelType mine = id->parallelType();
        const ParallelType theirs = c->axis(j)->parallelType();
        if (mine != ParallelType::Serial && theirs != ParallelType::Serial && mine != theirs &&
            (isThreadOrBlockDim(mine) || isThreadOrBlockDim(theirs)) &&
            graph.areMapped(id, c->axis(j))) {
          say("axis ", k, " of ", tv->toString(), " is ", parallelTypeName(mine), " and axis ", j,
              " of consumer ", c->toString(), " is ", parallelTypeName(theirs));
          local = k;
          break;
        }
      }
    }
    for (const auto& [r, late, r_ids] : crossings) {
      bool reduced = std::any_of(r_ids.begin(), r_ids.end(),
                                 [&](IterDomain* rid) { return graph.areMapped(id, rid); });
      if (reduced) {
        say("axis ", k, " (", id->toString(), ") of ", tv->toString(), " is reduced by ",
            r->toString(), " and ", late.front()->toString(), ", which ", tv->toString(),
            " also feeds, reads the reduction's result; it cannot share that loop");
        local = k;
        break;
      }
    }
  }
  // The loops as a whole (transitive sharing through other tensors' inlining), checked on a
  // copy: only setPosition commits.
  std::optional<IdGraph> exact;
  std::optional<SharedLoops> own;
  if (shared == nullptr) {
    exact.emplace(*tv->fusion(), IdMappingMode::Exact);
    own.emplace(*tv->fusion(), graph, *exact, tv);
    shared = &*own;
  }
  SharedLoops trial = *shared;
  std::string rule;
  int64_t ok = trial.commit(tv, local, why != nullptr ? &rule : nullptr);
  if (shared_limited != nullptr) *shared_limited = ok < local;
  if (ok < local) {
    say("axis ", ok, " (", tv->axis(ok)->toString(), ") of ", tv->toString(),
        " cannot be shared: ", rule);
  }
  return ok;
}

// Sets tv's compute-at position and gives each consumer the largest position aligned with one
// of its producers' compute-at positions.
void setPosition(TensorView* tv, int64_t pos, const IdGraph& graph) {
  tv->setComputeAtPosition(pos);
  for (TensorView* c : detail::consumersOf(tv)) {
    int64_t m = 0;
    for (TensorView* p : detail::producersOf(c)) {
      int64_t a = alignedConsumerPos(p, c, p->computeAtPosition(), graph, nullptr);
      LOOM_ASSERT(a >= 0, p->toString(), " is inlined at ", p->computeAtPosition(),
                  " but its loop does not align with consumer ", c->toString());
      m = std::max(m, a);
    }
    c->setMaxProducerPosition(m);
  }
}

void inlineWith(TensorView* tv, int64_t pos, bool best_effort, InlineOptions options,
                const IdGraph& graph) {
  int64_t n = tv->nDims();
  if (pos < 0) pos += n + 1;
  LOOM_CHECK(pos >= 0 && pos <= n, "inlineAt of ", tv->toString(), ": position ", pos,
             " is out of range for ", n, " loop IDs");
  std::string why;  // only an error reports it: best effort skips building the message
  int64_t max = maxPos(tv, graph, options, best_effort ? nullptr : &why);
  if (best_effort) {
    pos = std::min(pos, max);
  } else {
    LOOM_CHECK(pos <= max, "cannot inline ", tv->toString(), " at position ", pos,
               ": the largest legal position is ", max, " because ", why);
  }
  setPosition(tv, pos, graph);
}

void checkPermissive(const IdGraph& graph) {
  LOOM_ASSERT(graph.mode() == IdMappingMode::Permissive,
              "inlining needs a permissive IdGraph (broadcasts map to what they resolve to)");
}

}  // namespace

int64_t maxInlinePosition(const TensorView* tv, const IdGraph& permissive, InlineOptions options) {
  checkPermissive(permissive);
  return maxPos(tv, permissive, options, nullptr);
}

int64_t maxInlinePosition(const TensorView* tv, InlineOptions options) {
  return maxInlinePosition(tv, IdGraph(*tv->fusion(), IdMappingMode::Permissive), options);
}

void inlineAt(TensorView* tv, int64_t pos, const IdGraph& permissive, bool best_effort,
              InlineOptions options) {
  checkPermissive(permissive);
  inlineWith(tv, pos, best_effort, options, permissive);
}

void inlineAt(TensorView* tv, int64_t pos, bool best_effort, InlineOptions options) {
  inlineAt(tv, pos, IdGraph(*tv->fusion(), IdMappingMode::Permissive), best_effort, options);
}

void inlineMost(const std::vector<TensorView*>& tvs, const IdGraph& permissive,
                InlineOptions options) {
  checkPermissive(permissive);
  if (tvs.empty()) return;
  // Positions are chosen again, in order, against the loops the tensors before them formed.
  for (TensorView* tv : tvs) {
    if (!tv->isFusionInput()) setPosition(tv, 0, permissive);
  }
  const IdGraph exact(*tvs.front()->fusion(), IdMappingMode::Exact);
  const std::unordered_set<const TensorView*> pending(tvs.begin(), tvs.end());
  SharedLoops shared(*tvs.front()->fusion(), permissive, exact, nullptr, pending);
  // A tensor stopped by the loops as a whole may be stopped by a join a later tensor makes
  // legal: a cast of a cached row, visited before the reduction it precedes, cannot share the
  // row loop with the readers of the reduction's result until the reduction's own chain has
  // joined that loop (the loop encloses it). Such tensors are visited again until none moves.
  std::vector<TensorView*> again;
  for (TensorView* tv : tvs) {
    if (tv->isFusionInput()) continue;
    bool limited = false;
    int64_t pos = maxPos(tv, permissive, options, nullptr, &shared, &limited);
    setPosition(tv, pos, permissive);
    shared.commit(tv, pos);
    if (limited) again.push_back(tv);
  }
  for (bool moved = !again.empty(); moved;) {
    moved = false;
    for (TensorView* tv : again) {
      int64_t pos = maxPos(tv, permissive, options, nullptr, &shared);
      if (pos <= tv->computeAtPosition()) continue;
      setPosition(tv, pos, permissive);
      shared.commit(tv, pos);
      moved = true;
    }
  }
}

void inlineMost(const std::vector<TensorView*>& tvs, InlineOptions options) {
  if (tvs.empty()) return;
  inlineMost(tvs, IdGraph(*tvs.front()->fusion(), IdMappingMode::Permissive), options);
}

void inlineMost(Fusion& fusion, InlineOptions options) { inlineMost(fusion.allTvs(), options); }

void computeAt(TensorView* producer, TensorView* consumer, int64_t pos, InlineOptions options) {
  auto down = detail::downstreamOf(producer);
  LOOM_CHECK(down.count(consumer), "computeAt: ", producer->toString(), " is not upstream of ",
             consumer->toString());
  int64_t n = consumer->nDims();
  if (pos < 0) pos += n + 1;
  LOOM_CHECK(pos >= 0 && pos <= n, "computeAt: position ", pos, " is out of range for ",
             consumer->toString(), " with ", n, " loop IDs");
  // Tensors on paths producer -> consumer, consumers first.
  std::vector<TensorView*> between;
  auto tvs = producer->fusion()->allTvs();
  for (auto it = tvs.rbegin(); it != tvs.rend(); ++it) {
    TensorView* t = *it;
    if (t == consumer || (t != producer && !down.count(t))) continue;
    if (detail::downstreamOf(t).count(consumer)) between.push_back(t);
  }
  std::unordered_map<const TensorView*, int64_t> at{{consumer, pos}};
  for (TensorView* t : between) {
    for (TensorView* c : detail::consumersOf(t)) {
      auto it = at.find(c);
      if (it == at.end()) continue;
      at[t] = TransformReplay::replayPasC(t, c, it->second);
      break;
    }
  }
  IdGraph graph(*producer->fusion(), IdMappingMode::Permissive);
  for (auto it = between.rbegin(); it != between.rend(); ++it) {
    inlineWith(*it, at.at(*it), false, options, graph);
  }
}

}  // namespace loom::transform
