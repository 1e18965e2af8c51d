// SPDX-License-Identifier: Apache-2.0
// Tests of the pointwise scheduler: heuristics on edge shapes and layouts, and that every
// schedule validates, verifies and computes the unscheduled fusion's numbers.
#include <gtest/gtest.h>

#include "scheduler/scheduler_test_utils.h"

namespace loom::scheduler::testing {
namespace {

using ir::ParallelType;

TensorView* out0(const Scheduled& s) { return s.fusion->outputs()[0]->as<TensorView>(); }

// A contiguous f32 add vectorizes 4 wide (16 bytes) across the flattened tensor, and the
// output is stored by a vectorized copy.
TEST(PointwiseTest, ContiguousAddVectorizes) {
  auto s = scheduleAndCheck(addFusion(), {randomTensor({8, 64}, 1), randomTensor({8, 64}, 2)});
  const auto& p = pointwiseOf(s);
  EXPECT_EQ(p.break_point, 0);
  EXPECT_EQ(p.vectorize, 4);
  EXPECT_EQ(p.bdimx, 128);
  TensorView* out = out0(s);
  EXPECT_EQ(out->axis(-1)->parallelType(), ParallelType::Vectorize);
  EXPECT_EQ(out->axis(0)->parallelType(), ParallelType::BIDx);
  // Inputs are read through vectorized register caches.
  for (ir::Val* in : s.fusion->inputs()) {
    ASSERT_EQ(in->uses().size(), 1u);
    auto* cache = in->uses()[0]->output(0)->as<TensorView>();
    EXPECT_EQ(cache->axis(-1)->parallelType(), ParallelType::Vectorize);
  }
}

// Half precision vectorizes 8 wide (still 16 bytes).
TEST(PointwiseTest, HalfVectorizesEight) {
  auto build = [](ir::Fusion& f) {
    auto* x = ops::TensorBuilder().shape({-1, -1}).dtype(DataType::Float16).build();
    auto* y = ops::TensorBuilder().shape({-1, -1}).dtype(DataType::Float16).build();
    f.addInput(x);
    f.addInput(y);
    f.addOutput(ops::cast(ops::add(x, y), DataType::Float16));
  };
  auto s = scheduleAndCheck(build, {randomTensor({4, 64}, 1, DataType::Float16),
                                    randomTensor({4, 64}, 2, DataType::Float16)});
  EXPECT_EQ(pointwiseOf(s).vectorize, 8);
}

// A Float32 output next to Float16 inputs limits the width to 4 (16 bytes of the widest).
TEST(PointwiseTest, WidestDtypeLimitsWidth) {
  auto s = scheduleAndCheck(addFusion(DataType::Float16),
                            {randomTensor({4, 64}, 1, DataType::Float16),
                             randomTensor({4, 64}, 2, DataType::Float16)});
  EXPECT_EQ(pointwiseOf(s).vectorize, 4);
}

// One element: no vectorization, no unroll, still a valid schedule.
TEST(PointwiseTest, OneElement) {
  auto s = scheduleAndCheck(addFusion(), {randomTensor({1, 1}, 1), randomTensor({1, 1}, 2)});
  const auto& p = pointwiseOf(s);
  EXPECT_EQ(p.vectorize, 1);
  EXPECT_EQ(p.unroll, 1);
}

// Prime sizes: the element count decides the width (7 * 13 = 91 is odd; 8 * 13 divides by 4).
TEST(PointwiseTest, PrimeSizes) {
  auto odd = scheduleAndCheck(addFusion(), {randomTensor({7, 13}, 1), randomTensor({7, 13}, 2)});
  EXPECT_EQ(pointwiseOf(odd).vectorize, 1);
  auto even = scheduleAndCheck(addFusion(), {randomTensor({8, 13}, 1), randomTensor({8, 13}, 2)});
  EXPECT_EQ(pointwiseOf(even).vectorize, 4);
  auto two = scheduleAndCheck(addFusion(), {randomTensor({2, 13}, 1), randomTensor({2, 13}, 2)});
  EXPECT_EQ(pointwiseOf(two).vectorize, 2);
}

// A 0-size tensor is pointwise with the default params, schedules, and evaluates to empty.
TEST(PointwiseTest, ZeroSize) {
  auto s = scheduleAndCheck(addFusion(), {randomTensor({0, 5}, 1), randomTensor({0, 5}, 2)});
  const auto& p = pointwiseOf(s);
  EXPECT_EQ(p, PointwiseParams());
}

// A transposed (non-contiguous) input argument turns vectorization off.
TEST(PointwiseTest, TransposedArgumentNoVectorization) {
  Tensor base = randomTensor({64, 8}, 1);
  std::vector<int64_t> perm{1, 0};
  Tensor transposed = base.permute(perm);  // [8, 64], innermost stride 8
  auto s = scheduleAndCheck(addFusion(), {transposed, randomTensor({8, 64}, 2)});
  EXPECT_EQ(pointwiseOf(s).vectorize, 1);
}

// A row stride that is not a multiple of the width limits it (row pitch 66 floats: 2 wide).
TEST(PointwiseTest, PaddedRowsLimitWidth) {
  Tensor padded = Tensor::emptyStrided({8, 64}, {66, 1}, DataType::Float32);
  fillRandom(padded, 3);
  auto build = [](ir::Fusion& f) {
    auto* x = ops::TensorBuilder().shape({-1, -1}).contiguity({false, true}).build();
    f.addInput(x);
    f.addOutput(ops::exp(x));
  };
  auto s = scheduleAndCheck(build, {padded});
  EXPECT_EQ(pointwiseOf(s).vectorize, 2);
}

// Compile-time non-contiguous innermost dim: no vectorization whatever the runtime strides.
TEST(PointwiseTest, NonContiguousInnerNoVectorization) {
  auto build = [](ir::Fusion& f) {
    auto* x = ops::TensorBuilder().shape({-1, -1}).contiguity({true, false}).build();
    f.addInput(x);
    f.addOutput(ops::exp(x));
  };
  auto s = scheduleAndCheck(build, {randomTensor({8, 64}, 1)});
  EXPECT_EQ(pointwiseOf(s).vectorize, 1);
}

// A data address aligned to 4 bytes only (offset 1 float) allows no f32 vectors.
TEST(PointwiseTest, MisalignedAddressNoVectorization) {
  Tensor big = randomTensor({8 * 64 + 1}, 1);
  Tensor shifted(big.storage(), DataType::Float32, {8, 64}, {64, 1}, 1);
  auto s = scheduleAndCheck(addFusion(), {shifted, randomTensor({8, 64}, 2)});
  EXPECT_EQ(pointwiseOf(s).vectorize, 1);
}

// A bias broadcast along the outer dim picks the 2-D form with the break point after dim 0.
TEST(PointwiseTest, OuterBroadcastIsTwoD) {
  auto s = scheduleAndCheck(biasAddFusion(), {randomTensor({16, 256}, 1), randomTensor({256}, 2)});
  const auto& p = pointwiseOf(s);
  EXPECT_EQ(p.break_point, 1);
  EXPECT_EQ(p.vectorize, 4);
  EXPECT_EQ(p.bdimx, 64);
  EXPECT_EQ(p.bdimy, 4);  // 256 threads per block
  TensorView* out = out0(s);
  EXPECT_EQ(out->axis(0)->parallelType(), ParallelType::BIDy);
  EXPECT_EQ(out->axis(1)->parallelType(), ParallelType::BIDx);
  EXPECT_EQ(out->axis(2)->parallelType(), ParallelType::TIDy);
  EXPECT_EQ(out->axis(3)->parallelType(), ParallelType::TIDx);
}

// Row statistics broadcast along the inner dim: 2-D, the input [N, 1]-like operand is indexed
// by the outer half only.
TEST(PointwiseTest, InnerBroadcastIsTwoD) {
  auto build = [](ir::Fusion& f) {
    auto* x = ops::TensorBuilder().shape({-1, -1, -1}).build();
    auto* rows = ops::TensorBuilder().shape({-1, -1}).build();
    f.addInput(x);
    f.addInput(rows);
    f.addOutput(ops::mul(x, ops::broadcast(rows, {false, false, true})));
  };
  auto s = scheduleAndCheck(build, {randomTensor({3, 4, 64}, 1), randomTensor({3, 4}, 2)});
  EXPECT_EQ(pointwiseOf(s).break_point, 2);
}

// Narrow inner extents (below a warp) stay 1-D even with a broadcast.
TEST(PointwiseTest, NarrowBroadcastStaysOneD) {
  auto s = scheduleAndCheck(biasAddFusion(), {randomTensor({64, 3}, 1), randomTensor({3}, 2)});
  EXPECT_EQ(pointwiseOf(s).break_point, 0);
}

// Runtime info for addFusion with both inputs of size [rows, cols], sizes only.
SchedulerRuntimeInfo sizesOnly(const ir::Fusion& f, int64_t rows, int64_t cols,
                               DeviceInfo device = {}) {
  eval::ExpressionEvaluator ee;
  for (ir::Val* in : f.inputs()) {
    auto* tv = in->as<TensorView>();
    ee.bind(tv->logical()[0]->extent(), rows);
    ee.bind(tv->logical()[1]->extent(), cols);
  }
  return SchedulerRuntimeInfo(f, std::move(ee), device);
}

// Large tensors unroll 4x and use 256 threads per block.
TEST(PointwiseTest, LargeTensorUnrolls) {
  auto f = makeFusion(addFusion());
  SchedulerRuntimeInfo info = sizesOnly(*f, 1 << 14, 1 << 14);
  auto p = pointwiseHeuristics(*f, info);
  EXPECT_EQ(p->vectorize, 4);
  EXPECT_EQ(p->bdimx, 256);
  EXPECT_EQ(p->unroll, 4);
}

// Unrolling stops when the grid would no longer fill one wave of the device's SMs.
TEST(PointwiseTest, UnrollFollowsSmCount) {
  auto f = makeFusion(addFusion());
  SchedulerRuntimeInfo h200 = sizesOnly(*f, 1024, 1024);
  auto p = pointwiseHeuristics(*f, h200);
  EXPECT_EQ(p->bdimx, 128);
  EXPECT_EQ(p->unroll, 1);  // 2048 blocks < 132 SMs x 16 blocks
  DeviceInfo small;
  small.sm_count = 8;
  SchedulerRuntimeInfo few = sizesOnly(*f, 1024, 1024, small);
  EXPECT_EQ(pointwiseHeuristics(*f, few)->unroll, 4);
}

// The benchmark's bias add over [16384, 4096] f32: 2-D, 128 x 2 threads of 4-wide vectors,
// unrolled 4x over rows (2048 x 8 blocks); the input cache stops outside the Unroll loop so the
// four loads of a thread are issued before any store.
TEST(PointwiseTest, BiasTwoDUnrollsRows) {
  auto f = makeFusion(biasAddFusion());
  eval::ExpressionEvaluator ee;
  ee.bind(f->inputs()[0]->as<TensorView>()->logical()[0]->extent(), int64_t(16384));
  ee.bind(f->inputs()[0]->as<TensorView>()->logical()[1]->extent(), int64_t(4096));
  ee.bind(f->inputs()[1]->as<TensorView>()->logical()[0]->extent(), int64_t(4096));
  SchedulerRuntimeInfo info(*f, std::move(ee), DeviceInfo{});
  auto p = pointwiseHeuristics(*f, info);
  EXPECT_EQ(p->break_point, 1);
  EXPECT_EQ(p->vectorize, 4);
  EXPECT_EQ(p->bdimx, 128);
  EXPECT_EQ(p->bdimy, 2);
  EXPECT_EQ(p->unroll, 4);
  schedulePointwise(*f, *p);
  TensorView* cache = f->inputs()[0]->as<TensorView>()->uses().front()->output(0)->as<TensorView>();
  EXPECT_EQ(cache->computeAtPosition(), 2);
  EXPECT_EQ(cache->axis(2)->parallelType(), ParallelType::Unroll);
  EXPECT_EQ(cache->axis(-1)->parallelType(), ParallelType::Vectorize);
}

// Mixed ops, several outputs of different ranks, a scalar input: still equal to the original.
TEST(PointwiseTest, MixedOutputs) {
  auto build = [](ir::Fusion& f) {
    auto* x = ops::TensorBuilder().shape({-1, -1}).build();
    auto* b = ops::TensorBuilder().shape({-1}).build();
    f.addInput(x);
    f.addInput(b);
    auto* y = ops::relu(ops::add(x, b));
    f.addOutput(y);
    f.addOutput(ops::exp(b));
    f.addOutput(ops::cast(ops::mul(y, 0.5), DataType::Float16));
  };
  auto s = scheduleAndCheck(build, {randomTensor({5, 40}, 1), randomTensor({40}, 2)});
  EXPECT_EQ(s.params->type(), SchedulerType::Pointwise);
}

// An input passed through as an output is not the reference; the computed output is.
TEST(PointwiseTest, PassthroughOutputNotReference) {
  auto build = [](ir::Fusion& f) {
    auto* x = ops::TensorBuilder().shape({-1, -1}).build();
    f.addInput(x);
    f.addOutput(x);
    f.addOutput(ops::neg(x));
  };
  auto s = scheduleAndCheck(build, {randomTensor({4, 32}, 1)});
  auto* computed = s.fusion->outputs()[1]->as<TensorView>();
  EXPECT_EQ(computed->axis(0)->parallelType(), ParallelType::BIDx);
  EXPECT_EQ(computed->axis(-1)->parallelType(), ParallelType::Vectorize);
  EXPECT_EQ(computed->definition()->input(0)->definition()->opName(), "neg");
}

// A 0-dim output (scalar-shaped tensors) schedules to nothing and evaluates.
TEST(PointwiseTest, ZeroDim) {
  auto build = [](ir::Fusion& f) {
    auto* x = ops::TensorBuilder().shape({}).build();
    f.addInput(x);
    f.addOutput(ops::neg(x));
  };
  auto s = scheduleAndCheck(build, {randomTensor({}, 1)});
  EXPECT_EQ(pointwiseOf(s).vectorize, 1);
}

}  // namespace
}  // namespace loom::scheduler::testing
