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
#include "loom/transform/logical_map.h"
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
  ReplayCore(std::unordered_map<IterDomain*, IterDomain*> map, ParallelCopy mode)
      : map_(std::move(map)), mode_(mode) {
    for (auto& [s, t] : map_) copyParallel(s, t, mode_);
  }

  void run(const std::vector<Expr*>& exprs) {
    for (Expr* e : exprs) {
      if (replayed_.count(e)) continue;
      if (auto* s = e->dynCast<Split>()) {
        replaySplit(s);
      } else {
        replayMerge(e->as<Merge>());
      }
    }
  }

  IterDomain* image(IterDomain* id) const {
    auto it = map_.find(id);
    return it == map_.end() ? nullptr : it->second;
  }

  /// Target IDs after applying the images of `source_exprs` to `start`, in order.
  std::vector<IterDomain*> leaves(std::vector<IterDomain*> start,
                                  const std::vector<Expr*>& source_exprs) const {
    std::unordered_set<Expr*> applied;
    for (Expr* se : source_exprs) {
      auto it = replayed_.find(se);
      if (it == replayed_.end() || it->second == nullptr || !applied.insert(it->second).second) {
        continue;
      }
      Expr* te = it->second;
      if (auto* s = te->dynCast<Split>()) {
        auto pos = std::find(start.begin(), start.end(), s->in());
        if (pos == start.end()) continue;
        *pos = s->outer();
        start.insert(pos + 1, s->inner());
      } else {
        auto* m = te->as<Merge>();
        auto po = std::find(start.begin(), start.end(), m->outer());
        auto pi = std::find(start.begin(), start.end(), m->inner());
        if (po == start.end() || pi == start.end()) continue;
        *po = m->out();
        start.erase(pi);
      }
    }
    return start;
  }

 private:
  void replaySplit(Split* s) {
    IterDomain* in = image(s->in());
    if (in == nullptr) {
      replayed_[s] = nullptr;
      return;
    }
    Split* target = nullptr;
    for (Expr* use : in->uses()) {
      auto* u = use->dynCast<Split>();
      if (u != nullptr && u->in() == in && u->innerSplit() == s->innerSplit() &&
          sameFactor(u->factor(), s->factor())) {
        target = u;
        break;
      }
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
      if (present != nullptr && (missing_src->isBroadcast() || missing_src->isReduction())) {
        map_[m->out()] = present;
      }
      return;
    }
    bool compatible = o->isBroadcast() || i->isBroadcast() || o->isReduction() == i->isReduction();
    if (!compatible) return;
    Merge* target = nullptr;
    for (Expr* use : o->uses()) {
      auto* u = use->dynCast<Merge>();
      if (u != nullptr && u->outer() == o && u->inner() == i) {
        target = u;
        break;
      }
    }
    if (target == nullptr) {
      IterDomain::merge(o, i);
      target = o->uses().back()->as<Merge>();
    }
    bind(m->out(), target->out());
    replayed_[m] = target;
  }

  void bind(IterDomain* src, IterDomain* dst) {
    map_[src] = dst;
    copyParallel(src, dst, mode_);
  }

  std::unordered_map<IterDomain*, IterDomain*> map_;
  ParallelCopy mode_;
  std::unordered_map<Expr*, Expr*> replayed_;  // source expr -> target expr (nullptr: skipped)
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
  ReplayCore core(std::move(map), options.parallel);
  core.run(loop_exprs);
  core.run(alloc_exprs);

  std::vector<IterDomain*> leaves = core.leaves(target->logical(), loop_exprs);
  std::vector<IterDomain*> loop;
  for (IterDomain* s : loop_targets) {
    IterDomain* t = core.image(s);
    if (t == nullptr || std::find(loop.begin(), loop.end(), t) != loop.end()) continue;
    if (std::find(leaves.begin(), leaves.end(), t) == leaves.end()) continue;
    loop.push_back(t);
  }
  auto target_pos = int64_t(loop.size());
  for (IterDomain* t : leaves) {
    if (std::find(loop.begin(), loop.end(), t) == loop.end()) loop.push_back(t);
  }
  target->domain()->setLoopDomain(std::move(loop));

  if (options.replay_allocation) {
    std::vector<IterDomain*> alloc_leaves = core.leaves(target->logical(), alloc_exprs);
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
  auto map = consumerToProducerMap(producer, consumer);
  return replayPair(producer, consumer, consumer_pos, std::move(map), options, "replayPasC");
}

int64_t TransformReplay::replayCasP(TensorView* consumer, const TensorView* producer,
                                    int64_t producer_pos, ReplayOptions options) {
  FusionGuard guard(consumer->fusion());
  // Root IDs that a reshape transforms are not in the consumer's logical domain; the consumer's
  // loop must derive from logical, so only IDs present there can receive producer transforms.
  const auto& logical = consumer->logical();
  std::unordered_map<IterDomain*, IterDomain*> map;
  for (auto [p, c] : pairwiseLogicalMap(producer, consumer)) {
    if (std::find(logical.begin(), logical.end(), c) != logical.end()) map[p] = c;
  }
  return replayPair(consumer, producer, producer_pos, std::move(map), options, "replayCasP");
}

}  // namespace loom::transform
