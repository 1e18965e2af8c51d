// SPDX-License-Identifier: Apache-2.0
// TransformReplay: selfReplay, replayPasC, replayCasP.
//
// All three share one core: given a map from source IDs to target IDs, walk the source's
// Split/Merge exprs in topological order and apply each to the mapped target IDs. The target's
// new loop is then the images of the source loop IDs (in source order), followed by the target
// IDs the replay did not reach.
#include "loom/transform/replay.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "loom/ir/builder.h"
#include "loom/ir/iter_domain.h"
#include "loom/ir/scalar.h"
#include "loom/ir/transforms.h"
#include "loom/ir/logical_map.h"
#include "transform/utils.h"

namespace loom::transform {

using namespace loom::ir;

namespace {

bool sameFactor(const Scalar* a, const Scalar* b) {
  if (a == b) return true;
  auto ca = a->constInt();
  auto cb = b->constInt();
  return ca.has_value() && ca == cb;
}

void copyParallel(const IterDomain* src, IterDomain* dst, ParallelCopy mode) {
  if (mode == ParallelCopy::None || src->parallelType() == dst->parallelType()) return;
  if (mode == ParallelCopy::DeviceOnly && !src->isDeviceDim()) return;
  dst->parallelize(src->parallelType());
}

class ReplayCore {
 public:
  /// `target` (may be null) is the tensor receiving the replay; its root->logical transforms (a
  /// reshape) are reused where the source matches them and lifted into the loop side otherwise.
  ReplayCore(std::unordered_map<IterDomain*, IterDomain*> map, ParallelCopy mode,
             const TensorView* target = nullptr)
      : map_(std::move(map)), mode_(mode) {
    // The dims a squeeze removes are 1 at run time (the squeeze checks it, also for a dim of
    // symbolic extent): a merge with one of them is forwarded like a merge with a broadcast.
    if (target != nullptr && target->definition() != nullptr) {
      if (auto* sq = target->definition()->dynCast<SqueezeOp>()) {
        for (IterDomain* id : sq->squeezedIds()) squeezed_.insert(id);
      }
    }
    // A target root ID that a Resize consumes (slice, pad) has no loop-side image: the Resize
    // output is a new iteration space, so nothing is replayed onto its input.
    if (target != nullptr) {
      for (IterDomain* id : target->logical()) {
        if (auto* r = id->definition() != nullptr ? id->definition()->dynCast<Resize>() : nullptr) {
          for (auto it = map_.begin(); it != map_.end();) {
            it = it->second == r->in() ? map_.erase(it) : std::next(it);
          }
        }
      }
    }
    for (auto& [s, t] : map_) copyParallel(s, t, mode_);
    if (target != nullptr && target->domain()->hasRoot()) {
      target_ = target;
      const auto& logical = target->logical();
      for (Expr* e : detail::exprsBetween(target->domain()->root(), logical)) {
        for (Val* v : e->inputs()) {
          auto* id = v->as<IterDomain>();
          if (std::find(logical.begin(), logical.end(), id) == logical.end()) {
            root_side_[id] = e;
          }
        }
      }
    }
  }

  void run(const std::vector<Expr*>& exprs) {
    for (Expr* e : exprs) {
      if (replayed_.count(e)) continue;
      current_ = e;
      if (auto* s = e->dynCast<Split>()) {
        replaySplit(s);
      } else {
        replayMerge(e->as<Merge>());
      }
    }
    current_ = nullptr;
  }

  IterDomain* image(IterDomain* id) const {
    auto it = map_.find(id);
    return it == map_.end() ? nullptr : it->second;
  }

  /// image(id), lifted out of the target's root->logical transforms when it lies there (so a
  /// source loop ID can become a target loop ID). Lifting exprs made here are applied last.
  IterDomain* loopImage(IterDomain* id) {
    IterDomain* t = image(id);
    return t == nullptr ? nullptr : lift(t);
  }

