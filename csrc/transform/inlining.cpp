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

// The loops tensors share given the compute-at positions of every tensor but one (`skip`, whose
// position is being chosen), and for each loop, per reduction R: whether it holds tensors R reads
// (R's own reduction loop included) and tensors that read R's result. One loop cannot do both
// unless it encloses R (one of R's loops left of its reduction loops: the row loop, in whose body
// R's reduction loop separates the two): R's result exists only after its reduction loop ends.
// The crossing rule in maxPos sees this for a tensor's direct consumers; sharing is transitive
// (x feeds R and y, y feeds z, z reads R's result: x's loop joins z's through y), so the loops as
// a whole are checked too.
class SharedLoops {
 public:
  SharedLoops(const Fusion& fusion, const IdGraph& permissive, const TensorView* skip) {
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
        std::vector<bool> up(nr, false), down(nr, false), encl(nr, false);
        for (size_t r = 0; r < nr; ++r) {
          bool is_r = tv == reductions[r];
          for (TensorView* sib : detail::siblingsOf(reductions[r])) is_r = is_r || sib == tv;
          up[r] = is_r || down_of_tv.count(reductions[r]) != 0;
          down[r] = after[r].count(tv) != 0;
          if (is_r) {
            bool before_reduction = true;
            for (int64_t j = 0; j <= k; ++j) before_reduction &= !tv->axis(j)->isReduction();
            encl[r] = before_reduction;
          }
        }
        up_.push_back(std::move(up));
        down_.push_back(std::move(down));
        encl_.push_back(std::move(encl));
      }
    }
    for (TensorView* tv : tvs) {
      Expr* def = tv->definition();
      if (def == nullptr) continue;
      auto outs = detail::tvOutputs(def);
      for (TensorView* sib : outs) {
        for (int64_t k = 0; k < std::min(sib->nDims(), outs[0]->nDims()); ++k) {
          unite(outs[0]->axis(k), sib->axis(k));
        }
      }
    }
    for (TensorView* p : tvs) {
      if (p == skip || p->computeAtPosition() == 0) continue;
      for (TensorView* c : detail::consumersOf(p)) {
        std::vector<int64_t> at;
        if (!alignLoops(p, c, p->computeAtPosition(), permissive, at)) continue;
        for (size_t k = 0; k < at.size(); ++k) unite(p->axis(int64_t(k)), c->axis(at[k]));
      }
    }
  }

  // True when the loops of `a` and `b`, joined, would hold tensors a reduction reads and readers
  // of its result without enclosing it.
  bool conflict(const IterDomain* a, const IterDomain* b) const {
    auto ia = index_.find(a);
    auto ib = index_.find(b);
    if (ia == index_.end() || ib == index_.end()) return false;
    size_t ra = size_t(find(ia->second)), rb = size_t(find(ib->second));
    for (size_t r = 0; r < up_[ra].size(); ++r) {
      bool up = up_[ra][r] || up_[rb][r];
      bool down = down_[ra][r] || down_[rb][r];
      bool encl = encl_[ra][r] || encl_[rb][r];
      if (up && down && !encl) return true;
    }
    return false;
  }

  void unite(const IterDomain* a, const IterDomain* b) {
    auto ia = index_.find(a);
    auto ib = index_.find(b);
    if (ia == index_.end() || ib == index_.end()) return;
    int64_t ra = find(ia->second), rb = find(ib->second);
    if (ra == rb) return;
    parent_[size_t(rb)] = ra;
    for (size_t r = 0; r < up_[size_t(ra)].size(); ++r) {
      up_[size_t(ra)][r] = up_[size_t(ra)][r] || up_[size_t(rb)][r];
      down_[size_t(ra)][r] = down_[size_t(ra)][r] || down_[size_t(rb)][r];
      encl_[size_t(ra)][r] = encl_[size_t(ra)][r] || encl_[size_t(rb)][r];
    }
  }

 private:
  int64_t find(int64_t i) const {
    while (parent_[size_t(i)] != i) i = parent_[size_t(i)];
    return i;
  }
  std::unordered_map<const IterDomain*, int64_t> index_;
  std::vector<int64_t> parent_;
  std::vector<std::vector<bool>> up_, down_, encl_;
};

