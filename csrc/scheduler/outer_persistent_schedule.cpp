// SPDX-License-Identifier: Apache-2.0
// scheduleOuterPersistent: the transform sequence of the outer-persistent scheduler.
//
//   persistent buffers recomputable from input data and column statistics are projected (one
//   copy of their pointwise chain per use), so the input caches are what persists;
//   reference (first reduction), loop reordered to memory order (utils::memoryOrder), then to
//   [iter..., red...], merged to [I, R]:
//     kept dim innermost:  I -> [BIDx, TIDx{bdimx}], R -> [BIDy, TIDy{bdimy}, pb (Unroll)]
//     reduced innermost:   I -> [BIDx],              R -> [BIDy, pb (Unroll), TIDx{bdimx}]
//   propagateTransforms(ref); parallelizeAllLike(ref); rFactor every reduction over pb;
//   column statistics (reduced positions broadcast) get the loop [column IDs..., broadcasts] and
//   are computed once per thread; held buffers are inlined at the column position too: a
//   register array of pb elements read by the reduction and again by the consumers after the
//   grid all-reduce (lowering: a grid broadcast, cooperative launch).
#include <algorithm>
#include <unordered_set>

#include "loom/ir/exprs.h"
#include "loom/ir/iter_domain.h"
#include "loom/scheduler/memory_order.h"
#include "loom/scheduler/normalization.h"
#include "loom/scheduler/outer_persistent.h"
#include "loom/scheduler/utils.h"
#include "loom/transform/cache.h"
#include "loom/transform/inlining.h"
#include "loom/transform/propagation.h"
#include "loom/transform/recompute.h"
#include "loom/transform/rfactor.h"
#include "loom/transform/schedule.h"

