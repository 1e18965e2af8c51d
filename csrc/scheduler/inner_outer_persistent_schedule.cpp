// SPDX-License-Identifier: Apache-2.0
// scheduleInnerOuterPersistent: the transform sequence of the inner-outer-persistent scheduler.
//
//   projection and cast-after-broadcast as in the inner-persistent schedule (only the narrow
//   input rows persist);
//   reference (the first inner reduction), loop reordered to [iter..., red...]:
//     merge iters -> I, merge reds -> R
//     R -> split(vectorize) -> outer split(persistent_batch): [pb (Unroll), TIDx, vec]
//     I -> split(rows_per_block):                             [BIDx, S (serial rows)]
//   propagateTransforms(ref); parallelizeAllLike(ref): the outer reductions get
//     [BIDx(r), S(r), pb, TIDx, vec]
//   inner reductions rFactored over (pb, vec): a block reduction over TIDx per row;
//   outer reductions rFactored over S: the producer accumulates each thread's columns across
//     the block's rows in registers (the lowering's register accumulation of an rFactor producer
//     with iteration IDs inside its reduction loop), and the final reduction, reordered to
//     [pb, TIDx, vec, BIDx(r)], is a grid reduction whose last block writes the result;
//   input rows held at the row position (inside S), row statistics once per row, the
//   row-invariant weight cache once per block, everything else inlined.
#include <algorithm>
#include <unordered_set>

#include "loom/ir/exprs.h"
#include "loom/ir/iter_domain.h"
#include "loom/scheduler/inner_outer_persistent.h"
#include "loom/scheduler/normalization.h"
#include "loom/scheduler/utils.h"
#include "loom/transform/cache.h"
#include "loom/transform/id_graph.h"
#include "loom/transform/inlining.h"
#include "loom/transform/propagation.h"
#include "loom/transform/recompute.h"
#include "loom/transform/rfactor.h"
#include "loom/transform/schedule.h"

