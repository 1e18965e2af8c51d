// SPDX-License-Identifier: Apache-2.0
// Reference evaluator on scheduled and rewritten fusions (rFactor, cache copies, cleared
// reduction IDs, DID sharding): each must compute what the original fusion computes.
#include <memory>
#include <optional>

#include "eval/eval_test_utils.h"
#include "loom/eval/compare.h"
#include "loom/transform/cache.h"
#include "loom/transform/inlining.h"
#include "loom/transform/propagation.h"
#include "loom/transform/reduction_ids.h"
#include "loom/transform/rfactor.h"

namespace loom::eval::testing {
namespace {

using ir::ParallelType;

/// The original fusion is built in fusion_; copy() clones it into copy_, whose tensors (found
/// with c(tv)) a test then schedules and rewrites. same() evaluates both on random inputs.
class TransformedTest : public EvalTest {
 protected:
  void copy() { cloner_.emplace(fusion_.copyInto(copy_)); }
  TensorView* c(TensorView* tv) { return cloner_->lookup(tv); }

  /// Evaluates the original and the copy on the same random inputs of `shapes` (Float32) and
  /// expects every output to match within the tolerance of reductions over `reduction_size`.
  void same(const std::vector<std::vector<int64_t>>& shapes, int64_t reduction_size) {
    std::vector<Argument> args;
    uint64_t seed = 1;
    for (const auto& shape : shapes) {
      Tensor t = Tensor::empty(shape, DataType::Float32);
      fillRandom(t, seed++);
      args.emplace_back(std::move(t));
    }
    auto want = evaluateFusion(fusion_, args);
    auto got = evaluateFusion(copy_, args);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      auto tol = defaultTolerance(want[i].dtype(), reduction_size);
      auto msg = expectClose(got[i], want[i], tol, "output " + std::to_string(i));
      EXPECT_FALSE(msg.has_value()) << *msg;
    }
  }

  /// var_mean over the last axis of an input of `shape`, outputs (var, mean); sets welford_.
  void varMean(std::vector<int64_t> shape) {
    auto* x = input(std::move(shape));
    auto vm = ops::varMean(x, {int64_t(x->logical().size()) - 1}, /*correction=*/1.0);
    fusion_.addOutput(vm.var);
    fusion_.addOutput(vm.mean);
    welford_ = x->uses().front()->as<ir::WelfordOp>();
  }
  std::vector<TensorView*> copiedWelfordOutputs() {
    return {c(welford_->outAvg()), c(welford_->outM2()), c(welford_->outN())};
  }

  /// sum over axis 1 of a new input of `shape`, made an output.
  TensorView* rowSum(std::vector<int64_t> shape) {
    auto* s = ops::sum(input(std::move(shape)), {1});
    fusion_.addOutput(s);
    return s;
  }

