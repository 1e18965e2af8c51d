// SPDX-License-Identifier: Apache-2.0
// The pointwise scheduler: checks, heuristics (vector width, block shape, unroll, broadcast break
// point) and the 1-D / 2-D schedules.
#include "loom/scheduler/pointwise.h"

#include <algorithm>
#include <sstream>

#include "loom/ir/iter_domain.h"
#include "loom/support/error.h"
#include "loom/support/hash.h"
#include "loom/scheduler/utils.h"
#include "loom/transform/cache.h"
#include "loom/transform/id_graph.h"
#include "loom/transform/inlining.h"
#include "loom/transform/propagation.h"
#include "loom/transform/recompute.h"
#include "loom/transform/schedule.h"

namespace loom::scheduler {

using ir::IterDomain;
using ir::ParallelType;
using ir::TensorView;


namespace {

// The reference's logical IDs without reductions: the dims the schedule flattens.
std::vector<IterDomain*> referenceDims(const TensorView* ref) {
  return ir::TensorDomain::noReductions(ref->logical());
}

// For each reference dim (non-broadcast), whether each tensor input holds it (exact graph).
// A valid 2-D break point b separates every input's missing dims: all in [0, b) or all in
// [b, rank). Returns the first b at which some input misses exactly [0, b) or [b, rank) (the
// bias and row-statistics patterns), or 0 when there is none.
int64_t findBreakPoint(const ir::Fusion& fusion, const TensorView* ref) {
  std::vector<IterDomain*> dims = referenceDims(ref);
  auto n = int64_t(dims.size());
  if (n < 2) return 0;
  transform::IdGraph graph(fusion, transform::IdMappingMode::Exact);
  std::vector<std::vector<bool>> missing;  // per tensor input, per ref dim
  for (ir::Val* in : fusion.inputs()) {
    auto* tv = in->dynCast<TensorView>();
    if (tv == nullptr) continue;
    std::vector<bool> miss(size_t(n), false);
    bool any = false;
    for (int64_t d = 0; d < n; ++d) {
      if (dims[size_t(d)]->isBroadcast()) continue;
      bool held = false;
      for (IterDomain* id : tv->logical()) {
        if (!id->isBroadcast() && graph.areMapped(id, dims[size_t(d)])) held = true;
      }
      miss[size_t(d)] = !held;
      any = any || !held;
    }
    if (any) missing.push_back(miss);
  }
  if (missing.empty()) return 0;
  for (int64_t b = 1; b < n; ++b) {
    bool valid = true;
    bool exact = false;
    for (const auto& miss : missing) {
      bool outer = false, inner = false, all_outer = true, all_inner = true;
      for (int64_t d = 0; d < n; ++d) {
        bool m = miss[size_t(d)];
        bool skip = dims[size_t(d)]->isBroadcast();
        if (d < b) {
          outer = outer || m;
          all_outer = all_outer && (m || skip);
        } else {
          inner = inner || m;
          all_inner = all_inner && (m || skip);
        }
      }
      if (outer && inner) valid = false;
      if ((outer && all_outer) || (inner && all_inner)) exact = true;
    }
    if (valid && exact) return b;
  }
  return 0;
}

std::vector<IterDomain*> innerDims(const TensorView* ref, int64_t break_point) {
  std::vector<IterDomain*> dims = referenceDims(ref);
  return {dims.begin() + break_point, dims.end()};
}

class PointwiseScheduler final : public Scheduler {
 public:
  SchedulerType type() const override { return SchedulerType::Pointwise; }

  bool canScheduleCompileTime(const ir::Fusion& fusion, std::string* why) const override {
    return utils::isPlainPointwiseFusion(fusion, why);
  }

  bool canScheduleRunTime(const ir::Fusion& fusion, SchedulerRuntimeInfo& info,
                          std::string* why) const override {
    // Every size has a schedule, 0 elements included; a transpose the transpose scheduler tiles
    // is left to it (here the transposed side would be read or written element by element,
    // a row apart).
    const Scheduler& transpose = schedulerFor(SchedulerType::Transpose);
    if (transpose.canScheduleCompileTime(fusion, nullptr) &&
        transpose.canScheduleRunTime(fusion, info, nullptr)) {
      if (why != nullptr) *why = "a transpose: the transpose scheduler tiles it";
      return false;
    }
    return true;
  }

  std::unique_ptr<HeuristicParams> computeHeuristics(const ir::Fusion& fusion,
                                                     SchedulerRuntimeInfo& info) const override {
    return pointwiseHeuristics(fusion, info);
  }