  /// Target IDs after applying the images of `source_exprs` (and the lifts they needed) to
  /// `start`, in order.
  std::vector<IterDomain*> leaves(std::vector<IterDomain*> start,
                                  const std::vector<Expr*>& source_exprs,
                                  bool with_loop_lifts) const {
    std::unordered_set<Expr*> applied;
    auto apply = [&](Expr* te) {
      if (te == nullptr || !applied.insert(te).second) return;
      if (auto* s = te->dynCast<Split>()) {
        auto pos = std::find(start.begin(), start.end(), s->in());
        if (pos == start.end()) return;
        *pos = s->outer();
        start.insert(pos + 1, s->inner());
      } else {
        auto* m = te->as<Merge>();
        auto po = std::find(start.begin(), start.end(), m->outer());
        auto pi = std::find(start.begin(), start.end(), m->inner());
        if (po == start.end() || pi == start.end()) return;
        *po = m->out();
        start.erase(pi);
      }
    };
    for (Expr* se : source_exprs) {
      auto lf = lifts_.find(se);
      if (lf != lifts_.end()) {
        for (Expr* te : lf->second) apply(te);
      }
      auto it = replayed_.find(se);
      if (it != replayed_.end()) apply(it->second);
    }
    auto lf = lifts_.find(nullptr);
    if (with_loop_lifts && lf != lifts_.end()) {
      for (Expr* te : lf->second) apply(te);
    }
    return start;
  }

 private:
  bool rootSide(const IterDomain* id) const { return root_side_.count(id) != 0; }

  // The loop-side equivalent of a target ID inside its root->logical transforms: a split piece
  // of a reshape merge is recovered by splitting the (lifted) merge output by the inner extent; a
  // reshape-split ID by merging its (lifted) pieces. Both are exact because reshape transforms
  // divide evenly.
  IterDomain* lift(IterDomain* id) {
    if (!rootSide(id)) return id;
    auto known = lifted_.find(id);
    if (known != lifted_.end()) return known->second;
    Expr* use = root_side_.at(id);
    if (auto* s = use->dynCast<Split>()) {
      IterDomain* o = lift(s->outer());
      IterDomain* i = lift(s->inner());
      lifted_[id] = findOrMerge(o, i);
    } else if (auto* m = use->dynCast<Merge>()) {
      IterDomain* out = lift(m->out());
      Split* split = findOrSplit(out, m->inner()->extent(), true);
      lifted_[m->outer()] = split->outer();
      lifted_[m->inner()] = split->inner();
    }
    LOOM_CHECK(lifted_.count(id), "cannot replay onto ", target_->toString(), ": ",
               id->toString(), " of its root-to-logical transforms has no loop-side equivalent");
    return lifted_.at(id);
  }

  Split* findOrSplit(IterDomain* in, Scalar* factor, bool inner_split) {
    for (Expr* use : in->uses()) {
      auto* u = use->dynCast<Split>();
      if (u != nullptr && u->in() == in && u->innerSplit() == inner_split &&
          sameFactor(u->factor(), factor)) {
        record(u);
        return u;
      }
    }
    IterDomain::split(in, factor, inner_split);
    auto* made = in->uses().back()->as<Split>();
    record(made);
    return made;
  }

  IterDomain* findOrMerge(IterDomain* o, IterDomain* i) {
    for (Expr* use : o->uses()) {
      auto* u = use->dynCast<Merge>();
      if (u != nullptr && u->outer() == o && u->inner() == i) {
        record(u);
        return u->out();
      }
    }
    IterDomain* out = IterDomain::merge(o, i);
    record(o->uses().back());
    return out;
  }

  // A lifting expr, applied (in `leaves`) just before the source expr being replayed.
  void record(Expr* lift_expr) {
    if (root_side_.empty()) return;
    lifts_[current_].push_back(lift_expr);
  }

  // A reuse of the target's own expr with the same inputs, or nullptr.
  Split* matchingSplit(IterDomain* in, const Split* s) const {
    for (Expr* use : in->uses()) {
      auto* u = use->dynCast<Split>();
      if (u != nullptr && u->in() == in && u->innerSplit() == s->innerSplit() &&
          sameFactor(u->factor(), s->factor())) {
        return u;
      }
    }
    return nullptr;
  }

  void replaySplit(Split* s) {
    IterDomain* in = image(s->in());
    if (in == nullptr) {
      replayed_[s] = nullptr;
      return;
    }
    // A matching reshape split is reused as is; any other split needs a loop-side input.
    Split* target = matchingSplit(in, s);
    if (target == nullptr) {
      in = lift(in);
      target = matchingSplit(in, s);
    }
    if (target == nullptr) {
      IterDomain::split(in, s->factor(), s->innerSplit());
      target = in->uses().back()->as<Split>();
    }
    bind(s->outer(), target->outer());
    bind(s->inner(), target->inner());
    replayed_[s] = target;
  }

