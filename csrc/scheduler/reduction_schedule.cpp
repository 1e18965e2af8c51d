// SPDX-License-Identifier: Apache-2.0
// The inner and outer reduction schedules: shape the reduction tensor, propagate, rFactor the
// serial part, parallelize and inline.
#include <algorithm>
#include <unordered_map>

#include "loom/ir/exprs.h"
#include "loom/ir/iter_domain.h"
#include "loom/scheduler/memory_order.h"
#include "loom/scheduler/reduction.h"
#include "loom/scheduler/utils.h"
#include "loom/support/error.h"
#include "loom/transform/cache.h"
#include "loom/transform/id_graph.h"
#include "loom/transform/inlining.h"
#include "loom/transform/propagation.h"
#include "loom/transform/recompute.h"
#include "loom/transform/rfactor.h"
#include "loom/transform/schedule.h"

namespace loom::scheduler {

using ir::IterDomain;
using ir::ParallelType;
using ir::TensorView;

namespace {

// Position of `id` in tv's loop domain (assert: present).
int64_t loopPos(const TensorView* tv, const IterDomain* id) {
  const auto& loop = tv->loop();
  auto it = std::find(loop.begin(), loop.end(), id);
  LOOM_ASSERT(it != loop.end(), id->toString(), " is not in the loop domain of ", tv->toString());
  return int64_t(it - loop.begin());
}

// Reorders tv's loop domain to `order` (every loop ID exactly once).
void reorderTo(TensorView* tv, const std::vector<IterDomain*>& order) {
  LOOM_ASSERT(int64_t(order.size()) == tv->nDims(), "reorder of ", tv->toString());
  std::vector<int64_t> perm;
  for (IterDomain* id : order) perm.push_back(loopPos(tv, id));
  tv->reorder(perm);
}

// [iteration..., reduction...] merged into [I, R] (or [R] without iteration IDs); returns
// whether I exists.
bool groupIterationAndReduction(TensorView* red) {
  std::vector<IterDomain*> iters, reds;
  for (IterDomain* id : red->loop()) (id->isReduction() ? reds : iters).push_back(id);
  std::vector<IterDomain*> order = iters;
  order.insert(order.end(), reds.begin(), reds.end());
  reorderTo(red, order);
  auto ni = int64_t(iters.size());
  auto nr = int64_t(reds.size());
  if (nr > 1) red->flatten(ni, ni + nr - 1);
  if (ni > 1) red->flatten(0, ni - 1);
  return ni > 0;
}

// The fusion inputs that get vectorized loads, cached in registers.
std::vector<TensorView*> cacheVectorizedInputs(ir::Fusion& fusion, TensorView* red,
                                               const std::vector<IterDomain*>& inner_ids) {
  std::vector<TensorView*> caches;
  for (TensorView* tv : utils::innerAlignedTensors(fusion, red, inner_ids)) {
    if (tv->isFusionInput() && !tv->uses().empty() && !utils::readFromGlobal(tv)) {
      caches.push_back(transform::cacheAfter(tv));
    }
  }
  return caches;
}

std::vector<TensorView*> siblingsOf(TensorView* red) {
  std::vector<TensorView*> result;
  for (ir::Val* v : red->definition()->outputs()) result.push_back(v->as<TensorView>());
  return result;
}

TensorView* rFactorAny(TensorView* red, const std::vector<int64_t>& axes) {
  if (red->definition()->isA<ir::WelfordOp>()) {
    return transform::rFactor(red, axes, siblingsOf(red)).front();
  }
  return transform::rFactor(red, axes);
}

// Parallelizes like `ref` and vectorizes the input caches whose innermost loop ID is the vector
// lane, `ref`'s innermost loop ID (exact graph; a cache broadcast along the lane, e.g. a row
// statistic read by an outer reduction, keeps scalar loads), then inlines.
void finish(ir::Fusion& fusion, TensorView* ref, const std::vector<TensorView*>& caches,
            int64_t vectorize) {
  transform::parallelizeAllLike(ref);
  if (vectorize > 1) {
    const IterDomain* v_id = ref->axis(-1);
    const transform::IdGraph exact(fusion, transform::IdMappingMode::Exact);
    for (TensorView* c : caches) {
      if (c->nDims() == 0) continue;
      IterDomain* inner = c->axis(-1);
      if (inner->extent()->isConstInt(vectorize) && exact.areMapped(inner, v_id)) {
        transform::parallelize(c, c->nDims() - 1, ParallelType::Vectorize);
      }
    }
  }
  transform::inlineMost(fusion);
}

// Loop of the reduction tensor: [I/ty (BIDx | BIDy), ty (TIDy), g (BIDx), S, tx (TIDx), v];
// the rFactor producer reduces S and v per thread, the final reduction combines tx (block) and
// g (grid).
void scheduleInner(ir::Fusion& fusion, TensorView* red, const ReductionParams& p) {
  std::vector<IterDomain*> red_ids, iter_ids;
  utils::partitionIds(red->loop(), red_ids, iter_ids);
  std::vector<TensorView*> caches;
  if (p.vectorize > 1) caches = cacheVectorizedInputs(fusion, red, red_ids);

  bool has_iter = groupIterationAndReduction(red);
  int64_t r = has_iter ? 1 : 0;
  IterDomain* v_id = nullptr;
  if (p.vectorize > 1) {
    red->split(r, p.vectorize);
    v_id = red->axis(r + 1);
  }
  red->split(r, p.bdimx);
  IterDomain* tx = red->axis(r + 1);
  // The unroll split comes before the grid's outer split: splitting the inner part of an outer
  // split again would let a block's last unrolled group run into the next block's range (only
  // logical indices are predicated).
  IterDomain* unroll = nullptr;
  if (p.unroll > 1) {
    red->split(r, p.unroll);
    unroll = red->axis(r + 1);
  }
  IterDomain* g = nullptr;
  if (p.grid_reduction > 1) {
    red->split(r, p.grid_reduction, /*inner_split=*/false);
    g = red->axis(r);
  }
  IterDomain* serial = red->axis(g != nullptr ? r + 1 : r);
  IterDomain* rows = nullptr;
  IterDomain* ty = nullptr;
  if (has_iter) {
    if (p.bdimy > 1) {
      red->split(0, p.bdimy);
      ty = red->axis(1);
    }
    rows = red->axis(0);
  }
  transform::propagateTransforms(red);

  std::vector<int64_t> rf_axes{loopPos(red, serial)};
  int64_t serial_pos = rf_axes.front();
  int64_t unroll_pos = unroll ? loopPos(red, unroll) : -1;
  if (unroll_pos >= 0) rf_axes.push_back(unroll_pos);
  if (v_id != nullptr) rf_axes.push_back(loopPos(red, v_id));
  int64_t rows_pos = rows ? loopPos(red, rows) : -1;
  int64_t ty_pos = ty ? loopPos(red, ty) : -1;
  int64_t g_pos = g ? loopPos(red, g) : -1;
  int64_t tx_pos = loopPos(red, tx);
  TensorView* rf = rFactorAny(red, rf_axes);
  if (rows_pos >= 0) {
    transform::parallelize(rf, rows_pos, g_pos >= 0 ? ParallelType::BIDy : ParallelType::BIDx);
  }
  if (ty_pos >= 0) transform::parallelize(rf, ty_pos, ParallelType::TIDy);
  if (g_pos >= 0) transform::parallelize(rf, g_pos, ParallelType::BIDx);
  transform::parallelize(rf, tx_pos, ParallelType::TIDx);
  if (unroll_pos >= 0) transform::parallelize(rf, unroll_pos, ParallelType::Unroll);
  finish(fusion, rf, caches, p.vectorize);
  // One unrolled group's vector loads first ([U, v] register cache), then the sums.
  if (unroll_pos >= 0) {
    for (TensorView* c : caches) {
      transform::inlineAt(c, std::min(serial_pos + 1, c->nDims()), /*best_effort=*/true);
    }
  }
}

// Loop of the reduction tensor: [I/v/tx (BIDx), tx (TIDx), g (BIDy), ty (TIDy), S, U, v] with U
// the unrolled serial steps. The rFactor producer reduces S and U per thread, keeping one partial
// per vector lane (its v sits inside the serial loops: the lowering accumulates in its register
// buffer); the final reduction, reordered to [I/v/tx, tx, v, g, ty], combines ty (block) and g
// (grid, over blockIdx.y: one grid-reduction entrance per lane of the serial v loop). Without ty,
// g and v each thread reduces its columns alone.
void scheduleOuter(ir::Fusion& fusion, TensorView* red, const ReductionParams& p) {
  std::vector<IterDomain*> red_ids, iter_ids;
  utils::partitionIds(red->loop(), red_ids, iter_ids);
  std::vector<TensorView*> caches;
  if (p.vectorize > 1) caches = cacheVectorizedInputs(fusion, red, iter_ids);

  bool has_iter = groupIterationAndReduction(red);
  LOOM_ASSERT(has_iter, "an outer reduction has iteration IDs: ", red->toString());
  IterDomain* v_id = nullptr;
  if (p.vectorize > 1) {
    red->split(0, p.vectorize);
    v_id = red->axis(1);
  }
  red->split(0, p.bdimx);
  IterDomain* columns = red->axis(0);
  IterDomain* tx = red->axis(1);
  int64_t rpos = red->nDims() - 1;
  IterDomain* ty = nullptr;
  IterDomain* g = nullptr;
  IterDomain* unroll = nullptr;
  // A vectorized schedule always has the ty split (maybe of 1) so that the final reduction keeps
  // a reduction ID after the rFactor.
  if (p.bdimy > 1 || p.vectorize > 1) {
    red->split(rpos, p.bdimy);
    ty = red->axis(rpos + 1);
  }
  // Unroll before the grid's outer split (see scheduleInner).
  if (p.unroll > 1) {
    red->split(rpos, p.unroll);
    unroll = red->axis(rpos + 1);
  }
  if (p.grid_reduction > 1) {
    red->split(rpos, p.grid_reduction, /*inner_split=*/false);
    g = red->axis(rpos);
    ++rpos;
  }
  IterDomain* serial = red->axis(rpos);
  // Iteration IDs (columns, tx) left of every reduction ID: the final reduction's result write
  // sits inside their loops.
  std::vector<IterDomain*> order{columns, tx};
  if (g) order.push_back(g);
  if (ty) order.push_back(ty);
  order.push_back(serial);
  if (unroll) order.push_back(unroll);
  if (v_id) order.push_back(v_id);
  reorderTo(red, order);
  transform::propagateTransforms(red);

  int64_t columns_pos = loopPos(red, columns);
  int64_t g_pos = g ? loopPos(red, g) : -1;
  int64_t ty_pos = ty ? loopPos(red, ty) : -1;
  int64_t tx_pos = loopPos(red, tx);
  int64_t serial_pos = loopPos(red, serial);
  int64_t unroll_pos = unroll ? loopPos(red, unroll) : -1;
  TensorView* ref = red;
  if (ty != nullptr || g != nullptr) {
    std::vector<int64_t> rf_axes{serial_pos};
    if (unroll_pos >= 0) rf_axes.push_back(unroll_pos);
    ref = rFactorAny(red, rf_axes);
    if (v_id != nullptr) {
      // The final reduction: [columns, tx, (g), (ty), v] -> [columns, tx, v, (g), (ty)], so its
      // block reduction runs once per lane with the lane loop outside.
      // Welford siblings share the loop domain, so each gets the same order.
      std::vector<int64_t> perm{0, 1, red->nDims() - 1};
      for (int64_t k = 2; k + 1 < red->nDims(); ++k) perm.push_back(k);
      for (TensorView* sib : siblingsOf(red)) sib->reorder(perm);
    }
  }
  // Column blocks on BIDx (consecutive blocks read neighbouring columns of the same rows; no
  // 65535 limit), the grid reduction's row groups on BIDy.
  transform::parallelize(ref, columns_pos, ParallelType::BIDx);
  if (g_pos >= 0) transform::parallelize(ref, g_pos, ParallelType::BIDy);
  if (ty_pos >= 0 && p.bdimy > 1) transform::parallelize(ref, ty_pos, ParallelType::TIDy);
  if (unroll_pos >= 0) transform::parallelize(ref, unroll_pos, ParallelType::Unroll);
  transform::parallelize(ref, tx_pos, ParallelType::TIDx);
  finish(fusion, ref, caches, p.vectorize);
  // The vector loads of one unrolled group go first, into a [U, v] register cache, so they are
  // all in flight before the sums use them.
  for (TensorView* c : caches) {
    transform::inlineAt(c, std::min(serial_pos + 1, c->nDims()), /*best_effort=*/true);
  }
}

}  // namespace

void scheduleReduction(ir::Fusion& fusion, const ReductionParams& params) {
  ir::FusionGuard guard(&fusion);
  std::vector<TensorView*> reds = utils::reductionTvs(fusion);
  LOOM_CHECK(reds.size() == 1, "the reduction scheduler needs exactly one reduction, got ",
             reds.size());
  TensorView* red = reds.front();
  LOOM_CHECK(params.inner == isInnerReduction(red), "reduction params for an ",
             params.inner ? "inner" : "outer", " reduction applied to ", red->toString());
  LOOM_CHECK(params.vectorize >= 1 && params.bdimx >= 1 && params.bdimy >= 1 &&
                 params.grid_reduction >= 1,
             "invalid reduction params: ", params.toString());
  if (params.peel && params.vectorize > 1) {
    std::string why;
    LOOM_CHECK(params.inner, "reduction: peel=1 peels the rows of an inner reduction; ",
               red->toString(), " is an outer one (", params.toString(), ")");
    LOOM_CHECK(utils::peelableRow(fusion, red, &why), "reduction: peel=1 cannot peel the rows of ",
               red->toString(), ": ", why, " (", params.toString(), ")");
  }
  // Outputs read in the fusion (a prologue's result that the reduction also reads) keep a
  // register value for their readers; a forked copy is stored.
  utils::forkOutputsReadInFusion(fusion, red);
  // The loop domain in memory order: the merges below then keep each group's fastest dim
  // innermost, and the vectors and TIDx run along it.
  reorderTo(red, utils::memoryOrder(fusion, red));
  if (params.inner) {
    scheduleInner(fusion, red, params);
  } else {
    scheduleOuter(fusion, red, params);
  }
  transform::recomputeAcrossThreads(fusion);
}

}  // namespace loom::scheduler