namespace loom::scheduler {

using namespace loom::ir;

namespace {

struct Schedule {
  Schedule(Fusion& f, const OuterPersistentParams& params) : fusion(f), p(params) {}
  Fusion& fusion;
  const OuterPersistentParams& p;
  TensorView* ref = nullptr;
  std::vector<size_t> reduced;
  size_t rank = 0;
  std::unordered_set<TensorView*> buffers;
  // Loop IDs left of it select the columns of a thread. Held buffers are inlined there too, not
  // into the BIDy/TIDy loops: those are the final reduction's loops, and a buffer sharing them
  // with a reader before the reduction and one after it would need one loop on both sides. The
  // BIDy/TIDy pieces are parallel, so the buffer is still a register array of the batch.
  int64_t column_pos = 0;
};

void prepareBuffers(Schedule& s) {
  const BufferPlan plan = planPersistentBuffers(s.fusion);
  s.buffers.insert(plan.held.begin(), plan.held.end());
  for (const BufferPlan::Projection& pr : plan.projected) {
    std::vector<Expr*> uses = pr.buffer->uses();
    for (size_t i = 1; i < uses.size(); ++i)
      transform::recomputeChain(pr.buffer, uses[i], pr.leaves);
  }
  s.ref = utils::reductionTvs(s.fusion).front();
  for (size_t i = 0; i < s.ref->logical().size(); ++i) {
    if (s.ref->logical()[i]->isReduction()) s.reduced.push_back(i);
  }
  s.rank = s.ref->logical().size();
}

// Input caches (the held copies); outputs read in the fusion are forked so their readers use
// registers and nothing reads back global memory the kernel writes.
void cacheInputsAndOutputs(Schedule& s) {
  for (Val* in : std::vector<Val*>(s.fusion.inputs())) {
    auto* tv = in->dynCast<TensorView>();
    if (tv == nullptr || tv->uses().empty() || utils::readFromGlobal(tv)) continue;
    TensorView* cache = transform::cacheAfter(tv);
    if (s.buffers.count(tv)) s.buffers.insert(cache);
  }
  for (Val* out : std::vector<Val*>(s.fusion.outputs())) {
    auto* tv = out->as<TensorView>();
    if (tv->isFusionInput() || tv->definition() == nullptr || tv->uses().empty()) continue;
    transform::cacheFork(tv);
    tv->setMemoryType(MemoryType::Local);
  }
}

void transformReference(Schedule& s, const std::vector<IterDomain*>& memory_order) {
  TensorView* ref = s.ref;
  const OuterPersistentParams& p = s.p;
  // Memory order first (utils::memoryOrder): each merged group then has its fastest dim
  // innermost, and TIDx runs along it.
  std::vector<int64_t> to_memory;
  for (IterDomain* id : memory_order) {
    const auto& loop = ref->loop();
    to_memory.push_back(int64_t(std::find(loop.begin(), loop.end(), id) - loop.begin()));
  }
  ref->reorder(to_memory);
  std::vector<int64_t> iter, red;
  for (int64_t i = 0; i < ref->nDims(); ++i)
    (ref->axis(i)->isReduction() ? red : iter).push_back(i);
  std::vector<int64_t> perm = iter;
  perm.insert(perm.end(), red.begin(), red.end());
  ref->reorder(perm);
  const int64_t n_iter = int64_t(iter.size());
  if (n_iter > 1) ref->flatten(0, n_iter - 1);
  if (red.size() > 1) ref->flatten(1, -1);
  // [I, R]
  if (p.inner_reduced) {
    ref->split(1, p.bdimx);             // [I, R/tx, tx]
    ref->split(1, p.persistent_batch);  // [I, g, pb, tx]
    transform::parallelize(ref, 0, ParallelType::BIDx);
    transform::parallelize(ref, 1, ParallelType::BIDy);
    transform::parallelize(ref, 3, ParallelType::TIDx);
    if (p.persistent_batch > 1) transform::parallelize(ref, 2, ParallelType::Unroll);
    s.column_pos = 1;
  } else {
    ref->split(0, p.bdimx);             // [I/tx, tx, R]
    ref->split(2, p.persistent_batch);  // [I/tx, tx, R/pb, pb]
    ref->split(2, p.bdimy);             // [I/tx, tx, g, ty, pb]
    transform::parallelize(ref, 0, ParallelType::BIDx);
    transform::parallelize(ref, 1, ParallelType::TIDx);
    transform::parallelize(ref, 2, ParallelType::BIDy);
    transform::parallelize(ref, 3, ParallelType::TIDy);
    if (p.persistent_batch > 1) transform::parallelize(ref, 4, ParallelType::Unroll);
    s.column_pos = 2;
  }
  transform::propagateTransforms(ref);
  transform::parallelizeAllLike(ref);
  for (TensorView* r : utils::reductionTvs(s.fusion)) {
    std::vector<int64_t> axes;
    for (int64_t i = 0; i < r->nDims(); ++i) {
      IterDomain* id = r->axis(i);
      if (id->isReduction() && !ir::isThreadOrBlockDim(id->parallelType())) axes.push_back(i);
    }
    if (axes.empty()) continue;
    if (auto* w = r->definition()->dynCast<WelfordOp>()) {
      transform::rFactor(r, axes, {w->outAvg(), w->outM2(), w->outN()});
    } else {
      transform::rFactor(r, axes);
    }
  }
}

// A column statistic: full rank, no reduction, broadcast at every reduced position (the
// broadcast mean, rstd and the math on them).
bool isColumnStatistic(const Schedule& s, const TensorView* tv) {
  bool stat =
      tv->logical().size() == s.rank && !tv->domain()->hasReduction() && tv->nDims() > s.column_pos;
  for (size_t r : s.reduced) stat = stat && tv->logical()[r]->isBroadcast();
  return stat;
}

// Column statistics are computed by every thread of the column: their loop keeps the column IDs
// and the broadcast IDs instead of the propagated pieces (which carry BIDy/TIDy: one block would
// compute them). Inlined only up to the column position; held buffers up to the hold position.
void placeAndInline(Schedule& s) {
  std::vector<TensorView*> inlined, stats, held;
  for (TensorView* tv : s.fusion.allTvs()) {
    if (tv->isFusionInput()) continue;
    if (isColumnStatistic(s, tv)) {
      std::vector<IterDomain*> loop(tv->loop().begin(), tv->loop().begin() + s.column_pos);
      for (size_t r : s.reduced) loop.push_back(tv->logical()[r]);
      tv->domain()->setLoopDomain(loop);
      (tv->uses().empty() ? inlined : stats).push_back(tv);
    } else if (s.buffers.count(tv)) {
      held.push_back(tv);
    } else {
      inlined.push_back(tv);
    }
  }
  const transform::InlineOptions options{};
  const transform::IdGraph permissive(s.fusion, transform::IdMappingMode::Permissive);
  transform::inlineMost(inlined, permissive, options);
  auto inlineUpTo = [&](const std::vector<TensorView*>& tvs, int64_t pos) {
    for (TensorView* tv : tvs) {
      int64_t at = std::min(pos, transform::maxInlinePosition(tv, permissive, options));
      transform::inlineAt(tv, at, permissive, /*best_effort=*/true, options);
    }
  };
  inlineUpTo(stats, s.column_pos);
  inlineUpTo(held, s.column_pos);
  transform::recomputeAcrossThreads(s.fusion, options);
}

}  // namespace

void scheduleOuterPersistent(Fusion& fusion, const OuterPersistentParams& p) {
  FusionGuard guard(&fusion);
  std::string why;
  LOOM_CHECK(outerPersistentCompileTimeCheck(fusion, &why),
             "outer persistent scheduler cannot schedule this fusion: ", why);
  LOOM_CHECK(
      p.bdimx >= 1 && p.bdimy >= 1 && p.persistent_batch >= 1 && (!p.inner_reduced || p.bdimy == 1),
      "outer persistent parameters must be positive (bdimy 1 when inner_reduced): ", p.toString());
  const std::vector<IterDomain*> memory_order =
      utils::memoryOrder(fusion, utils::reductionTvs(fusion).front());
  Schedule s(fusion, p);
  prepareBuffers(s);
  cacheInputsAndOutputs(s);
  transformReference(s, memory_order);
  placeAndInline(s);
}

}  // namespace loom::scheduler