  void schedule(ir::Fusion& fusion, const HeuristicParams& params) const override {
    const auto* p = dynamic_cast<const PointwiseParams*>(&params);
    LOOM_CHECK(p != nullptr, "the pointwise scheduler got ", params.toString());
    schedulePointwise(fusion, *p);
  }
};

}  // namespace

std::unique_ptr<Scheduler> makePointwiseScheduler() {
  return std::make_unique<PointwiseScheduler>();
}

std::unique_ptr<PointwiseParams> pointwiseHeuristics(const ir::Fusion& fusion,
                                                     SchedulerRuntimeInfo& info) {
  auto params = std::make_unique<PointwiseParams>();
  TensorView* ref = utils::largestOutput(fusion);
  LOOM_CHECK(ref != nullptr, "pointwise heuristics need a tensor output");
  const DeviceInfo& dev = info.device();
  std::vector<IterDomain*> dims = referenceDims(ref);
  int64_t numel = utils::product(info, ref, dims);
  if (numel == 0 || dims.empty()) return params;  // nothing (or one element): the defaults

  // 2-D when inputs broadcast along an outer or inner block of dims and both halves are big
  // enough to fill a warp and a second row: the broadcast input is then indexed by one half only.
  int64_t break_point = findBreakPoint(fusion, ref);
  if (break_point > 0) {
    std::vector<IterDomain*> outer_ids(dims.begin(), dims.begin() + break_point);
    int64_t outer = utils::product(info, ref, outer_ids);
    int64_t inner = numel / outer;
    std::vector<IterDomain*> inner_ids = innerDims(ref, break_point);
    int64_t v = utils::maxVectorWidth(fusion, info, ref, inner_ids,
                                      utils::innerAlignedTensors(fusion, ref, inner_ids));
    int64_t bdimx = std::clamp<int64_t>(utils::floorPow2(utils::ceilDiv(inner, v)), 32, 128);
    // 256 threads per block when there are enough rows, so blocks are not tiny.
    int64_t bdimy = std::max<int64_t>(1, std::min(256 / bdimx, utils::floorPow2(outer)));
    int64_t x_blocks = utils::ceilDiv(inner, v * bdimx);
    // Unroll over rows (each thread then has `unroll` vector loads in flight) while the grid
    // keeps at least one full wave of resident blocks.
    int64_t wave = dev.sm_count * std::max<int64_t>(1, dev.max_threads_per_sm / (bdimx * bdimy));
    int64_t unroll = 1;
    while (unroll < 4 && utils::ceilDiv(outer, bdimy * unroll * 2) * x_blocks >= wave) unroll *= 2;
    if (inner >= dev.warp_size && outer >= 2 &&
        utils::ceilDiv(outer, bdimy * unroll) <= dev.max_grid_yz && x_blocks <= dev.max_grid_x) {
      params->break_point = break_point;
      params->vectorize = v;
      params->bdimx = bdimx;
      params->bdimy = bdimy;
      params->unroll = unroll;
      return params;
    }
  }

  // 1-D: everything flattened, [BIDx, Unroll, TIDx, Vectorize].
  params->vectorize = utils::maxVectorWidth(fusion, info, ref, dims,
                                            utils::innerAlignedTensors(fusion, ref, dims));
  int64_t per_thread = utils::ceilDiv(numel, params->vectorize);
  // 256 threads only when there is plenty of work: several full waves at 256 threads per block.
  params->bdimx = per_thread >= 4 * dev.sm_count * dev.max_threads_per_sm ? 256 : 128;
  // Unroll while the grid still covers one full wave of resident blocks.
  int64_t wave = dev.sm_count * std::max<int64_t>(1, dev.max_threads_per_sm / params->bdimx);
  while (params->unroll < 4 &&
         utils::ceilDiv(per_thread, params->bdimx * params->unroll * 2) >= wave) {
    params->unroll *= 2;
  }
  return params;
}

void schedulePointwise(ir::Fusion& fusion, const PointwiseParams& params) {
  ir::FusionGuard guard(&fusion);
  TensorView* ref = utils::largestOutput(fusion);
  LOOM_CHECK(ref != nullptr, "the pointwise scheduler needs a tensor output");
  std::vector<IterDomain*> dims = referenceDims(ref);
  auto rank = int64_t(dims.size());
  LOOM_CHECK(params.break_point >= 0 && params.break_point < std::max<int64_t>(rank, 1),
             "pointwise break point ", params.break_point, " is out of range for ",
             ref->toString(), " of rank ", rank);
  LOOM_CHECK(ref->nDims() == rank, "the pointwise reference ", ref->toString(),
             " has reduction IDs");

  // Which tensors get vector accesses: decided on the unscheduled graph, like the heuristics.
  std::vector<TensorView*> aligned;
  if (params.vectorize > 1) {
    aligned = utils::innerAlignedTensors(fusion, ref, innerDims(ref, params.break_point));
  }
  std::vector<TensorView*> vectorized;
  for (TensorView* tv : aligned) {
    if (tv->isFusionInput()) {
      // Vector loads go into a register cache; the math reads the cache.
      if (!tv->uses().empty() && !utils::readFromGlobal(tv)) {
        vectorized.push_back(transform::cacheAfter(tv));
      }
    } else if (tv->definition() != nullptr && !tv->uses().empty()) {
      // An output also read in the fusion stays a register value for its readers; a forked copy
      // is the vector store (the readers never read back global memory the kernel writes).
      TensorView* fork = transform::cacheFork(tv);
      tv->setMemoryType(ir::MemoryType::Local);
      vectorized.push_back(fork);
    } else if (tv->definition() != nullptr) {
      // Vector stores come from a register cache holding the computed values.
      transform::cacheBefore(tv);
      vectorized.push_back(tv);
    }
  }
  // Every other output read in the fusion too: its readers may run in other threads (an [N, 1]
  // output read by an [N, 3] tensor is stored by one thread per row), and global memory this
  // kernel writes is never read back.
  utils::forkOutputsReadInFusion(fusion);

  if (rank == 0) {  // a 0-dim output: one element, nothing to split
    transform::inlineMost(fusion);
    return;
  }

  if (params.break_point == 0) {
    ref->flatten(0, -1);
    if (params.vectorize > 1) ref->split(0, params.vectorize);
    ref->split(0, params.bdimx);
    if (params.unroll > 1) ref->split(0, params.unroll);
    // [BIDx, (Unroll), TIDx, (Vectorize)]
    transform::parallelize(ref, 0, ParallelType::BIDx);
    int64_t tidx = 1;
    if (params.unroll > 1) {
      transform::parallelize(ref, 1, ParallelType::Unroll);
      tidx = 2;
    }
    transform::parallelize(ref, tidx, ParallelType::TIDx);
  } else {
    int64_t b = params.break_point;
    if (rank - b > 1) ref->flatten(b, rank - 1);
    if (b > 1) ref->flatten(0, b - 1);
    // [O, I] -> [O, I/v/tx, tx, v] -> [O/ty, ty, I/v/tx, tx, v] -> [O/ty, I/v/tx, ty, tx, v]
    // and with unroll [O/ty/u, I/v/tx, u, ty, tx, v].
    if (params.vectorize > 1) ref->split(1, params.vectorize);
    ref->split(1, params.bdimx);
    ref->split(0, params.bdimy);
    ref->reorder(std::unordered_map<int64_t, int64_t>{{1, 2}, {2, 1}});
    int64_t threads = 2;
    if (params.unroll > 1) {
      ref->split(0, params.unroll);  // [O/ty/u, u, I/v/tx, ty, tx, v]
      ref->reorder(std::unordered_map<int64_t, int64_t>{{1, 2}, {2, 1}});
      transform::parallelize(ref, 2, ParallelType::Unroll);
      threads = 3;
    }
    transform::parallelize(ref, 0, ParallelType::BIDy);
    transform::parallelize(ref, 1, ParallelType::BIDx);
    transform::parallelize(ref, threads, ParallelType::TIDy);
    transform::parallelize(ref, threads + 1, ParallelType::TIDx);
  }

  transform::propagateTransforms(ref);
  transform::parallelizeAllLike(ref);
  if (params.vectorize > 1) {
    // Only where the innermost loop ID is the reference's vector lane: a cache of an input with
    // dims the reference lacks (squeezed ones, of symbolic extent) has those innermost.
    const IterDomain* lane = ref->axis(-1);
    const transform::IdGraph exact(fusion, transform::IdMappingMode::Exact);
    for (TensorView* tv : vectorized) {
      if (tv->nDims() > 0 && exact.areMapped(tv->axis(-1), lane)) {
        transform::parallelize(tv, tv->nDims() - 1, ParallelType::Vectorize);
      }
    }
  }
  transform::inlineMost(fusion);
  if (params.unroll > 1) {
    // The input caches stop outside the Unroll loop: all `unroll` vector loads of a thread are
    // issued before the first store (a store could alias a later load, so the compiler would not
    // move the loads up itself). A cache without the unrolled rows (a bias broadcast along them)
    // shares only the block loops, so it is loaded once per thread, not once per unrolled row.
    int64_t unroll_pos = params.break_point == 0 ? 1 : 2;
    for (TensorView* tv : vectorized) {
      if (tv->definition() == nullptr || !tv->definition()->input(0)->isFusionInput()) continue;
      if (tv->nDims() > unroll_pos && tv->axis(unroll_pos)->parallelType() == ParallelType::Unroll) {
        transform::inlineAt(tv, unroll_pos, /*best_effort=*/true);
        continue;
      }
      int64_t block_loops = 0;
      while (block_loops < tv->nDims() && ir::isBlockDim(tv->axis(block_loops)->parallelType())) {
        ++block_loops;
      }
      if (block_loops < tv->computeAtPosition()) {
        transform::inlineAt(tv, block_loops, /*best_effort=*/true);
      }
    }
  }
  transform::recomputeAcrossThreads(fusion);
}

}  // namespace loom::scheduler