namespace loom::scheduler {

using namespace loom::ir;

namespace {

struct Schedule {
  Schedule(Fusion& f, const InnerOuterPersistentParams& params) : fusion(f), p(params) {}
  Fusion& fusion;
  const InnerOuterPersistentParams& p;
  TensorView* ref = nullptr;
  std::vector<size_t> reduced;  // reduced positions of ref's logical domain
  size_t row_rank = 0;
  std::unordered_set<TensorView*> buffers;        // held rows (their caches once cached)
  std::unordered_set<TensorView*> outer_results;  // the outer reductions (grid-reduced)
  std::unordered_set<TensorView*> vector_inputs, vector_outputs;
  std::vector<TensorView*> caches, vectorized;
  std::unordered_set<TensorView*> row_invariant;  // caches of inputs without a row dim
  int64_t row_pos = 0;                            // [BIDx, S]: loop IDs left of it select the row
};

std::vector<size_t> reducedLogicalPositions(const TensorView* tv) {
  std::vector<size_t> pos;
  for (size_t i = 0; i < tv->logical().size(); ++i) {
    if (tv->logical()[i]->isReduction()) pos.push_back(i);
  }
  return pos;
}

void prepare(Schedule& s) {
  InnerOuterReductions r = classifyInnerOuter(s.fusion, nullptr);
  s.ref = r.inner.front();
  const BufferPlan plan = planPersistentBuffers(s.fusion, s.ref);
  s.buffers.insert(plan.held.begin(), plan.held.end());
  projectPersistentBuffers(plan);
  castInputsAfterBroadcast(s.fusion);
  s.reduced = reducedLogicalPositions(s.ref);
  s.row_rank = s.ref->logical().size();
  // Vector accesses: inputs and whole-row outputs holding the innermost row ID. The outer
  // results are written by the grid reduction's last block, element by element.
  if (s.p.vectorize > 1) {
    std::vector<IterDomain*> row_ids;
    for (IterDomain* id : s.ref->logical()) {
      if (id->isReduction()) row_ids.push_back(id);
    }
    for (TensorView* tv : utils::innerAlignedTensors(s.fusion, s.ref, row_ids)) {
      if (tv->isFusionInput()) {
        s.vector_inputs.insert(tv);
      } else if (tv->isFusionOutput() && tv->definition() != nullptr &&
                 int64_t(s.row_rank) == tv->rank()) {
        s.vector_outputs.insert(tv);
      }
    }
  }
}

// Input caches (held rows, the weight); row outputs through a register copy so their stores are
// vectors; outputs read in the fusion forked (readers use registers).
void cacheInputsAndOutputs(Schedule& s) {
  for (Val* in : std::vector<Val*>(s.fusion.inputs())) {
    auto* tv = in->dynCast<TensorView>();
    if (tv == nullptr || tv->uses().empty() || utils::readFromGlobal(tv)) continue;
    TensorView* cache = transform::cacheAfter(tv);
    s.caches.push_back(cache);
    if (s.vector_inputs.count(tv)) s.vectorized.push_back(cache);
    if (s.buffers.count(tv)) s.buffers.insert(cache);
    // No row dim, but the whole row (the weight): each thread holds its columns across rows.
    if (tv->rank() < int64_t(s.row_rank) && s.vector_inputs.count(tv)) {
      s.row_invariant.insert(cache);
    }
  }
  for (Val* out : std::vector<Val*>(s.fusion.outputs())) {
    auto* tv = out->as<TensorView>();
    if (tv->isFusionInput() || tv->definition() == nullptr) continue;
    if (!tv->uses().empty()) {
      TensorView* fork = transform::cacheFork(tv);
      tv->setMemoryType(MemoryType::Local);
      if (s.vector_outputs.count(tv)) s.vectorized.push_back(fork);
    } else if (s.vector_outputs.count(tv)) {
      transform::cacheBefore(tv);
      s.vectorized.push_back(tv);
    }
  }
}

// Positions of a scheduled reduction tensor's loop IDs that are reductions and not parallel
// (the pieces one thread walks).
std::vector<int64_t> serialReductionAxes(TensorView* tv) {
  std::vector<int64_t> axes;
  for (int64_t i = 0; i < tv->nDims(); ++i) {
    IterDomain* id = tv->axis(i);
    if (id->isReduction() && !id->isParallelized()) axes.push_back(i);
  }
  return axes;
}

void transformReference(Schedule& s) {
  TensorView* ref = s.ref;
  const InnerOuterPersistentParams& p = s.p;
  std::vector<int64_t> iter, red;
  for (int64_t i = 0; i < ref->nDims(); ++i)
    (ref->axis(i)->isReduction() ? red : iter).push_back(i);
  std::vector<int64_t> perm = iter;
  perm.insert(perm.end(), red.begin(), red.end());
  ref->reorder(perm);
  if (iter.size() > 1) ref->flatten(0, int64_t(iter.size()) - 1);
  if (red.size() > 1) ref->flatten(1, -1);
  // [I, R] -> [I/S, S, pb, R/v/pb, v]
  ref->split(1, p.vectorize);
  ref->split(1, p.persistent_batch, /*inner_split=*/false);
  ref->split(0, p.rows_per_block);
  s.row_pos = 2;
  transform::parallelize(ref, 0, ParallelType::BIDx);
  transform::parallelize(ref, 3, ParallelType::TIDx);
  if (p.persistent_batch > 1) transform::parallelize(ref, 2, ParallelType::Unroll);
  transform::propagateTransforms(ref);
  transform::parallelizeAllLike(ref);

  InnerOuterReductions r = classifyInnerOuter(s.fusion, nullptr);
  for (TensorView* red_tv : r.inner) transform::rFactor(red_tv, serialReductionAxes(red_tv));
  for (TensorView* red_tv : r.outer) {
    // [BIDx(r), S(r), pb, TIDx, v]: the partial reduces S (each thread's columns over the
    // block's rows); the final one reduces BIDx, moved innermost so its write sits inside the
    // column loops.
    std::vector<int64_t> serial = serialReductionAxes(red_tv);
    LOOM_ASSERT(serial.size() == 1, "inner-outer persistent: outer reduction ", red_tv->toString(),
                " should have one serial row piece after propagation");
    transform::rFactor(red_tv, serial);
    std::vector<int64_t> order;
    int64_t bid = -1;
    for (int64_t i = 0; i < red_tv->nDims(); ++i) {
      if (red_tv->axis(i)->isReduction()) {
        bid = i;
      } else {
        order.push_back(i);
      }
    }
    LOOM_ASSERT(bid >= 0, "inner-outer persistent: no grid piece in ", red_tv->toString());
    order.push_back(bid);
    red_tv->reorder(order);
    s.outer_results.insert(red_tv);
  }
}

void vectorizeAndPlace(Schedule& s) {
  if (s.p.vectorize > 1) {
    for (TensorView* tv : s.vectorized) {
      if (tv->nDims() == 0) continue;
      IterDomain* inner = tv->axis(-1);
      if (inner->extent()->isConstInt(s.p.vectorize) && !inner->isReduction()) {
        transform::parallelize(tv, tv->nDims() - 1, ParallelType::Vectorize);
      }
    }
  }
  if (s.p.shared_memory) {
    for (TensorView* tv : s.buffers) {
      if (!tv->isFusionInput() && !tv->isFusionOutput()) tv->setMemoryType(MemoryType::Shared);
    }
  }
}

// Held rows and row statistics stay at the row position (their readers sit before and after a
// block reduction); the weight cache is not inlined (loaded once per block, held across rows,
// unless rows are in shared memory); the rest is inlined as far as it goes.
void inlineEverything(Schedule& s, const std::vector<TensorView*>& elementwise,
                      std::vector<TensorView*> stats) {
  std::vector<TensorView*> inlined;
  for (TensorView* tv : elementwise) {
    if (s.row_invariant.count(tv) && !s.p.shared_memory) continue;
    (s.buffers.count(tv) ? stats : inlined).push_back(tv);
  }
  utils::inlinePersistentRows(s.fusion, inlined, stats, s.row_pos);
}

}  // namespace

void scheduleInnerOuterPersistent(Fusion& fusion, const InnerOuterPersistentParams& p) {
  FusionGuard guard(&fusion);
  std::string why;
  LOOM_CHECK(innerOuterPersistentCompileTimeCheck(fusion, &why),
             "inner-outer persistent scheduler cannot schedule this fusion: ", why);
  LOOM_CHECK(p.vectorize >= 1 && p.persistent_batch >= 1 && p.rows_per_block >= 1,
             "inner-outer persistent parameters must be positive: ", p.toString());
  Schedule s(fusion, p);
  prepare(s);
  cacheInputsAndOutputs(s);
  transformReference(s);
  auto [elementwise, stats] = placeRowStatistics(s.fusion, s.reduced, s.row_rank, s.row_pos);
  vectorizeAndPlace(s);
  inlineEverything(s, elementwise, std::move(stats));
}

}  // namespace loom::scheduler
