// SPDX-License-Identifier: Apache-2.0
// The whole scheduling flow on a normalization: schedule a reference, propagate its transforms,
// parallelize all like it, inline most.
#include <gtest/gtest.h>

#include "loom/ops/ops.h"
#include "loom/transform/inlining.h"
#include "loom/transform/propagation.h"
#include "loom/transform/schedule.h"
#include "test_utils.h"

namespace loom::transform {
namespace {

using namespace test;

// propagateTransforms copies only the split/merge history (and DID types); kernel parallel
// types follow by parallelizeAllLike; inlineMost then shares every loop up to the reduction.
TEST(ScheduleFlow, LayerNormReferencePropagateParallelizeInline) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  auto* x = ops::TensorBuilder().shape({8, 32}).build();
  fusion.addInput(x);
  auto r = ops::layerNorm(x, 1, nullptr, nullptr);
  fusion.addOutput(r.y);
  auto* w = x->uses().front()->as<WelfordOp>();
  TensorView* avg = w->outAvg();
  avg->split(1, 8);  // [I0, R1/8, 8]
  parallelize(avg, 0, ParallelType::BIDx);
  parallelize(avg, 2, ParallelType::TIDx);
  propagateTransforms(avg);
  // Transforms only: the sibling and the output have the split but no kernel parallel types.
  EXPECT_EQ(describeLoop(r.y), "[L0{8:iter:serial}, split(L1,8,inner).o{4:iter:serial}, "
                               "split(L1,8,inner).i{8:iter:serial}]");
  parallelizeAllLike(avg);
  inlineMost(fusion);
  TensorView* m2 = w->outM2();
  TensorView* var = m2->uses().front()->output(0)->as<TensorView>();
  TensorView* bvar = var->uses().front()->output(0)->as<TensorView>();
  TensorView* veps = bvar->uses().front()->output(0)->as<TensorView>();
  TensorView* centered = r.mean->uses().front()->output(0)->as<TensorView>();
  const std::string iter = "[L0{8:iter:BIDx}, split(L1,8,inner).o{4:iter:serial}, "
                           "split(L1,8,inner).i{8:iter:TIDx}]";
  const std::string red = "[L0{8:iter:BIDx}, split(L1,8,inner).o{4:red:serial}, "
                          "split(L1,8,inner).i{8:red:TIDx}]";
  // Broadcasts take the split of the I1 they resolve to (replayed from their consumer).
  const std::string bcast = "[L0{8:iter:BIDx}, split(L1,8,inner).o{1:bcast:serial}, "
                            "split(L1,8,inner).i{8:bcast:TIDx}]";
  struct Expect {
    TensorView* tv;
    std::string loop;
    int64_t ca;
  };
  const std::vector<Expect> expected = {
      {x, iter, 0},                  // fusion input
      {avg, red, 1},                 // Welford outputs stop at the reduction
      {m2, red, 1},
      {w->outN(), red, 0},           // no uses
      {var, "[L0{8:iter:BIDx}]", 1}, // m2 / N has only I0, shared fully
      {r.mean, bcast, 3},            // the rest inlines fully into the output's loops
      {centered, iter, 3},
      {bvar, bcast, 3},
      {veps, bcast, 3},
      {r.rstd, bcast, 3},
      {r.y, iter, 0},                // fusion output
  };
  EXPECT_EQ(expected.size(), fusion.allTvs().size());
  for (const Expect& e : expected) {
    EXPECT_EQ(describeLoop(e.tv), e.loop) << e.tv->toString();
    EXPECT_EQ(e.tv->computeAtPosition(), e.ca) << e.tv->toString();
  }
  EXPECT_EQ(r.y->maxProducerPosition(), 3);
  EXPECT_EQ(bvar->maxProducerPosition(), 1);
  validateSchedule(fusion);
  verify(fusion);
}

}  // namespace
}  // namespace loom::transform
