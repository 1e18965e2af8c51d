// SPDX-License-Identifier: Apache-2.0
// Tests of the reduction scheduler: inner/outer heuristics on edge shapes, and that every
// schedule validates, verifies and computes the unscheduled fusion's numbers.
#include <gtest/gtest.h>

#include "scheduler/scheduler_test_utils.h"

namespace loom::scheduler::testing {
namespace {

using ir::ParallelType;

// The (final) reduction tensor of the scheduled fusion.
TensorView* reductionOfScheduled(const Scheduled& s) {
  auto reds = utils::reductionTvs(*s.fusion);
  EXPECT_EQ(reds.size(), 2u) << "expected the rFactor producer and the final reduction";
  return reds.back();
}

bool hasParallel(const TensorView* tv, ParallelType p) {
  for (ir::IterDomain* id : tv->loop()) {
    if (id->parallelType() == p) return true;
  }
  return false;
}

// Inner sum of moderate rows: vectorized, block reduction on TIDx, rows on BIDx.
TEST(ReductionTest, InnerSum) {
  auto s = scheduleAndCheck(sumFusion({1}), {randomTensor({6, 1000}, 1)}, 1000);
  const auto& p = reductionOf(s);
  EXPECT_TRUE(p.inner);
  EXPECT_EQ(p.vectorize, 4);
  EXPECT_EQ(p.bdimx, 32);  // floorPow2(250 vectors / 4 serial steps)
  EXPECT_EQ(p.grid_reduction, 1);
  TensorView* red = reductionOfScheduled(s);
  EXPECT_TRUE(hasParallel(red, ParallelType::TIDx));
  EXPECT_TRUE(hasParallel(red, ParallelType::BIDx));
}

// Very narrow rows: one warp per row, several rows per block on TIDy, no vectorization.
TEST(ReductionTest, NarrowRows) {
  auto s = scheduleAndCheck(sumFusion({1}), {randomTensor({1000, 3}, 1)}, 3);
  const auto& p = reductionOf(s);
  EXPECT_EQ(p.vectorize, 1);
  EXPECT_EQ(p.bdimx, 32);
  EXPECT_EQ(p.bdimy, 4);
  EXPECT_TRUE(hasParallel(reductionOfScheduled(s), ParallelType::TIDy));
}

// Few very wide rows: a grid reduction, rows on BIDy.
TEST(ReductionTest, WideRowsGridReduction) {
  auto s = scheduleAndCheck(sumFusion({1}), {randomTensor({2, 100000}, 1)}, 100000);
  const auto& p = reductionOf(s);
  EXPECT_EQ(p.bdimx, 512);
  EXPECT_EQ(p.grid_reduction, 8);
  TensorView* red = reductionOfScheduled(s);
  EXPECT_TRUE(hasParallel(red, ParallelType::BIDy));
  EXPECT_TRUE(hasParallel(red, ParallelType::BIDx));
}

// Prime row length: no aligned vectors, so the rows are peeled at the 16-byte width (997 f32:
// 249 vectors and a tail); a row of fewer than 16 vectors (61) stays scalar. All exact.
TEST(ReductionTest, PrimeRows) {
  auto s = scheduleAndCheck(sumFusion({1}), {randomTensor({5, 997}, 1)}, 997);
  EXPECT_EQ(reductionOf(s).vectorize, 4);
  EXPECT_TRUE(reductionOf(s).peel);
  auto narrow = scheduleAndCheck(sumFusion({1}), {randomTensor({5, 61}, 2)}, 61);
  EXPECT_EQ(reductionOf(narrow).vectorize, 1);
  EXPECT_FALSE(reductionOf(narrow).peel);
}

// Aligned rows keep their choice: no peel.
TEST(ReductionTest, AlignedRowsAreNotPeeled) {
  auto s = scheduleAndCheck(sumFusion({1}), {randomTensor({5, 1024}, 1)}, 1024);
  EXPECT_EQ(reductionOf(s).vectorize, 4);
  EXPECT_FALSE(reductionOf(s).peel);
}

// One element.
TEST(ReductionTest, OneElement) {
  auto s = scheduleAndCheck(sumFusion({1}), {randomTensor({1, 1}, 1)});
  EXPECT_EQ(reductionOf(s).vectorize, 1);
}

// An empty reduction (0 columns) gives the init value; a clear minimal choice.
TEST(ReductionTest, EmptyReduction) {
  auto s = scheduleAndCheck(sumFusion({1}), {randomTensor({4, 0}, 1)});
  const auto& p = reductionOf(s);
  EXPECT_EQ(p.vectorize, 1);
  EXPECT_EQ(p.bdimx, 32);
  EXPECT_EQ(p.grid_reduction, 1);
}

// No rows at all (0 x N) is scheduled too.
TEST(ReductionTest, NoRows) {
  auto s = scheduleAndCheck(sumFusion({1}), {randomTensor({0, 8}, 1)});
  EXPECT_EQ(reductionOf(s).bdimx, 32);
}

// A full reduction (every dim) counts as inner and has no row axis.
TEST(ReductionTest, FullReduction) {
  auto s = scheduleAndCheck(sumFusion({0, 1}), {randomTensor({30, 40}, 1)}, 1200);
  EXPECT_TRUE(reductionOf(s).inner);
}

// Outer sum, wide output: vector columns on TIDx/BIDx (4 per thread: 64 bytes per row), rows
// over TIDy and an unrolled serial loop; the rFactor producer keeps one partial per lane.
TEST(ReductionTest, OuterSumWide) {
  auto s = scheduleAndCheck(sumFusion({0}), {randomTensor({50, 1024}, 1)}, 50);
  const auto& p = reductionOf(s);
  EXPECT_FALSE(p.inner);
  EXPECT_EQ(p.vectorize, 4);
  EXPECT_EQ(p.bdimx, 4);  // 256 vector columns: the fewest per block at 64 bytes per row
  EXPECT_EQ(p.bdimy, 8);  // floorPow2(50 / 4)
  EXPECT_EQ(p.unroll, 4);
  EXPECT_EQ(p.grid_reduction, 1);
  auto reds = utils::reductionTvs(*s.fusion);
  ASSERT_EQ(reds.size(), 2u);
  EXPECT_TRUE(hasParallel(reds[0], ParallelType::Unroll));
  EXPECT_TRUE(hasParallel(reds[1], ParallelType::TIDy));
  // The final reduction runs its lanes outside the block reduction: [BIDx, TIDx, v, TIDy].
  EXPECT_EQ(reds[1]->axis(-1)->parallelType(), ParallelType::TIDy);
  EXPECT_FALSE(reds[1]->axis(2)->isReduction());
}

// Runtime info for a one-input fusion of [rows, cols], sizes only.
SchedulerRuntimeInfo sizesOnly(const ir::Fusion& f, int64_t rows, int64_t cols,
                               DeviceInfo device = {}) {
  eval::ExpressionEvaluator ee;
  auto* tv = f.inputs().front()->as<TensorView>();
  ee.bind(tv->logical()[0]->extent(), rows);
  ee.bind(tv->logical()[1]->extent(), cols);
  return SchedulerRuntimeInfo(f, std::move(ee), device);
}

BuildFn plainSum(std::vector<int64_t> dims, DataType dtype) {
  return [dims, dtype](ir::Fusion& f) {
    auto* x = ops::TensorBuilder().shape({-1, -1}).dtype(dtype).build();
    f.addInput(x);
    f.addOutput(ops::sum(x, dims));
  };
}

// The benchmark's sum over dim 0 of [16384, 4096] f32: 4-wide vectors, 8 vector columns by 64
// rows per block (512 threads), 128 column blocks (one per SM, so the kernel gets launch bounds;
// 4 columns would make 256), unroll 8 (eight 16-byte loads in flight per thread), no grid.
TEST(ReductionTest, OuterSumBenchmarkF32) {
  auto f = makeFusion(plainSum({0}, DataType::Float32));
  SchedulerRuntimeInfo info = sizesOnly(*f, 16384, 4096);
  auto p = reductionHeuristics(*f, info);
  EXPECT_FALSE(p->inner);
  EXPECT_EQ(p->vectorize, 4);
  EXPECT_EQ(p->bdimx, 8);
  EXPECT_EQ(p->bdimy, 64);
  EXPECT_EQ(p->unroll, 8);
  EXPECT_EQ(p->grid_reduction, 1);
}

// The same in bf16: 8-wide (16-byte) vectors, 128 column blocks, unroll 8 (not more: 16 took 128
// registers with predicated loads, the most a 512-thread block can launch with).
TEST(ReductionTest, OuterSumBenchmarkBf16) {
  auto f = makeFusion(plainSum({0}, DataType::BFloat16));
  SchedulerRuntimeInfo info = sizesOnly(*f, 16384, 4096);
  auto p = reductionHeuristics(*f, info);
  EXPECT_EQ(p->vectorize, 8);
  EXPECT_EQ(p->bdimx, 4);
  EXPECT_EQ(p->bdimy, 128);
  EXPECT_EQ(p->unroll, 8);
  EXPECT_EQ(p->grid_reduction, 1);
}

// Column blocks follow the SM count: on a device with 8 SMs, 32 vector columns per block
// (a full warp) already give enough blocks.
TEST(ReductionTest, OuterSumFollowsSmCount) {
  auto f = makeFusion(plainSum({0}, DataType::Float32));
  DeviceInfo small;
  small.sm_count = 8;
  SchedulerRuntimeInfo info = sizesOnly(*f, 16384, 4096, small);
  auto p = reductionHeuristics(*f, info);
  EXPECT_EQ(p->vectorize, 4);
  EXPECT_EQ(p->bdimx, 32);
  EXPECT_EQ(p->bdimy, 16);
}

// The unroll keeps 128 bytes per thread in flight whatever the vector width (2-wide f32: 16
// steps), and never exceeds the serial steps a thread has (short columns).
TEST(ReductionTest, OuterUnrollFollowsVectorBytes) {
  auto f = makeFusion(plainSum({0}, DataType::Float32));
  SchedulerRuntimeInfo narrow_vec = sizesOnly(*f, 16384, 4098);  // 4098 = 2 * 2049: 2-wide
  auto p = reductionHeuristics(*f, narrow_vec);
  EXPECT_EQ(p->vectorize, 2);
  EXPECT_EQ(p->unroll, 16);
  EXPECT_EQ(p->grid_reduction, 1);
  SchedulerRuntimeInfo short_cols = sizesOnly(*f, 300, 4096);
  p = reductionHeuristics(*f, short_cols);
  EXPECT_EQ(p->vectorize, 4);
  EXPECT_EQ(p->bdimy, 64);   // floorPow2(300 / 4)
  EXPECT_EQ(p->unroll, 4);   // floorPow2(ceil(300 / 64))
}

// Outer edge shapes: one element, prime sizes (no vectors), a single long column (grid).
TEST(ReductionTest, OuterEdgeShapes) {
  auto one = scheduleAndCheck(sumFusion({0}), {randomTensor({1, 1}, 1)});
  EXPECT_EQ(reductionOf(one).vectorize, 1);
  EXPECT_EQ(reductionOf(one).unroll, 1);
  auto prime = scheduleAndCheck(sumFusion({0}), {randomTensor({97, 31}, 1)}, 97);
  EXPECT_EQ(reductionOf(prime).vectorize, 1);
  auto column = scheduleAndCheck(sumFusion({0}), {randomTensor({50000, 1}, 1)}, 50000);
  EXPECT_GT(reductionOf(column).grid_reduction, 1);
  EXPECT_EQ(reductionOf(column).vectorize, 1);
  auto empty = scheduleAndCheck(sumFusion({0}), {randomTensor({0, 8}, 1)});
  EXPECT_EQ(reductionOf(empty).bdimx, 32);
}

// Long inner rows: the serial steps of each thread are unrolled by 4 (vector loads in flight).
TEST(ReductionTest, InnerSerialUnrolled) {
  auto s = scheduleAndCheck(sumFusion({1}), {randomTensor({3, 8192}, 1)}, 8192);
  const auto& p = reductionOf(s);
  EXPECT_EQ(p.vectorize, 4);
  EXPECT_EQ(p.unroll, 4);
  auto reds = utils::reductionTvs(*s.fusion);
  ASSERT_EQ(reds.size(), 2u);
  EXPECT_TRUE(hasParallel(reds[0], ParallelType::Unroll));
}

// Outer sum, narrow output and long columns: TIDy and a grid reduction over BIDy (columns on
// BIDx).
TEST(ReductionTest, OuterSumNarrowLong) {
  auto s = scheduleAndCheck(sumFusion({0}), {randomTensor({4096, 24}, 1)}, 4096);
  const auto& p = reductionOf(s);
  EXPECT_FALSE(p.inner);
  // Vector columns, one block covering all six of them (8 lanes, 2 masked), the rows split over
  // blocks (BIDy) of 256 rows and more.
  EXPECT_EQ(p.vectorize, 4);
  EXPECT_EQ(p.bdimx, 8);
  EXPECT_EQ(p.bdimy, 64);
  EXPECT_EQ(p.grid_reduction, 16);
  TensorView* red = reductionOfScheduled(s);
  EXPECT_TRUE(hasParallel(red, ParallelType::TIDy));
  EXPECT_TRUE(hasParallel(red, ParallelType::BIDy));
}

// Narrow outer sums over many rows split the rows into about one block per SM in all (run 33 on
// the H100: two per SM cost more in partials and grid reductions than they hid).
TEST(ReductionTest, OuterSplitRowsOneBlockPerSm) {
  auto bf16 = makeFusion(plainSum({0}, DataType::BFloat16));
  SchedulerRuntimeInfo narrow = sizesOnly(*bf16, 131072, 512);  // 2 column blocks of 256
  auto p = reductionHeuristics(*bf16, narrow);
  EXPECT_EQ(p->vectorize, 8);
  EXPECT_EQ(p->bdimx, 32);
  EXPECT_EQ(p->grid_reduction, 64);
  SchedulerRuntimeInfo wider = sizesOnly(*bf16, 32768, 2048);  // 8 column blocks
  p = reductionHeuristics(*bf16, wider);
  EXPECT_EQ(p->grid_reduction, 16);
}

// Scalar columns (an odd width: no vectors) take 512-thread blocks.
TEST(ReductionTest, OuterScalarColumnsBlocksOf512) {
  auto f = makeFusion(plainSum({0}, DataType::BFloat16));
  SchedulerRuntimeInfo info = sizesOnly(*f, 1335, 50257);
  auto p = reductionHeuristics(*f, info);
  EXPECT_EQ(p->vectorize, 1);
  EXPECT_EQ(p->bdimx, 128);
  EXPECT_EQ(p->bdimy, 4);
}

// A non-contiguous (transposed) input is not vectorized.
TEST(ReductionTest, TransposedInputNoVectorization) {
  Tensor base = randomTensor({256, 8}, 1);
  std::vector<int64_t> perm{1, 0};
  auto s = scheduleAndCheck(sumFusion({1}), {base.permute(perm)}, 256);
  EXPECT_EQ(reductionOf(s).vectorize, 1);
}

// var_mean (Welford plus pointwise after it) schedules through the sibling rFactor.
TEST(ReductionTest, VarMean) {
  auto build = varMeanFusion(1);
  auto s = scheduleAndCheck(build, {randomTensor({8, 300}, 1)}, 300);
  EXPECT_EQ(s.params->type(), SchedulerType::Reduction);
}

// var_mean over the outer dim: an outer Welford with TIDy and the sibling rFactor.
TEST(ReductionTest, OuterVarMean) {
  auto build = varMeanFusion(0);
  auto s = scheduleAndCheck(build, {randomTensor({600, 10}, 1)}, 600);
  const auto& p = reductionOf(s);
  EXPECT_FALSE(p.inner);
  EXPECT_GT(p.bdimy, 1);
}

// keepdim sum schedules (the broadcast after the reduction follows the iteration dims).
TEST(ReductionTest, KeepdimSum) {
  auto build = [](ir::Fusion& f) {
    auto* x = ops::TensorBuilder().shape({-1, -1}).build();
    f.addInput(x);
    f.addOutput(ops::sum(x, {1}, /*keepdim=*/true));
  };
  auto s = scheduleAndCheck(build, {randomTensor({9, 130}, 1)}, 130);
  EXPECT_TRUE(reductionOf(s).inner);
}

// Pointwise before and after the reduction, with an input that joins after it.
TEST(ReductionTest, PointwiseAround) {
  auto build = [](ir::Fusion& f) {
    auto* x = ops::TensorBuilder().shape({-1, -1}).build();
    auto* b = ops::TensorBuilder().shape({-1}).build();
    f.addInput(x);
    f.addInput(b);
    auto* m = ops::max(ops::exp(x), {1});
    f.addOutput(ops::add(m, b));
  };
  auto s = scheduleAndCheck(build, {randomTensor({12, 200}, 1), randomTensor({12}, 2)}, 200);
  EXPECT_TRUE(reductionOf(s).inner);
}

// A 3-D reduction over the middle dim is an outer reduction (the innermost dim is kept).
TEST(ReductionTest, MiddleDimIsOuter) {
  auto build = [](ir::Fusion& f) {
    auto* x = ops::TensorBuilder().shape({-1, -1, -1}).build();
    f.addInput(x);
    f.addOutput(ops::sum(x, {1}));
  };
  auto s = scheduleAndCheck(build, {randomTensor({3, 70, 20}, 1)}, 70);
  EXPECT_FALSE(reductionOf(s).inner);
}

// The utils overloads taking a caller-built exact graph answer as the graph-building ones: the
// input holds the reduced inner ID (the output does not), and the widths agree.
TEST(ReductionTest, UtilsSharedExactGraph) {
  auto f = makeFusion(plainSum({1}, DataType::Float32));
  SchedulerRuntimeInfo info = sizesOnly(*f, 16384, 4096);
  TensorView* red = utils::reductionTvs(*f).front();
  std::vector<ir::IterDomain*> inner{red->logical()[1]};
  const transform::IdGraph exact(*f, transform::IdMappingMode::Exact);
  auto aligned = utils::innerAlignedTensors(*f, exact, red, inner);
  EXPECT_EQ(aligned, utils::innerAlignedTensors(*f, red, inner));
  ASSERT_EQ(aligned.size(), 1u);
  EXPECT_EQ(aligned.front(), f->inputs().front());
  EXPECT_EQ(utils::maxVectorWidth(exact, info, red, inner, aligned),
            utils::maxVectorWidth(*f, info, red, inner, aligned));
  EXPECT_EQ(utils::maxVectorWidth(exact, info, red, inner, {}), 1);
}

}  // namespace
}  // namespace loom::scheduler::testing
