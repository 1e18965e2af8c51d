// SPDX-License-Identifier: Apache-2.0
// Scheduled fusions run by the executor (host backend in the emu suite, the GPU in its gpu twin):
// the schedulers' output must lower, compile and compute what the reference evaluator computes for
// the unscheduled fusion.
#include <gtest/gtest.h>

#include "backend_available.h"
#include "loom/exec/kernel_executor.h"
#include "scheduler/scheduler_test_utils.h"

namespace loom::scheduler::testing {
namespace {

// The text of the last kernel runScheduled generated.
std::string last_kernel_text;

// Runs the scheduled fusion of `s` on the suite's backend (outputs poisoned first) and compares
// with the reference evaluator on the unscheduled fusion.
void runAndCompare(Scheduled& s, const std::vector<eval::Argument>& args, int64_t reduction_size);

// Schedules build's fusion for `args`, runs it on the suite's backend (outputs poisoned first) and
// compares with the reference evaluator on the unscheduled fusion. Returns the params.
std::unique_ptr<HeuristicParams> runScheduled(const BuildFn& build,
                                              const std::vector<eval::Argument>& args,
                                              int64_t reduction_size = 1) {
  Scheduled s = scheduleAndCheck(build, args, reduction_size);
  runAndCompare(s, args, reduction_size);
  return std::move(s.params);
}

void runAndCompare(Scheduled& s, const std::vector<eval::Argument>& args, int64_t reduction_size) {
  exec::KernelExecutor ke;
  std::vector<Tensor> actual;
  try {
    ke.compile(*s.fusion, test::suiteBackend(),
               exec::ExecutorOptions{.poisonOutputs = true,
                                     .lowering = {.peelVectorRows = s.params->peelVectorRows()}});
    actual = ke.run(args);
  } catch (const std::exception& e) {
    ADD_FAILURE() << e.what() << "\n" << s.params->toString() << s.fusion->toString();
    return;
  }
  last_kernel_text = ke.generated().kernelText;
  std::vector<Tensor> expected = eval::evaluateFusion(*s.original, args);
  EXPECT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size() && i < expected.size(); ++i) {
    auto mismatch = eval::expectClose(
        actual[i], expected[i], eval::defaultTolerance(expected[i].dtype(), reduction_size),
        "output " + std::to_string(i));
    EXPECT_FALSE(mismatch.has_value()) << *mismatch << "\n" << s.params->toString()
                                       << s.fusion->toString();
  }
}

// Schedules build's fusion with `params` (not the heuristics') and runs it.
void runWithParams(const BuildFn& build, const std::vector<eval::Argument>& args,
                   const HeuristicParams& params, int64_t reduction_size = 1) {
  Scheduled s;
  s.original = makeFusion(build);
  s.fusion = s.original->clone();
  s.params = params.clone();
  if (const auto* r = dynamic_cast<const ReductionParams*>(&params)) {
    scheduleReduction(*s.fusion, *r);
  } else {
    schedulePointwise(*s.fusion, dynamic_cast<const PointwiseParams&>(params));
  }
  runAndCompare(s, args, reduction_size);
}

// The 1-D pointwise schedule (cached vectorized loads and stores, TIDx, BIDx) runs.
TEST(ScheduledExecTest, PointwiseVectorized) {
  auto params = runScheduled(addFusion(), {randomTensor({8, 100}, 1), randomTensor({8, 100}, 2)});
  EXPECT_EQ(params->type(), SchedulerType::Pointwise);
}

// The 1-D pointwise schedule without vectorization (odd size) runs.
TEST(ScheduledExecTest, PointwiseScalar) {
  runScheduled(addFusion(), {randomTensor({7, 13}, 1), randomTensor({7, 13}, 2)});
}

// The 2-D pointwise schedule of a bias add runs: the bias's loops, inlined across the output's
// row loops, are matched through the ID graph.
TEST(ScheduledExecTest, PointwiseBroadcastTwoD) {
  auto params =
      runScheduled(biasAddFusion(), {randomTensor({6, 96}, 1), randomTensor({96}, 2)});
  EXPECT_GT(dynamic_cast<const PointwiseParams&>(*params).break_point, 0);
}

// The 1-D pointwise schedule of a bias add (narrow rows) runs.
TEST(ScheduledExecTest, PointwiseBroadcastOneD) {
  auto params = runScheduled(biasAddFusion(), {randomTensor({64, 3}, 1), randomTensor({3}, 2)});
  EXPECT_EQ(dynamic_cast<const PointwiseParams&>(*params).break_point, 0);
}

// The inner block reduction (vectorized loads, serial rFactor, TIDx block reduce) runs.
TEST(ScheduledExecTest, InnerBlockReduction) {
  auto params = runScheduled(sumFusion({1}), {randomTensor({6, 1000}, 1)}, 1000);
  EXPECT_EQ(params->type(), SchedulerType::Reduction);
}

// Short rows: several rows per block on TIDy.
TEST(ScheduledExecTest, InnerReductionRowsPerBlock) {
  runScheduled(sumFusion({1}), {randomTensor({50, 3}, 1)}, 3);
}

// An outer reduction, each thread reducing its columns serially (37 columns: no vectors).
TEST(ScheduledExecTest, OuterSerialReduction) {
  auto params = runScheduled(sumFusion({0}), {randomTensor({50, 37}, 1)}, 50);
  const auto& p = dynamic_cast<const ReductionParams&>(*params);
  EXPECT_FALSE(p.inner);
  EXPECT_EQ(p.vectorize, 1);
}

// An outer reduction over TIDy and a grid (BIDx) for narrow outputs with long columns.
TEST(ScheduledExecTest, OuterGridReduction) {
  auto params = runScheduled(sumFusion({0}), {randomTensor({2048, 23}, 1)}, 2048);
  const auto& p = dynamic_cast<const ReductionParams&>(*params);
  EXPECT_EQ(p.vectorize, 1);
  EXPECT_GT(p.grid_reduction, 1);
}

// Vectorized outer reductions keep the vector (iteration) ID inside the unrolled serial reduction
// loop ([BIDx, TIDx, TIDy, S, U, v]): each thread loads whole vectors and keeps one partial per
// lane in registers; 50 rows and 40 columns divide neither the unroll nor the block.
TEST(ScheduledExecTest, OuterVectorizedReduction) {
  auto params = runScheduled(sumFusion({0}), {randomTensor({50, 40}, 1)}, 50);
  const auto& p = dynamic_cast<const ReductionParams&>(*params);
  EXPECT_EQ(p.vectorize, 4);
  EXPECT_EQ(p.unroll, 4);
  EXPECT_GT(p.bdimy, 1);
  EXPECT_NE(last_kernel_text.find("loom::loadVector"), std::string::npos) << last_kernel_text;
  EXPECT_NE(last_kernel_text.find("#pragma unroll"), std::string::npos) << last_kernel_text;
}

// bf16 outer reduction: 8-wide vector loads, f32 partials (the cast is inlined per lane).
TEST(ScheduledExecTest, OuterVectorizedReductionBf16) {
  auto build = [](ir::Fusion& f) {
    auto* x = ops::TensorBuilder().shape({-1, -1}).dtype(DataType::BFloat16).build();
    f.addInput(x);
    f.addOutput(ops::sum(x, {0}));
  };
  auto params = runScheduled(build, {randomTensor({37, 48}, 1, DataType::BFloat16)}, 37);
  EXPECT_EQ(dynamic_cast<const ReductionParams&>(*params).vectorize, 8);
  EXPECT_NE(last_kernel_text.find("loom::loadVector"), std::string::npos) << last_kernel_text;
}

// A vectorized outer reduction without TIDy (bdimy 1) and without unroll still has a final
// (extent-1) reduction after the rFactor and computes the same sums.
TEST(ScheduledExecTest, OuterVectorizedNoBlockReduction) {
  ReductionParams p;
  p.inner = false;
  p.vectorize = 4;
  p.bdimx = 8;
  p.bdimy = 1;
  p.unroll = 1;
  runWithParams(sumFusion({0}), {randomTensor({9, 36}, 1)}, p, 9);
}

// Outer reductions block-reduce over TIDy only; every block shape computes the same sums: narrow
// rows (blockDim.x 1, 4, 8, 32: the warp-shuffle path when the block is whole warps) and
// blocks that are not whole warps (the shared-memory path). Sizes divide nothing.
TEST(ScheduledExecTest, OuterBlockReduceOverYShapes) {
  const int64_t shapes[][2] = {{1, 64}, {4, 128}, {8, 16}, {32, 8}, {2, 3}};
  for (const auto& [tx, ty] : shapes) {
    SCOPED_TRACE("bdimx " + std::to_string(tx) + " bdimy " + std::to_string(ty));
    ReductionParams p;
    p.inner = false;
    p.vectorize = tx == 1 ? 1 : 2;
    p.bdimx = tx;
    p.bdimy = ty;
    p.unroll = 2;
    runWithParams(sumFusion({0}), {randomTensor({301, 70}, 3)}, p, 301);
    EXPECT_NE(last_kernel_text.find("loom::blockReduce<false, true, false>"), std::string::npos)
        << last_kernel_text;
  }
}

// The benchmark's shape class at a reduced size ([16384, 4096] -> [900, 1100] f32, sizes that
// divide neither the block nor the unroll): the heuristics' vectorized, unrolled schedule with
// its TIDy block reduction is exact, and the kernel issues one unrolled group of vector loads.
TEST(ScheduledExecTest, OuterSumBenchmarkClassF32) {
  auto params = runScheduled(sumFusion({0}), {randomTensor({900, 1100}, 4)}, 900);
  const auto& p = dynamic_cast<const ReductionParams&>(*params);
  EXPECT_EQ(p.vectorize, 4);
  EXPECT_EQ(p.unroll, 8);
  EXPECT_GT(p.bdimy, 1);
  EXPECT_NE(last_kernel_text.find("loom::loadVector"), std::string::npos) << last_kernel_text;
  EXPECT_NE(last_kernel_text.find("loom::blockReduce<false, true, false>"), std::string::npos)
      << last_kernel_text;
}

// The same in bf16 (f32 partials, bf16 result), 8-wide vectors, non-divisible sizes.
TEST(ScheduledExecTest, OuterSumBenchmarkClassBf16) {
  auto build = [](ir::Fusion& f) {
    auto* x = ops::TensorBuilder().shape({-1, -1}).dtype(DataType::BFloat16).build();
    f.addInput(x);
    f.addOutput(ops::sum(x, {0}));
  };
  auto params = runScheduled(build, {randomTensor({300, 2104}, 5, DataType::BFloat16)}, 300);
  const auto& p = dynamic_cast<const ReductionParams&>(*params);
  EXPECT_EQ(p.vectorize, 8);
  EXPECT_EQ(p.unroll, 4);  // floorPow2(ceil(300 / 64)): no more steps than the column has
  EXPECT_GT(p.bdimy, 1);
}

// A vectorized outer sum split over blocks (the heuristics do not pick it on their own: slower
// on the H200 than unsplit columns, see reduction.cpp): row groups on BIDy combined by a grid
// reduction, one entrance per vector lane; rows (3000) divisible by neither the block's 32 rows,
// the row groups nor the unroll, in f32 and bf16 (f32 partials).
TEST(ScheduledExecTest, OuterSumVectorizedGridOverBIDy) {
  for (DataType dt : {DataType::Float32, DataType::BFloat16}) {
    auto build = [dt](ir::Fusion& f) {
      auto* x = ops::TensorBuilder().shape({-1, -1}).dtype(dt).build();
      f.addInput(x);
      f.addOutput(ops::sum(x, {0}));
    };
    ReductionParams p;
    p.inner = false;
    p.vectorize = dt == DataType::Float32 ? 4 : 8;
    p.bdimx = 16;
    p.bdimy = 32;
    p.grid_reduction = 4;
    p.unroll = 4;
    runWithParams(build, {randomTensor({3000, 520}, 8, dt)}, p, 3000);
    EXPECT_NE(last_kernel_text.find("loom::gridReduce<false, true, false>"), std::string::npos)
        << last_kernel_text;
    EXPECT_NE(last_kernel_text.find("loom::loadVector"), std::string::npos) << last_kernel_text;
  }
}

// The heuristics' own plan for narrow outputs over many rows: vector columns and the rows split
// over blocks (grid reduction per lane), in bf16 (the sweep's narrow outer sums) and f32, with
// rows and columns that divide neither the block, the row groups nor the vector.
TEST(ScheduledExecTest, OuterSumNarrowSplitsRowsWithVectors) {
  for (DataType dt : {DataType::BFloat16, DataType::Float32}) {
    auto build = [dt](ir::Fusion& f) {
      auto* x = ops::TensorBuilder().shape({-1, -1}).dtype(dt).build();
      f.addInput(x);
      f.addOutput(ops::sum(x, {0}));
    };
    auto params = runScheduled(build, {randomTensor({5003, 200}, 9, dt)}, 5003);
    const auto& p = dynamic_cast<const ReductionParams&>(*params);
    EXPECT_GT(p.vectorize, 1) << p.toString();
    EXPECT_GT(p.grid_reduction, 1) << p.toString();
    EXPECT_NE(last_kernel_text.find("loom::gridReduce<false, true, false>"), std::string::npos)
        << last_kernel_text;
  }
}

// A wide outer var_mean (vector-width columns, which Welford does not vectorize): scalar
// columns, a block Welford over TIDy and a grid Welford over BIDy, then var from m2 (this fusion
// hit an internal lowering error when the heuristics vectorized it).
TEST(ScheduledExecTest, OuterVarMeanWideGridWelford) {
  auto params = runScheduled(varMeanFusion(0), {randomTensor({1200, 260}, 7)}, 1200);
  const auto& p = dynamic_cast<const ReductionParams&>(*params);
  EXPECT_FALSE(p.inner);
  EXPECT_EQ(p.vectorize, 1);
  EXPECT_GT(p.grid_reduction, 1);
  EXPECT_NE(last_kernel_text.find("loom::gridWelford<false, true, false>"), std::string::npos)
      << last_kernel_text;
}

// An outer var_mean: Welford states go through the TIDy warp-shuffle block reduction.
TEST(ScheduledExecTest, OuterVarMeanBlockWelford) {
  auto build = varMeanFusion(0);
  auto params = runScheduled(build, {randomTensor({403, 8}, 6)}, 403);
  const auto& p = dynamic_cast<const ReductionParams&>(*params);
  EXPECT_FALSE(p.inner);
  EXPECT_EQ(p.bdimx, 8);  // 8 columns: 4 rows per warp fold by shuffles
  EXPECT_GT(p.bdimy, 1);
}

// The 2-D pointwise schedule unrolled over rows: input caches outside the Unroll loop, several
// rows per thread, rows not divisible by the unrolled block.
TEST(ScheduledExecTest, PointwiseTwoDUnrolled) {
  PointwiseParams p;
  p.break_point = 1;
  p.vectorize = 4;
  p.bdimx = 32;
  p.bdimy = 2;
  p.unroll = 4;
  runWithParams(biasAddFusion(), {randomTensor({21, 128}, 1), randomTensor({128}, 2)}, p);
  EXPECT_NE(last_kernel_text.find("#pragma unroll"), std::string::npos) << last_kernel_text;
}

// The 1-D pointwise schedule unrolled with the input caches outside the Unroll loop.
TEST(ScheduledExecTest, PointwiseOneDUnrolled) {
  PointwiseParams p;
  p.vectorize = 4;
  p.bdimx = 32;
  p.unroll = 4;
  runWithParams(addFusion(), {randomTensor({10, 100}, 1), randomTensor({10, 100}, 2)}, p);
}

// var_mean: a block Welford through the sibling rFactor, pointwise var after it.
TEST(ScheduledExecTest, VarMeanBlockWelford) {
  auto build = varMeanFusion(1);
  runScheduled(build, {randomTensor({6, 300}, 1)}, 300);
}

// An inner grid reduction (few long rows).
TEST(ScheduledExecTest, InnerGridReduction) {
  auto params = runScheduled(sumFusion({1}), {randomTensor({2, 40000}, 1)}, 40000);
  EXPECT_GT(dynamic_cast<const ReductionParams&>(*params).grid_reduction, 1);
}

// Inner reductions over rows that do not start on a vector boundary are peeled at the 16-byte
// width and exact: a prime width (997, every row at another alignment), a Welford over wide bf16
// rows (a grid reduction, rows on BIDy), rows of a view at offset 1, and a full reduction of a
// 1-D view at offset 1.
TEST(ScheduledExecTest, InnerReductionPeeledRows) {
  auto prime = runScheduled(sumFusion({1}), {randomTensor({5, 997}, 1)}, 997);
  EXPECT_TRUE(dynamic_cast<const ReductionParams&>(*prime).peel) << prime->toString();
  auto welford = [](ir::Fusion& f) {
    auto* x = ops::TensorBuilder().shape({-1, -1}).dtype(DataType::BFloat16).build();
    f.addInput(x);
    auto vm = ops::varMean(x, {1});
    f.addOutput(vm.var);
    f.addOutput(vm.mean);
  };
  auto wide = runScheduled(welford, {randomTensor({3, 70001}, 2, DataType::BFloat16)}, 70001);
  const auto& w = dynamic_cast<const ReductionParams&>(*wide);
  EXPECT_TRUE(w.peel) << w.toString();
  EXPECT_EQ(w.vectorize, 8) << w.toString();
  EXPECT_GT(w.grid_reduction, 1) << w.toString();
  Tensor base = randomTensor({4 * 1024 + 1}, 3);
  auto view = runScheduled(
      sumFusion({1}), {Tensor(base.storage(), DataType::Float32, {4, 1024}, {1024, 1}, 1)}, 1024);
  EXPECT_TRUE(dynamic_cast<const ReductionParams&>(*view).peel) << view->toString();
  auto full = [](ir::Fusion& f) {
    auto* x = ops::TensorBuilder().shape({-1}).build();
    f.addInput(x);
    f.addOutput(ops::sum(x, {0}));
  };
  auto all = runScheduled(full, {Tensor(base.storage(), DataType::Float32, {4096}, {1}, 1)}, 4096);
  EXPECT_TRUE(dynamic_cast<const ReductionParams&>(*all).peel) << all->toString();
}

}  // namespace
}  // namespace loom::scheduler::testing