// Computes the legal maximum; `why` receives the rule that stopped it.
int64_t maxPos(const TensorView* tv, const IdGraph& graph, InlineOptions options,
               std::string* why) {
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
  // Reductions fed by tv, and for each the consumers of tv that come after it and its reduction
  // IDs (collected once, not per axis).
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
    std::vector<const TensorView*> late;
    for (TensorView* c : consumers) {
      if (after.count(c)) late.push_back(c);
    }
    if (late.empty()) continue;
    std::vector<IterDomain*> reduction_ids;
    for (IterDomain* rid : detail::allIds(r)) {
      if (rid->isReduction()) reduction_ids.push_back(rid);
    }
    crossings.push_back({r, std::move(late), std::move(reduction_ids)});
  }
  std::optional<SharedLoops> shared;  // built on first use: most tensors stop earlier
  for (int64_t k = 0; k < tv->nDims(); ++k) {
    IterDomain* id = tv->axis(k);
    if (id->isReduction()) {
      say("axis ", k, " (", id->toString(), ") of ", tv->toString(),
          " is a reduction; its consumers cannot share that loop");
      return k;
    }
    if (id->parallelType() == ParallelType::Vectorize) {
      say("axis ", k, " (", id->toString(), ") of ", tv->toString(), " is vectorized");
      return k;
    }
    if (!options.allow_unroll && id->parallelType() == ParallelType::Unroll) {
      say("axis ", k, " (", id->toString(), ") of ", tv->toString(), " is unrolled");
      return k;
    }
    for (TensorView* c : consumers) {
      int64_t before = alignedConsumerPos(tv, c, k, graph, nullptr);
      int64_t after = alignedConsumerPos(tv, c, k + 1, graph, why);
      if (after < 0) return k;
      for (int64_t j = before; j < after; ++j) {
        if (c->axis(j)->parallelType() == ParallelType::Vectorize) {
          say("axis ", j, " of consumer ", c->toString(), " is vectorized");
          return k;
        }
      }
    }
    for (const auto& [r, late, r_ids] : crossings) {
      bool reduced = std::any_of(r_ids.begin(), r_ids.end(),
                                 [&](IterDomain* rid) { return graph.areMapped(id, rid); });
      if (reduced) {
        say("axis ", k, " (", id->toString(), ") of ", tv->toString(), " is reduced by ",
            r->toString(), " and consumer ", late.front()->toString(),
            " reads the reduction's result; it cannot share that loop");
        return k;
      }
    }
    // The loops as a whole (transitive sharing through other tensors' inlining).
    if (!shared.has_value()) shared.emplace(*tv->fusion(), graph, tv);
    std::vector<IterDomain*> joined;
    for (TensorView* c : consumers) {
      std::vector<int64_t> at;
      if (alignLoops(tv, c, k + 1, graph, at)) joined.push_back(c->axis(at[size_t(k)]));
    }
    for (IterDomain* c_id : joined) {
      if (shared->conflict(id, c_id)) {
        say("axis ", k, " (", id->toString(), ") of ", tv->toString(), " would join the loop ",
            "of ", c_id->toString(), " to one holding both tensors a reduction reads and readers "
            "of its result; a loop that does not enclose the reduction cannot run before and "
            "after it");
        return k;
      }
      shared->unite(id, c_id);
    }
  }
  return tv->nDims();
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

int64_t maxInlinePosition(const TensorView* tv, const IdGraph& permissive,
                          InlineOptions options) {
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
  for (TensorView* tv : tvs) {
    if (tv->isFusionInput()) continue;
    inlineWith(tv, -1, true, options, permissive);
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
