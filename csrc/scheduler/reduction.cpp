// SPDX-License-Identifier: Apache-2.0
// The reduction scheduler: checks and heuristics for one reduction with pointwise ops around it;
// the schedules themselves are in reduction_schedule.cpp.
#include "loom/scheduler/reduction.h"

#include <algorithm>
#include <sstream>
#include <unordered_set>

#include "loom/ir/exprs.h"
#include "loom/ir/iter_domain.h"
#include "loom/scheduler/memory_order.h"
#include "loom/scheduler/utils.h"
#include "loom/support/error.h"
#include "loom/support/hash.h"
#include "loom/transform/id_graph.h"

namespace loom::scheduler {

using ir::IterDomain;
using ir::TensorView;


namespace {

// Every tensor that depends on `tvs` (themselves included).
std::unordered_set<const ir::Val*> downstreamOf(const std::vector<TensorView*>& tvs) {
  std::unordered_set<const ir::Val*> seen(tvs.begin(), tvs.end());
  std::vector<const ir::Val*> stack(tvs.begin(), tvs.end());
  while (!stack.empty()) {
    const ir::Val* v = stack.back();
    stack.pop_back();
    for (ir::Expr* use : v->uses()) {
      for (ir::Val* out : use->outputs()) {
        if (seen.insert(out).second) stack.push_back(out);
      }
    }
  }
  return seen;
}

class ReductionScheduler final : public Scheduler {
 public:
  SchedulerType type() const override { return SchedulerType::Reduction; }

  bool canScheduleCompileTime(const ir::Fusion& fusion, std::string* why) const override {
    auto reject = [&](const std::string& reason) {
      if (why != nullptr) *why = reason;
      return false;
    };
    if (!utils::isPlainUnscheduledFusion(fusion, why) || !utils::hasNoScan(fusion, why) ||
        !utils::hasNoSort(fusion, why) || !utils::hasNoScatterAdd(fusion, why)) {
      return false;
    }
    std::vector<ir::Expr*> reductions = utils::reductionExprs(fusion);
    if (reductions.empty()) return reject("the fusion has no reduction");
    if (reductions.size() > 1) {
      return reject(std::to_string(reductions.size()) +
                    " reductions; this scheduler handles exactly one");
    }
    std::vector<TensorView*> outs;
    for (ir::Val* v : reductions.front()->outputs()) outs.push_back(v->as<TensorView>());
    std::unordered_set<const ir::Val*> after = downstreamOf(outs);
    // A reduced dim iterated again after the reduction (x - mean(x)) needs the row twice: a
    // normalization (persistent) pattern. A keepdim broadcast alone is fine.
    transform::IdGraph graph(fusion, transform::IdMappingMode::Exact);
    std::vector<IterDomain*> reduced;
    for (IterDomain* id : outs.front()->logical()) {
      if (id->isReduction()) reduced.push_back(id);
    }
    std::vector<IterDomain*> kept;  // the dims the reduction's result has
    for (IterDomain* id : outs.front()->logical()) {
      if (!id->isReduction() && (!id->isBroadcast() || id->hasExpandedExtent())) {
        kept.push_back(id);
      }
    }
    for (TensorView* tv : fusion.allTvs()) {
      if (after.count(tv) == 0 || tv->definition() == reductions.front()) continue;
      for (IterDomain* id : tv->logical()) {
        if (id->isReduction() || (id->isBroadcast() && !id->hasExpandedExtent())) continue;
        for (IterDomain* r : reduced) {
          if (graph.areMapped(id, r)) {
            return reject("the reduced dim " + r->toString() + " of " + outs.front()->toString() +
                          " is iterated again after the reduction (" + tv->toString() +
                          "): a normalization pattern");
          }
        }
        // The result of a grid reduction exists only per column after every block has added
        // its part; an epilogue over dims the result does not have (y[14, 10, 21] from
        // max(x[14, 10, 1]) broadcast against another input) would read it in blocks and
        // threads that never held it.
        bool mapped = std::any_of(kept.begin(), kept.end(),
                                  [&](IterDomain* k) { return graph.areMapped(id, k); });
        if (!mapped) {
          return reject("the dim " + id->toString() + " of " + tv->toString() +
                        " after the reduction is not a dim of its result " +
                        outs.front()->toString() + "; that epilogue needs its own kernel");
        }
      }
    }
    for (ir::Val* out : fusion.outputs()) {
      if (after.count(out) == 0) {
        return reject("output " + out->toString() + " does not depend on the reduction " +
                      outs.front()->toString() + "; it needs its own (pointwise) kernel");
      }
    }
    return true;
  }