  ir::Fusion copy_;
  std::optional<ir::IrCloner> cloner_;
  ir::WelfordOp* welford_ = nullptr;
};

// rFactor of the inner piece of a non-divisible split of an inner reduction (then inlined):
// padding is masked.
TEST_F(TransformedTest, SumInnerReductionNonDivisibleRFactorInner) {
  TensorView* s = rowSum({5, 37});
  copy();
  ir::FusionGuard g(&copy_);
  c(s)->split(1, 8);  // [i5, r5, r8]: 40 > 37
  TensorView* p = transform::rFactor(c(s), {2});
  ASSERT_TRUE(p->domain()->hasRoot());
  transform::inlineMost(copy_);
  EXPECT_GT(p->computeAtPosition(), 0);
  same({{5, 37}}, 37);
}

// rFactor of the outer piece: the producer keeps the outer extent as a Reduction.
TEST_F(TransformedTest, SumInnerReductionNonDivisibleRFactorOuter) {
  TensorView* s = rowSum({5, 37});
  copy();
  ir::FusionGuard g(&copy_);
  c(s)->split(1, 8);
  transform::rFactor(c(s), {1});
  same({{5, 37}}, 37);
}

// A divisible split and an outer split (factor = outer extent) give the same sums.
TEST_F(TransformedTest, SumDivisibleAndOuterSplit) {
  auto* x = input({4, 32});
  auto* a = ops::sum(x, {1});
  auto* b = ops::sum(x, {1});
  fusion_.addOutput(a);
  fusion_.addOutput(b);
  copy();
  ir::FusionGuard g(&copy_);
  c(a)->split(1, 8);
  transform::rFactor(c(a), {2});
  c(b)->split(1, 3, /*inner_split=*/false);  // [i4, r3, r11]: 33 > 32
  transform::rFactor(c(b), {2});
  same({{4, 32}}, 32);
}

// An outer (non-innermost) reduction, rFactored over either piece of a non-divisible split.
TEST_F(TransformedTest, SumOuterReduction) {
  auto* x = input({37, 6});
  auto* a = ops::sum(x, {0});
  auto* b = ops::sum(x, {0});
  fusion_.addOutput(a);
  fusion_.addOutput(b);
  copy();
  ir::FusionGuard g(&copy_);
  c(a)->split(0, 4);  // [r10, r4, i6]
  transform::rFactor(c(a), {0});
  c(b)->split(0, 4);
  transform::rFactor(c(b), {1});
  same({{37, 6}}, 37);
}

// Two reduced axes merged and split: the producer's logical derives from root by Merge + Split.
TEST_F(TransformedTest, SumMergedReductionAxes) {
  auto* x = input({5, 3, 7});
  auto* s = ops::sum(x, {1, 2});
  fusion_.addOutput(s);
  copy();
  ir::FusionGuard g(&copy_);
  c(s)->merge(1, 2);  // [i5, r21]
  c(s)->split(1, 4);  // [i5, r6, r4]: 24 > 21
  TensorView* p = transform::rFactor(c(s), {2});
  EXPECT_EQ(p->root().size(), 3u);
  same({{5, 3, 7}}, 21);
}

// Two splits and an rFactor over non-adjacent pieces, then a second rFactor of the consumer.
TEST_F(TransformedTest, SumTwoSplitsAndRepeatedRFactor) {
  TensorView* s = rowSum({3, 37});
  copy();
  ir::FusionGuard g(&copy_);
  c(s)->split(1, 8);  // [i3, r5, r8]
  c(s)->split(2, 3);  // [i3, r5, r3, r3]
  transform::rFactor(c(s), {1, 3});  // s: [i3, r3]
  c(s)->split(1, 2);                 // [i3, r2, r2]: 4 > 3
  transform::rFactor(c(s), {2});
  same({{3, 37}}, 37);
}

// max and min rFactor over negative data with padding: padding does not count as a 0.
TEST_F(TransformedTest, MaxMinRFactor) {
  auto* x = input({4, 29});
  auto* neg = ops::sub(ops::neg(ops::abs(x)), 1.0);  // every element < -1
  auto* mx = ops::max(neg, {1});
  auto* mn = ops::min(ops::abs(x), {1});
  fusion_.addOutput(mx);
  fusion_.addOutput(mn);
  copy();
  ir::FusionGuard g(&copy_);
  c(mx)->split(1, 8);
  transform::rFactor(c(mx), {1});
  c(mn)->split(1, 8);
  transform::rFactor(c(mn), {2});
  same({{4, 29}}, 1);
}

// var_mean rFactored into raw -> partial (avg, m2, n) -> combined, non-divisible split.
TEST_F(TransformedTest, WelfordRFactorNonDivisible) {
  varMean({2, 8, 13});
  copy();
  ir::FusionGuard g(&copy_);
  auto outs = copiedWelfordOutputs();
  outs[0]->split(2, 4);  // [i2, i8, r4, r4]: 16 > 13; only avg is scheduled
  auto producers = transform::rFactor(outs[0], {3}, outs);
  ASSERT_EQ(producers.size(), 3u);
  EXPECT_FALSE(outs[0]->definition()->as<ir::WelfordOp>()->hasRawInput());
  same({{2, 8, 13}}, 13);
}

// rFactor of the outer piece of a Welford split works the same.
TEST_F(TransformedTest, WelfordRFactorOuterPiece) {
  varMean({3, 21});
  copy();
  ir::FusionGuard g(&copy_);
  auto outs = copiedWelfordOutputs();
  outs[0]->split(1, 5);  // [i3, r5, r5]: 25 > 21
  transform::rFactor(outs[0], {1}, outs);
  same({{3, 21}}, 21);
}

// The founding case: input sharded on s by a DID outer split, propagated (allocation too), then
// var_mean rFactored with a non-divisible split; the evaluator computes the global result.
TEST_F(TransformedTest, WelfordRFactorShardedNonDivisible) {
  varMean({2, 8, 12});
  copy();
  ir::FusionGuard g(&copy_);
  TensorView* x = copy_.inputs()[0]->as<TensorView>();
  x->setDeviceMesh(ir::DeviceMesh::arange(4));
  x->split(1, 4, /*inner_split=*/false);          // [b, d, s/d, e]
  x->reorder(std::vector<int64_t>{1, 0, 2, 3});  // [d, b, s/d, e]
  x->axis(0)->parallelize(ParallelType::DIDx);
  x->setAllocationDomain(x->loop(), {true, true, true, true});
  transform::propagateTransforms(
      x, {.replay_allocation = true, .parallel = transform::ParallelCopy::DeviceOnly});
  auto outs = copiedWelfordOutputs();
  ASSERT_EQ(outs[0]->axis(0)->parallelType(), ParallelType::DIDx);
  outs[0]->split(3, 5);  // [DIDx{4}, b, s/d, r3, r5]: 15 > 12
  auto producers = transform::rFactor(outs[0], {4}, outs);
  EXPECT_EQ(producers[1]->axis(0)->parallelType(), ParallelType::DIDx);
  same({{2, 8, 12}}, 12);
}

// A sum over a DID-sharded reduced axis (each device's partial, then a cross-device sum) is the
// global sum.
TEST_F(TransformedTest, SumOverShardedAxis) {
  auto* x = input({2, 8, 3});
  auto* s = ops::sum(x, {1});
  fusion_.addOutput(s);
  copy();
  ir::FusionGuard g(&copy_);
  c(s)->setDeviceMesh(ir::DeviceMesh::arange(4));
  c(s)->split(1, 4, /*inner_split=*/false);  // [b, r_d, r2, e]
  c(s)->axis(1)->parallelize(ParallelType::DIDx);
  TensorView* p = transform::rFactor(c(s), {2});
  EXPECT_EQ(p->axis(1)->parallelType(), ParallelType::DIDx);
  same({{2, 8, 3}}, 8);
}

// cacheAfter of the input, cacheBefore of an rFactored sum and cacheFork of an output with uses
// insert copies that change nothing.
TEST_F(TransformedTest, CacheCopies) {
  auto* x = input({6, 11});
  auto* s = ops::sum(x, {1});
  auto* y = ops::exp(x);
  auto* z = ops::mul(y, 2.0);
  fusion_.addOutput(s);
  fusion_.addOutput(y);
  fusion_.addOutput(z);
  copy();
  ir::FusionGuard g(&copy_);
  transform::cacheAfter(c(x));
  c(s)->split(1, 4);
  TensorView* p = transform::rFactor(c(s), {2});
  transform::cacheAfter(p);
  transform::cacheBefore(c(s));
  transform::cacheFork(c(y));
  same({{6, 11}}, 11);
}

// clearReductionIterDomains on avg and n of a sharded Welford (m2 keeps its reductions) and on a
// sum output whose reduced dim is then recognised by its extents.
TEST_F(TransformedTest, ClearedReductionIds) {
  varMean({2, 8, 12});
  auto* x = fusion_.inputs()[0]->as<TensorView>();
  auto* s = ops::sum(x, {1});
  fusion_.addOutput(s);
  copy();
  ir::FusionGuard g(&copy_);
  auto outs = copiedWelfordOutputs();
  outs[0]->setDeviceMesh(ir::DeviceMesh::arange(4));
  outs[0]->split(1, 4, /*inner_split=*/false);
  outs[0]->axis(1)->parallelize(ParallelType::DIDx);
  transform::clearReductionIterDomains(outs[0]);
  transform::clearReductionIterDomains(outs[2]);
  EXPECT_FALSE(outs[0]->domain()->hasReduction());
  transform::clearReductionIterDomains(c(s));
  same({{2, 8, 12}}, 12);
}

// A cleared reduction whose extents fit the input several ways is an error, not a guess.
TEST_F(TransformedTest, ClearedReductionAmbiguousIsError) {
  auto* x = input({4, 4});
  auto* out = ir::IrBuilder::create<TensorView>(
      ir::IrBuilder::create<ir::TensorDomain>(std::vector<ir::IterDomain*>{
          ir::IterDomain::create(ir::IrBuilder::constant(int64_t(4)))}),
      DataType::Float32);
  ir::IrBuilder::create<ir::ReductionOp>(ir::ReductionOpType::Sum,
                                         ir::IrBuilder::constant(0.0), out, x);
  std::string msg = userErrorOf([&] { run({out}, {makeTensor({4, 4}, std::vector<double>(16))}); });
  EXPECT_HAS(msg, "its extents match several ways");
  EXPECT_HAS(msg, "the reduced dims are unknown");
}

}  // namespace
}  // namespace loom::eval::testing
