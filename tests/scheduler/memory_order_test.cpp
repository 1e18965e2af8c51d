// SPDX-License-Identifier: Apache-2.0
// The reduction scheduler decides inner against outer by memory order (utils::memoryOrder): a
// reduction over a dim that is innermost logically but outermost in the input's memory (a
// permute, a stride_order input, a reshape of one) is an outer reduction, and the reverse. Each
// schedule still computes the unscheduled fusion's numbers.
#include <gtest/gtest.h>

#include "loom/scheduler/memory_order.h"
#include "scheduler/scheduler_test_utils.h"

namespace loom::scheduler::testing {
namespace {

TensorView* input2d(std::vector<int64_t> stride_order = {}) {
  ops::TensorBuilder b;
  b.shape({-1, -1});
  if (!stride_order.empty()) b.strideOrder(std::move(stride_order));
  return b.build();
}

// sum(permute(x, [1, 0]), dim=1) of a row-major x[k, n]: k is the reduced dim, innermost
// logically and outermost in memory.
void permutedSum(ir::Fusion& f) {
  auto* x = input2d();
  f.addInput(x);
  f.addOutput(ops::sum(ops::permute(x, {1, 0}), {1}));
}

TEST(MemoryOrderTest, PermutedSumIsAnOuterReduction) {
  auto fusion = makeFusion(permutedSum);
  TensorView* red = utils::reductionTvs(*fusion).front();
  // Logically [n, r{k}]; in memory [r{k}, n].
  const std::vector<ir::IterDomain*> order = utils::memoryOrder(*fusion, red);
  ASSERT_EQ(order.size(), 2u);
  EXPECT_TRUE(order[0]->isReduction());
  EXPECT_EQ(order[1], red->logical()[0]);
  EXPECT_FALSE(isInnerReduction(red));

  // Few rows (k = 128): the vectorized outer schedule, along n, x's dense inner dim.
  auto s = scheduleAndCheck(permutedSum, {randomTensor({128, 4096}, 1)}, 128);
  const auto& p = reductionOf(s);
  EXPECT_FALSE(p.inner) << p.toString();
  EXPECT_EQ(p.vectorize, 4) << p.toString();
  // Before, logical order made it an inner reduction whose rows (x's columns) are strided:
  // scalar loads.
  auto many = scheduleAndCheck(permutedSum, {randomTensor({1000, 300}, 8)}, 1000);
  EXPECT_FALSE(reductionOf(many).inner) << reductionOf(many).toString();
}

// The plain forms keep their decisions: sum over the last dim of a row-major input is inner,
// over the first dim outer.
TEST(MemoryOrderTest, RowMajorKeepsLogicalDecision) {
  auto inner = scheduleAndCheck(sumFusion({1}), {randomTensor({64, 256}, 2)}, 256);
  EXPECT_TRUE(reductionOf(inner).inner);
  auto outer = scheduleAndCheck(sumFusion({0}), {randomTensor({256, 64}, 3)}, 256);
  EXPECT_FALSE(reductionOf(outer).inner);
}

// An input declared with stride_order [1, 0]: logical [n, k], k outermost in memory. The sum over
// its last logical dim is an outer reduction, over its first an inner one.
TEST(MemoryOrderTest, StrideOrderInputDecides) {
  auto last = [](ir::Fusion& f) {
    auto* x = input2d({1, 0});
    f.addInput(x);
    f.addOutput(ops::sum(x, {1}));
  };
  auto first = [](ir::Fusion& f) {
    auto* x = input2d({1, 0});
    f.addInput(x);
    f.addOutput(ops::sum(x, {0}));
  };
  const std::vector<int64_t> perm{1, 0};
  // x[n = 512, k = 200] laid out as [k, n].
  Tensor x = randomTensor({200, 512}, 4).permute(perm);
  auto s_last = scheduleAndCheck(last, {x}, 200);
  EXPECT_FALSE(reductionOf(s_last).inner) << reductionOf(s_last).toString();
  EXPECT_EQ(reductionOf(s_last).vectorize, 4);
  auto s_first = scheduleAndCheck(first, {x}, 512);
  EXPECT_TRUE(reductionOf(s_first).inner) << reductionOf(s_first).toString();
  EXPECT_EQ(reductionOf(s_first).vectorize, 4);
}

// Through a reshape that splits the fast dim: x[k, n] row-major viewed as [k, 4, n / 4],
// permuted to [4, n / 4, k] and summed over k: outer, and both kept dims in x's order.
TEST(MemoryOrderTest, ThroughReshapeSplit) {
  auto build = [](ir::Fusion& f) {
    auto* x = ops::TensorBuilder().shape({64, 128}).build();
    f.addInput(x);
    auto* y = ops::permute(ops::reshape(x, {64, 4, 32}), {1, 2, 0});
    f.addOutput(ops::sum(y, {2}));
  };
  auto fusion = makeFusion(build);
  TensorView* red = utils::reductionTvs(*fusion).front();
  const std::vector<ir::IterDomain*> order = utils::memoryOrder(*fusion, red);
  ASSERT_EQ(order.size(), 3u);
  EXPECT_TRUE(order[0]->isReduction());
  EXPECT_EQ(order[1], red->logical()[0]);
  EXPECT_EQ(order[2], red->logical()[1]);
  auto s = scheduleAndCheck(build, {randomTensor({64, 128}, 5)}, 64);
  EXPECT_FALSE(reductionOf(s).inner) << reductionOf(s).toString();
}

// Welford (var_mean) over a permuted input: outer, scalar columns (outer Welford).
TEST(MemoryOrderTest, PermutedVarMeanIsOuter) {
  auto build = [](ir::Fusion& f) {
    auto* x = input2d();
    f.addInput(x);
    auto vm = ops::varMean(ops::permute(x, {1, 0}), {1});
    f.addOutput(vm.var);
    f.addOutput(vm.mean);
  };
  auto s = scheduleAndCheck(build, {randomTensor({300, 128}, 6)}, 300);
  EXPECT_FALSE(reductionOf(s).inner) << reductionOf(s).toString();
}

// A 3-D partial sum laid out [blocks, m, n] and reduced over blocks after a permute to
// [m, n, blocks] (a matmul rFactor's partials): outer, vectorized along n.
TEST(MemoryOrderTest, PartialProductSumIsOuter) {
  auto build = [](ir::Fusion& f) {
    auto* p = ops::TensorBuilder().shape({-1, -1, -1}).build();
    f.addInput(p);
    f.addOutput(ops::sum(ops::permute(p, {1, 2, 0}), {-1}));
  };
  auto s = scheduleAndCheck(build, {randomTensor({4, 48, 64}, 7)}, 4);
  EXPECT_FALSE(reductionOf(s).inner) << reductionOf(s).toString();
  EXPECT_EQ(reductionOf(s).vectorize, 4);
}

// A row-major input: memory order is logical order.
TEST(MemoryOrderTest, RowMajorOrderIsLogical) {
  auto fusion = makeFusion([](ir::Fusion& f) {
    auto* x = input2d();
    f.addInput(x);
    f.addOutput(ops::sum(x, {1}));
  });
  TensorView* red = utils::reductionTvs(*fusion).front();
  EXPECT_EQ(utils::memoryOrder(*fusion, red), red->logical());
}

}  // namespace
}  // namespace loom::scheduler::testing