  bool canScheduleRunTime(const ir::Fusion&, SchedulerRuntimeInfo&, std::string*) const override {
    return true;  // every size has a schedule, empty reductions included
  }

  std::unique_ptr<HeuristicParams> computeHeuristics(const ir::Fusion& fusion,
                                                     SchedulerRuntimeInfo& info) const override {
    return reductionHeuristics(fusion, info);
  }

  void schedule(ir::Fusion& fusion, const HeuristicParams& params) const override {
    const auto* p = dynamic_cast<const ReductionParams*>(&params);
    LOOM_CHECK(p != nullptr, "the reduction scheduler got ", params.toString());
    scheduleReduction(fusion, *p);
  }
};

}  // namespace

std::unique_ptr<Scheduler> makeReductionScheduler() {
  return std::make_unique<ReductionScheduler>();
}

bool isInnerReduction(const TensorView* red) {
  LOOM_ASSERT(red->fusion() != nullptr, red->toString(), " is in no fusion");
  return utils::isInnerInMemory(*red->fusion(), red);
}

namespace {

// Outer reduction [R, I] (I innermost). Preferred form: vectorized columns, each thread keeping a
// vector of partial sums over an unrolled serial loop (several 16-byte loads in flight), the block
// reducing over TIDy, and enough column blocks for every SM; no grid reduction. Narrow outputs
// whose column blocks cannot fill the SMs keep the vectors and split the rows over blocks too
// (grid reduction over BIDy, one entrance per lane). Where the column blocks fill the SMs the
// split does not pay: sum over dim 0 of [16384, 4096] bf16 with 8 row groups took 59.7-61.3 us on
// the H200 against 49.1 us without (the eight per-lane block and grid reductions at the end of
// every block costing more than the split gains; f32 80.4 against 79.6 us; docs/performance.md).
// Welford (not vectorized) takes scalar columns, with a grid reduction when they are narrow.
void outerHeuristics(const ir::Fusion& fusion, SchedulerRuntimeInfo& info, TensorView* red,
                     const std::vector<IterDomain*>& iter_ids, int64_t r, int64_t i,
                     ReductionParams& params) {
  const DeviceInfo& dev = info.device();
  constexpr int64_t kUnroll = 4;
  constexpr int64_t kThreads = 512;
  // Rows a block reduces, at least, when the rows are split over blocks.
  constexpr int64_t kMinRowsPerGroup = 256;
  // Only the inputs get vector accesses (the result is written per lane after the block
  // reduction), so only they constrain the width.
  std::vector<TensorView*> aligned;
  for (TensorView* tv : utils::innerAlignedTensors(fusion, red, iter_ids)) {
    if (tv->isFusionInput()) aligned.push_back(tv);
  }
  // Per-lane partials of a vectorized column group are accumulated in the rFactor producer's
  // register buffer, which the lowering does for sums/max/min (ReductionOp) but not for Welford
  // triples: outer Welford reductions take scalar columns.
  const bool welford = red->definition()->isA<ir::WelfordOp>();
  int64_t v = welford ? 1 : utils::maxVectorWidth(fusion, info, red, iter_ids, aligned);
  int64_t itemsize = 1;
  for (TensorView* tv : aligned) itemsize = std::max<int64_t>(itemsize, int64_t(dataTypeSize(tv->dtype())));
  if (v > 1) {
    int64_t vec_columns = utils::ceilDiv(i, v);
    // Fewest vector columns per block while the grid stays within one block per SM, but at
    // least 64 contiguous bytes per row (two 32-byte sectors) and at most a warp's worth. One
    // block per SM rather than two: such a grid gets launch bounds (codegen::launchBounds), so
    // ptxas keeps all of a thread's loads in flight; on the H200 the f32 sum over dim 0 of
    // [16384, 4096] took 75.1 us as 128 blocks of 8 x 64 threads against 82.6 us as 256 blocks
    // of 4 x 128 (benchmarks/results/2026-12-03-h200-run7).
    int64_t min_tx = std::max<int64_t>(1, 64 / (v * itemsize));
    int64_t tx = std::min<int64_t>(32, std::max<int64_t>(1, utils::floorPow2(vec_columns)));
    while (tx > min_tx && utils::ceilDiv(vec_columns, tx / 2) <= dev.sm_count) tx /= 2;
    int64_t column_blocks = utils::ceilDiv(vec_columns, tx);
    // Narrow outputs over many rows: the column blocks cannot fill the SMs, so the rows are split
    // over blocks too (BIDy, combined by a grid reduction, one entrance per vector lane). The
    // split costs a block and a grid reduction per lane at the end of each block, which long
    // row groups amortize; scalar columns instead read 2- or 4-byte elements per thread (a
    // quarter to an eighth of a sector per load for bf16), which was what made sum over dim 0
    // of narrow bf16 rows 0.32-0.54x of torch.compile on the H200 (issue 29's sweep). The block
    // then takes every vector column it can (up to a warp: 512 contiguous bytes per row).
    const bool split_rows = column_blocks * 2 < dev.sm_count && r >= kMinRowsPerGroup * 4;
    if (split_rows) {
      // The power of two covering every vector column (masked lanes past the edge), at most 32.
      tx = 1;
      while (tx < vec_columns && tx < 32) tx *= 2;
      column_blocks = utils::ceilDiv(vec_columns, tx);
    }
    if (split_rows || column_blocks * 2 >= dev.sm_count || r < 64 * kUnroll) {
      int64_t ty = std::min(kThreads / tx, std::max<int64_t>(1, utils::floorPow2(r / kUnroll)));
      params.vectorize = v;
      params.bdimx = tx;
      params.bdimy = ty;
      params.grid_reduction = 1;
      // 128 bytes of loads per thread and unrolled group (eight 16-byte loads: 64 KB per
      // 512-thread block), narrower vectors keeping the bytes. At one block per SM, all in
      // flight (launch bounds), that covers the DRAM latency. (Where the sizes divide, ptxas
      // unrolls the whole constant-trip loop and keeps its own rolling window of about five
      // loads, whatever the unroll.)
      int64_t unroll = std::min<int64_t>(16, 2 * kUnroll * 16 / (v * itemsize));
      // Not more: with predicated loads ptxas keeps every load of the group live, so 128 bytes
      // per thread already take 64 registers (f32 [16383, 4096]: exactly two 512-thread blocks
      // per SM); 256 bytes took 128 (bf16), at the limit where a 512-thread block still launches.
      params.unroll = std::min(unroll, utils::floorPow2(utils::ceilDiv(r, ty)));
      if (split_rows) {
        // About one block per SM in all (a power of two of row groups), each row group at
        // least kMinRowsPerGroup rows long. Two blocks per SM cost more in partials and grid
        // reductions than they hid (H100 run 33, benchmarks/sweeps/h100-tune-2026-12-06.txt):
        // sum over dim 0 of [131072, 512] bf16 78.5 us in 2 x 64 blocks against 90.9 in 2 x
        // 132; [32768, 2048] bf16 74.5 in 8 x 16 against 78.7 in 8 x 33; [65536, 1024] fp32
        // 107.4 in 8 x 16 against 110.5 in 8 x 33.
        const int64_t per_sm = std::max<int64_t>(1, dev.sm_count / column_blocks);
        int64_t grid = std::min(
            {utils::floorPow2(per_sm), utils::floorPow2(r / kMinRowsPerGroup), dev.max_grid_yz});
        params.grid_reduction = std::max<int64_t>(1, grid);
        params.unroll = std::min(params.unroll, utils::floorPow2(std::max<int64_t>(
                                                    1, utils::ceilDiv(r, ty * grid))));
      }
      return;
    }
  }
  // Scalar columns: tx = power of two near I, TIDy over long columns (512 threads a block: scalar
  // loads need the threads to keep bytes in flight; sum over dim 0 of [1335, 50257] bf16 on the
  // H100 took 69.5 us in 128 x 4 blocks against 101.8 in 128 x 2, fp32 102.1 against 124.3,
  // run 33), grid reduction when the column blocks fill less than half the SMs.
  int64_t columns = i;
  int64_t bdimx = std::min<int64_t>(128, std::max<int64_t>(1, utils::floorPow2(columns)));
  if (bdimx < columns && bdimx < 32) bdimx = 32;
  int64_t bdimy = 1;
  if (bdimx < kThreads && r >= 64) {
    bdimy = std::min(std::max<int64_t>(1, kThreads / bdimx), utils::floorPow2(r / 8));
  }
  int64_t column_blocks = utils::ceilDiv(columns, bdimx);
  int64_t serial = utils::ceilDiv(r, bdimy);
  int64_t grid = 1;
  if (column_blocks * 2 < dev.sm_count && serial >= 64) {
    // Two blocks per SM.
    grid = std::min({utils::ceilDiv(2 * dev.sm_count, column_blocks),
                     utils::floorPow2(serial / 16), dev.max_grid_yz});
    grid = std::max<int64_t>(grid, 1);
  }
  params.vectorize = 1;
  params.bdimx = bdimx;
  params.bdimy = bdimy;
  params.grid_reduction = grid;
  params.unroll = std::min(kUnroll, utils::floorPow2(utils::ceilDiv(serial, grid)));
}

}  // namespace

std::unique_ptr<ReductionParams> reductionHeuristics(const ir::Fusion& fusion,
                                                     SchedulerRuntimeInfo& info) {
  std::vector<TensorView*> reds = utils::reductionTvs(fusion);
  LOOM_CHECK(reds.size() == 1, "reduction heuristics need exactly one reduction, got ",
             reds.size());
  TensorView* red = reds.front();
  const DeviceInfo& dev = info.device();
  auto params = std::make_unique<ReductionParams>();
  const transform::IdGraph exact(fusion, transform::IdMappingMode::Exact);
  params->inner = utils::isInnerInMemory(fusion, exact, red);

  // Both lists in memory order (utils::memoryOrder): the innermost of each is the dim the
  // vectors and TIDx run along.
  std::vector<IterDomain*> red_ids, iter_ids;
  utils::partitionIds(utils::memoryOrder(fusion, exact, red), red_ids, iter_ids);
  int64_t r = utils::product(info, red, red_ids);
  int64_t i = utils::product(info, red, iter_ids);
  if (r == 0 || i == 0) {
    // Nothing to reduce (the output is the init value) or nothing to compute: the smallest
    // block shape, no vectorization.
    params->bdimx = 32;
    return params;
  }

  if (params->inner) {
    const std::vector<TensorView*> row_tensors =
        utils::innerAlignedTensors(fusion, exact, red, red_ids);
    int64_t v = utils::maxVectorWidth(exact, info, red, red_ids, row_tensors);
    // Rows that do not start on a vector boundary: the 16-byte width, peeled (see
    // utils::kMinPeeledVectors), as the inner-persistent scheduler does.
    const int64_t aligned = v;
    if (const int64_t peeled = utils::maxPeeledVectorWidth(exact, info, red_ids, row_tensors);
        peeled > v && r >= utils::kMinPeeledVectors * peeled &&
        utils::peelableRow(fusion, red, nullptr)) {
      v = peeled;
    }
    // Keep at least a warp of vectors per row.
    while (v > 1 && r < v * dev.warp_size) v /= 2;
    params->peel = v > aligned;
    int64_t per_row = utils::ceilDiv(r, v);
    // About four serial steps per thread before the block reduction, 32..512 threads.
    int64_t bdimx = std::clamp<int64_t>(utils::floorPow2(utils::ceilDiv(per_row, 4)), 32, 512);
    // Short rows: several rows per block on TIDy, up to 128 threads per block.
    int64_t bdimy = 1;
    if (bdimx < 128 && i > 1) bdimy = std::min(128 / bdimx, utils::floorPow2(i));
    int64_t serial = utils::ceilDiv(per_row, bdimx);
    int64_t row_blocks = utils::ceilDiv(i, bdimy);
    // Few long rows: blocks cooperate on each row (grid reduction), rows on BIDy.
    int64_t grid = 1;
    if (row_blocks * 2 < dev.sm_count && serial >= 16 && row_blocks <= dev.max_grid_yz) {
      grid = std::min(utils::ceilDiv(dev.sm_count, row_blocks), utils::floorPow2(serial / 4));
      grid = std::max<int64_t>(grid, 1);
    }
    params->vectorize = v;
    params->bdimx = bdimx;
    params->bdimy = bdimy;
    params->grid_reduction = grid;
    // Several independent vector loads in flight per thread: unroll the serial steps (up to 4).
    params->unroll = std::min<int64_t>(4, utils::floorPow2(utils::ceilDiv(serial, grid)));
  } else {
    outerHeuristics(fusion, info, red, iter_ids, r, i, *params);
  }
  return params;
}

}  // namespace loom::scheduler