  void replayMerge(Merge* m) {
    IterDomain* o = image(m->outer());
    IterDomain* i = image(m->inner());
    replayed_[m] = nullptr;
    if (o == nullptr || i == nullptr) {
      // Forward through an input the target lacks (a broadcast or reduction of the source).
      IterDomain* missing_src = o == nullptr ? m->outer() : m->inner();
      IterDomain* present = o == nullptr ? i : o;
      if (present != nullptr && (missing_src->isBroadcast() || missing_src->isReduction() ||
                                 squeezed_.count(missing_src) != 0)) {
        map_[m->out()] = present;
      }
      return;
    }
    bool compatible = o->isBroadcast() || i->isBroadcast() || o->isReduction() == i->isReduction();
    if (!compatible) return;
    Merge* target = matchingMerge(o, i);
    if (target == nullptr && (rootSide(o) || rootSide(i))) {
      o = lift(o);
      i = lift(i);
      target = matchingMerge(o, i);
    }
    if (target == nullptr) {
      IterDomain::merge(o, i);
      target = o->uses().back()->as<Merge>();
    }
    bind(m->out(), target->out());
    replayed_[m] = target;
  }

  static Merge* matchingMerge(IterDomain* o, IterDomain* i) {
    for (Expr* use : o->uses()) {
      auto* u = use->dynCast<Merge>();
      if (u != nullptr && u->outer() == o && u->inner() == i) return u;
    }
    return nullptr;
  }

  void bind(IterDomain* src, IterDomain* dst) {
    map_[src] = dst;
    copyParallel(src, dst, mode_);
  }

