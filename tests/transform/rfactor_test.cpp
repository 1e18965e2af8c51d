// SPDX-License-Identifier: Apache-2.0
// Single-output rFactor of a ReductionOp and its errors.
#include <gtest/gtest.h>

#include "loom/ops/ops.h"
#include "loom/transform/rfactor.h"
#include "test_utils.h"

namespace loom::transform {
namespace {

using namespace test;

// rFactor makes a partial sum over the chosen axes and a final sum over the rest.
TEST(RFactor, SumSplitsIntoTwoReductions) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  auto* x = ops::TensorBuilder().shape({4, 32}).build();
  fusion.addInput(x);
  auto* s = ops::sum(x, {1});
  fusion.addOutput(s);
  s->split(1, 8);  // [i4, r4, r8]
  s->axis(2)->parallelize(ParallelType::TIDx);
  TensorView* p = rFactor(s, {2});
  EXPECT_EQ(describeLoop(p), "[L0{4:iter:serial}, split(L1,8,inner).o{4:iter:serial}, "
                             "split(L1,8,inner).i{8:red:TIDx}]");
  EXPECT_EQ(describeLoop(s), "[L0{4:iter:serial}, L1{4:red:serial}]");
  EXPECT_EQ(p->logical().size(), 3u);
  EXPECT_TRUE(p->logical()[1]->isRFactorProduct());
  EXPECT_EQ(s->definition()->as<ReductionOp>()->in(), p);
  EXPECT_EQ(p->definition()->as<ReductionOp>()->in(), x);
  verify(fusion);
}

// rFactor axes must be reduction IDs, and one reduction must stay.
TEST(RFactor, Errors) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  auto* x = ops::TensorBuilder().shape({4, 32}).build();
  fusion.addInput(x);
  auto* s = ops::sum(x, {1});
  auto* t = ops::neg(s);
  fusion.addOutput(t);
  s->split(1, 8);
  EXPECT_TRUE(has(userError([&] { rFactor(s, {0}); }), "is not a reduction IterDomain"));
  EXPECT_TRUE(has(userError([&] { rFactor(s, {1, 2}); }), "at least one must stay"));
  EXPECT_TRUE(has(userError([&] { rFactor(t, {0}); }), "not the output of a reduction"));
  EXPECT_TRUE(has(userError([&] { rFactor(s, {}); }), "no axes"));
  TensorView* p = rFactor(s, {2});
  p->split(2, 2);
  EXPECT_TRUE(has(userError([&] { rFactor(p, {3}); }), "already has a root domain"));
}

// A matmul's or linear's rFactor is a rewrite into partial products and a sum, built by the ops
// layer (ops::rFactorContraction): transform::rFactor names the op and points there.
TEST(RFactor, MatmulOutputPointsToTheOpsRewrite) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  auto* a = ops::TensorBuilder().shape({4, 8}).build();
  auto* b = ops::TensorBuilder().shape({8, 3}).build();
  auto* w = ops::TensorBuilder().shape({3, 8}).build();
  fusion.addInput(a);
  fusion.addInput(b);
  fusion.addInput(w);
  auto* m = ops::matmul(a, b);
  auto* l = ops::linear(a, w);
  fusion.addOutput(m);
  fusion.addOutput(l);
  EXPECT_TRUE(has(userError([&] { rFactor(m, {2}); }),
                  "is the output of a matmul; its rFactor rewrites the product"));
  EXPECT_TRUE(has(userError([&] { rFactor(l, {2}); }), "ops::rFactorContraction"));
}

// A schedule that merges a broadcast into a reduction cannot be rFactored: it is a clear error
// naming both IDs (merging the broadcast with an iteration ID instead is fine).
TEST(RFactor, BroadcastMergedIntoReductionIsRejected) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  auto* x = ops::TensorBuilder().shape({4, 32}).build();
  fusion.addInput(x);
  auto* b = ops::broadcast(x, {false, false, true});  // [I0, I1, B2]
  auto* s = ops::sum(b, {1});                          // [I0, R1, B2]
  fusion.addOutput(s);
  s->merge(1)->split(1, 8);  // [I0, (R1*B2)/8, 8]
  std::string msg = userError([&] { rFactor(s, {2}); });
  EXPECT_TRUE(has(msg, "merges broadcast")) << msg;
  EXPECT_TRUE(has(msg, "into reduction")) << msg;
  EXPECT_TRUE(has(msg, "cannot split such a merge")) << msg;

  Fusion f2;
  FusionGuard g2(&f2);
  auto* x2 = ops::TensorBuilder().shape({4, 32}).build();
  f2.addInput(x2);
  auto* s2 = ops::sum(ops::broadcast(x2, {false, false, true}), {1});  // [I0, R1, B2]
  f2.addOutput(s2);
  s2->reorder(std::vector<int64_t>{0, 2, 1})->merge(0)->split(1, 8);  // [I0*B2, R1/8, 8]
  TensorView* p = rFactor(s2, {2});
  EXPECT_EQ(describeLoop(s2, {.types = true, .parallel = false}),
            "[merge(L0,L2){4:iter}, L1{4:red}]");
  EXPECT_EQ(p->nDims(), 3);
  verify(f2);
}

}  // namespace
}  // namespace loom::transform
