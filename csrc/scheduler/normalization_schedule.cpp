// SPDX-License-Identifier: Apache-2.0
// scheduleInnerPersistent: the transform sequence of the inner-persistent scheduler.
//
//   reference (first reduction), loop reordered to [DID..., iter..., red...]:
//     merge iters -> I, merge reds -> R
//     R -> split(vectorize) -> outer split(persistent_batch): [pb, TIDx, vec]
//     I -> split(rows_per_block):                             [BIDx, TIDy]
//   propagateTransforms(ref); parallelizeAllLike(ref)
//   rFactor every reduction over its serial pieces (pb, vec): each thread reduces its own
//   elements, the final reduction is a block reduction over TIDx
//   vectorize the input caches, persistent buffers to shared memory when asked, inlineMost.
//
// DID IDs are only moved to the front, never split or merged, so sharding survives.
#include <algorithm>
#include <unordered_set>

#include "loom/ir/exprs.h"
#include "loom/ir/iter_domain.h"
#include "loom/scheduler/normalization.h"
#include "loom/scheduler/utils.h"
#include "loom/transform/cache.h"
#include "loom/transform/inlining.h"
#include "loom/transform/propagation.h"
#include "loom/transform/rfactor.h"
#include "loom/transform/schedule.h"

namespace loom::scheduler {

using namespace loom::ir;

namespace {

// Loop permutation putting DID IDs first, then iteration (and broadcast) IDs, then reductions;
// returns the counts of each group.
struct Groups {
  int64_t did = 0, iter = 0, red = 0;
};

Groups reorderDidIterRed(TensorView* tv) {
  std::vector<int64_t> did, iter, red;
  for (int64_t i = 0; i < tv->nDims(); ++i) {
    IterDomain* id = tv->axis(i);
    (id->isDeviceDim() ? did : id->isReduction() ? red : iter).push_back(i);
  }
  std::vector<int64_t> perm = did;
  perm.insert(perm.end(), iter.begin(), iter.end());
  perm.insert(perm.end(), red.begin(), red.end());
  tv->reorder(perm);
  return {int64_t(did.size()), int64_t(iter.size()), int64_t(red.size())};
}

// Loop positions of a scheduled reduction tensor's serial reduction pieces (everything reduced
// except the TIDx piece).
std::vector<int64_t> serialReductionAxes(TensorView* tv) {
  std::vector<int64_t> axes;
  int64_t tidx = 0;
  for (int64_t i = 0; i < tv->nDims(); ++i) {
    IterDomain* id = tv->axis(i);
    if (!id->isReduction()) continue;
    if (id->parallelType() == ParallelType::TIDx) {
      ++tidx;
    } else {
      axes.push_back(i);
    }
  }
  LOOM_ASSERT(tidx == 1, "inner persistent: reduction ", tv->toString(),
              " should have one TIDx reduction ID after propagation, has ", tidx);
  return axes;
}

}  // namespace

void scheduleInnerPersistent(Fusion& fusion, const InnerPersistentParams& p) {
  FusionGuard guard(&fusion);
  std::string why;
  LOOM_CHECK(innerPersistentCompileTimeCheck(fusion, &why),
             "inner persistent scheduler cannot schedule this fusion: ", why);
  LOOM_CHECK(p.vectorize >= 1 && p.persistent_batch >= 1 && p.rows_per_block >= 1,
             "inner persistent parameters must be positive: ", p.toString());

  std::vector<TensorView*> buffers = persistentBuffers(fusion);
  std::unordered_set<TensorView*> buffer_set(buffers.begin(), buffers.end());

  // Inputs are loaded once into caches: these are the persistent copies of input rows.
  std::vector<TensorView*> caches;
  for (Val* in : std::vector<Val*>(fusion.inputs())) {
    auto* tv = in->dynCast<TensorView>();
    if (tv == nullptr || tv->uses().empty()) continue;
    TensorView* cache = transform::cacheAfter(tv);
    caches.push_back(cache);
    if (buffer_set.count(tv)) buffer_set.insert(cache);
  }

  TensorView* ref = utils::reductionTvs(fusion).front();
  Groups g = reorderDidIterRed(ref);
  if (g.iter > 1) ref->flatten(g.did, g.did + g.iter - 1);
  if (g.iter > 1) g.iter = 1;
  if (g.red > 1) ref->flatten(g.did + g.iter, -1);
  int64_t pos = g.did + g.iter;  // the merged reduction
  ref->split(pos, p.vectorize);                              // [R/v, v]
  ref->split(pos, p.persistent_batch, /*inner_split=*/false);  // [pb, R/v/pb, v]
  if (g.iter == 1) {
    int64_t i = g.did;
    if (p.rows_per_block > 1) {
      ref->split(i, p.rows_per_block);
      transform::parallelize(ref, i + 1, ParallelType::TIDy);
      ++pos;
    }
    transform::parallelize(ref, i, ParallelType::BIDx);
  }
  transform::parallelize(ref, pos + 1, ParallelType::TIDx);

  transform::propagateTransforms(ref);
  transform::parallelizeAllLike(ref);

  for (TensorView* red : utils::reductionTvs(fusion)) {
    std::vector<int64_t> axes = serialReductionAxes(red);
    if (auto* w = red->definition()->dynCast<WelfordOp>()) {
      transform::rFactor(red, axes, {w->outAvg(), w->outM2(), w->outN()});
    } else {
      transform::rFactor(red, axes);
    }
  }

  if (p.vectorize > 1) {
    for (TensorView* c : caches) {
      IterDomain* inner = c->axis(-1);
      if (inner->extent()->isConstInt(p.vectorize) && !inner->isReduction()) {
        transform::parallelize(c, c->nDims() - 1, ParallelType::Vectorize);
      }
    }
  }
  if (p.shared_memory) {
    for (TensorView* tv : buffer_set) {
      if (!tv->isFusionInput() && !tv->isFusionOutput()) tv->setMemoryType(MemoryType::Shared);
    }
  }
  transform::inlineMost(fusion, {.positional_only = true});  // the lowering shares loops by position
}

}  // namespace loom::scheduler