  std::unordered_map<IterDomain*, IterDomain*> map_;
  std::unordered_set<const IterDomain*> squeezed_;  ///< dims the target's squeeze removes
  ParallelCopy mode_;
  std::unordered_map<Expr*, Expr*> replayed_;  // source expr -> target expr (nullptr: skipped)
  const TensorView* target_ = nullptr;
  // Target IDs strictly inside its root->logical transforms, with the expr that consumes each.
  std::unordered_map<const IterDomain*, Expr*> root_side_;
  std::unordered_map<IterDomain*, IterDomain*> lifted_;
  // Lifting exprs per source expr being replayed (nullptr: made by loopImage).
  std::unordered_map<Expr*, std::vector<Expr*>> lifts_;
  Expr* current_ = nullptr;
};

std::optional<bool> contigFor(const IterDomain* id, std::optional<bool> c) {
  if (id->isBroadcast() || id->isReduction()) return std::nullopt;
  return c.value_or(true);
}

bool compatibleTypes(const IterDomain* a, const IterDomain* b) {
  return a->iterType() == b->iterType() || a->isSymbolic() || b->isSymbolic();
}

int64_t normalizePos(const TensorView* tv, int64_t pos) {
  int64_t n = tv->nDims();
  if (pos < 0) pos += n + 1;
  LOOM_CHECK(pos >= 0 && pos <= n, "position ", pos, " is out of range for ", tv->toString(),
             " with ", n, " loop IDs (expected 0..", n, " or negative)");
  return pos;
}

// Appends to `loop` the target IDs `rest` that the replayed prefix left over, replacing each by the
// target's own former loop IDs derived from it when all of those survive. A former loop ID
// survives when its history reaches only IDs of `rest` (none consumed by the replay); an ID of
// `rest` is replaced only when every former loop ID derived from it survives, so the new loop
// still covers each logical ID once. Left-over IDs come first, survivors in their former order.
void appendKeptSchedule(const TensorView* target, const std::vector<IterDomain*>& old_loop,
                        const std::vector<IterDomain*>& rest, std::vector<IterDomain*>& loop) {
  std::unordered_set<const IterDomain*> rest_set(rest.begin(), rest.end());
  const auto& logical = target->logical();
  struct History {
    bool ok = true;
    std::vector<IterDomain*> roots;  // members of `rest` on the way back
  };
  std::vector<History> hist(old_loop.size());
  for (size_t k = 0; k < old_loop.size(); ++k) {
    std::vector<IterDomain*> work{old_loop[k]};
    std::unordered_set<const IterDomain*> seen;
    while (!work.empty()) {
      IterDomain* id = work.back();
      work.pop_back();
      if (!seen.insert(id).second) continue;
      if (rest_set.count(id)) {
        hist[k].roots.push_back(id);
        continue;
      }
      Expr* def = id->definition();
      bool is_logical = std::find(logical.begin(), logical.end(), id) != logical.end();
      if (is_logical || def == nullptr || !(def->isA<Split>() || def->isA<Merge>())) {
        hist[k].ok = false;
        continue;
      }
      for (Val* in : def->inputs()) work.push_back(in->as<IterDomain>());
    }
  }
  std::unordered_set<const IterDomain*> raw;  // members of `rest` that stay as they are
  std::vector<bool> kept(old_loop.size(), false);
  bool changed = true;
  while (changed) {
    changed = false;
    for (size_t k = 0; k < old_loop.size(); ++k) {
      kept[k] = hist[k].ok && std::none_of(hist[k].roots.begin(), hist[k].roots.end(),
                                           [&](IterDomain* r) { return raw.count(r) != 0; });
    }
    for (IterDomain* r : rest) {
      if (raw.count(r)) continue;
      bool any = false;
      bool all = true;
      for (size_t k = 0; k < old_loop.size(); ++k) {
        if (std::find(hist[k].roots.begin(), hist[k].roots.end(), r) == hist[k].roots.end()) {
          continue;
        }
        any = true;
        all = all && kept[k];
      }
      if (!any || !all) {
        raw.insert(r);
        changed = true;
      }
    }
  }
  for (IterDomain* r : rest) {
    if (raw.count(r)) loop.push_back(r);
  }
  for (size_t k = 0; k < old_loop.size(); ++k) {
    if (kept[k] && std::find(loop.begin(), loop.end(), old_loop[k]) == loop.end()) {
      loop.push_back(old_loop[k]);
    }
  }
}

// Shared tail of replayPasC / replayCasP: replays `source`'s loop[0, pos) (and allocation) onto
// `target` through `map` (source ID -> target logical ID) and returns the target position.
int64_t replayPair(TensorView* target, const TensorView* source, int64_t pos,
                   std::unordered_map<IterDomain*, IterDomain*> map, ReplayOptions options,
                   const char* what) {
  LOOM_CHECK(target->computeAtPosition() == 0 && target->maxProducerPosition() == 0, what, " of ",
             target->toString(), ": it is already inlined (compute-at position ",
             target->computeAtPosition(), ", max producer position ",
             target->maxProducerPosition(), "); replay would change shared loops");
  pos = normalizePos(source, pos);
  // DID types are only meaningful with the mesh they index.
  if (options.parallel != ParallelCopy::None && source->hasDeviceMesh() &&
      !target->hasDeviceMesh()) {
    target->setDeviceMesh(source->deviceMesh());
  }
  const auto& src_start = source->domain()->maybeRoot();
  std::vector<IterDomain*> loop_targets(source->loop().begin(), source->loop().begin() + pos);
  std::vector<Expr*> loop_exprs = detail::exprsBetween(src_start, loop_targets);
  std::vector<Expr*> alloc_exprs;
  if (options.replay_allocation) {
    alloc_exprs = detail::exprsBetween(src_start, source->maybeAllocation());
  }
  const std::vector<IterDomain*> old_loop = target->loop();
  ReplayCore core(std::move(map), options.parallel, target);
  core.run(loop_exprs);
  core.run(alloc_exprs);

  std::vector<IterDomain*> prefix_images;
  for (IterDomain* s : loop_targets) prefix_images.push_back(core.loopImage(s));
  std::vector<IterDomain*> leaves = core.leaves(target->logical(), loop_exprs, true);
  std::vector<IterDomain*> loop;
  for (IterDomain* t : prefix_images) {
    if (t == nullptr || std::find(loop.begin(), loop.end(), t) != loop.end()) continue;
    if (std::find(leaves.begin(), leaves.end(), t) == leaves.end()) continue;
    loop.push_back(t);
  }
  auto target_pos = int64_t(loop.size());
  std::vector<IterDomain*> rest;
  for (IterDomain* t : leaves) {
    if (std::find(loop.begin(), loop.end(), t) == loop.end()) rest.push_back(t);
  }
  appendKeptSchedule(target, old_loop, rest, loop);
  target->domain()->setLoopDomain(std::move(loop));

  if (options.replay_allocation) {
    std::vector<IterDomain*> alloc_leaves = core.leaves(target->logical(), alloc_exprs, false);
    std::vector<IterDomain*> alloc;
    Contiguity contig;
    const auto& src_alloc = source->maybeAllocation();
    for (size_t k = 0; k < src_alloc.size(); ++k) {
      IterDomain* t = core.image(src_alloc[k]);
      if (t == nullptr || std::find(alloc.begin(), alloc.end(), t) != alloc.end()) continue;
      if (std::find(alloc_leaves.begin(), alloc_leaves.end(), t) == alloc_leaves.end()) continue;
      alloc.push_back(t);
      contig.push_back(contigFor(t, source->contiguity()[k]));
    }
    for (IterDomain* t : alloc_leaves) {
      if (std::find(alloc.begin(), alloc.end(), t) != alloc.end()) continue;
      alloc.push_back(t);
      contig.push_back(contigFor(t, true));
    }
    target->domain()->setAllocationDomain(std::move(alloc), std::move(contig));
  }
  return target_pos;
}

}  // namespace

void TransformReplay::selfReplay(const TensorDomain* from, TensorDomain* to) {
  FusionGuard guard(to->fusion());
  std::vector<IterDomain*> f = from->logical();
  std::vector<IterDomain*> t = to->logical();
  bool to_has_extra = false;
  if (f.size() > t.size()) {
    f = TensorDomain::noReductions(f);
  } else if (t.size() > f.size()) {
    t = TensorDomain::noReductions(t);
    to_has_extra = true;
  }
  LOOM_CHECK(f.size() == t.size(), "selfReplay: logical domains ", detail::idList(from->logical()),
             " and ", detail::idList(to->logical()),
             " do not match 1:1 (only extra reduction IDs on one side are allowed)");
  std::unordered_map<IterDomain*, IterDomain*> map;
  for (size_t i = 0; i < f.size(); ++i) {
    LOOM_CHECK(compatibleTypes(f[i], t[i]), "selfReplay: logical ID ", i, " has type ",
               iterTypeName(f[i]->iterType()), " (", f[i]->toString(), ") in the source but ",
               iterTypeName(t[i]->iterType()), " (", t[i]->toString(), ") in the target");
    map[f[i]] = t[i];
  }
  // The target's own reductions that have no counterpart go first in loop and allocation.
  std::vector<IterDomain*> extra;
  if (to_has_extra) {
    for (IterDomain* id : to->logical()) {
      if (id->isReduction()) extra.push_back(id);
    }
  }

  std::vector<IterDomain*> targets = from->loop();
  targets.insert(targets.end(), from->allocation().begin(), from->allocation().end());
  ReplayCore core(std::move(map), ParallelCopy::All);
  core.run(detail::exprsBetween(from->logical(), targets));

  std::vector<IterDomain*> loop = extra;
  for (IterDomain* id : from->loop()) {
    if (IterDomain* img = core.image(id)) loop.push_back(img);
  }
  to->setLoopDomain(std::move(loop));

  std::vector<IterDomain*> alloc = extra;
  Contiguity contig(extra.size(), std::nullopt);
  const auto& src_alloc = from->maybeAllocation();
  for (size_t k = 0; k < src_alloc.size(); ++k) {
    IterDomain* img = core.image(src_alloc[k]);
    if (img == nullptr) continue;
    alloc.push_back(img);
    contig.push_back(contigFor(img, from->contiguity()[k]));
  }
  to->setAllocationDomain(std::move(alloc), std::move(contig));
}

void TransformReplay::selfReplay(const TensorView* from, TensorView* to) {
  selfReplay(from->domain(), to->domain());
  if (from->hasDeviceMesh() && !to->hasDeviceMesh()) to->setDeviceMesh(from->deviceMesh());
}

int64_t TransformReplay::replayPasC(TensorView* producer, const TensorView* consumer,
                                    int64_t consumer_pos, ReplayOptions options) {
  FusionGuard guard(producer->fusion());
  auto map = ir::consumerToProducerMap(producer, consumer);
  return replayPair(producer, consumer, consumer_pos, std::move(map), options, "replayPasC");
}

int64_t TransformReplay::replayCasP(TensorView* consumer, const TensorView* producer,
                                    int64_t producer_pos, ReplayOptions options) {
  FusionGuard guard(consumer->fusion());
  // A reshape consumer's root IDs are mapped too: the replay reuses the reshape's own
  // root->logical transforms where the producer's schedule matches them and otherwise lifts the
  // transformed IDs into the loop side (see ReplayCore::lift).
  std::unordered_map<IterDomain*, IterDomain*> map;
  for (auto [p, c] : ir::pairwiseLogicalMap(producer, consumer)) map[p] = c;
  return replayPair(consumer, producer, producer_pos, std::move(map), options, "replayCasP");
}

}  // namespace loom::transform
