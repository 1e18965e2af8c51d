// SPDX-License-Identifier: Apache-2.0
// Partial replays that keep the target's own schedule, and replay onto reshape outputs.
#include <gtest/gtest.h>

#include "loom/ops/ops.h"
#include "loom/transform/id_graph.h"
#include "loom/transform/inlining.h"
#include "loom/transform/propagation.h"
#include "loom/transform/replay.h"
#include "test_utils.h"

namespace loom::transform {
namespace {

using namespace test;

constexpr DescribeOptions kPlain{.types = false, .parallel = false};

// replayPasC below the full loop keeps the producer's own transforms of IDs the replay did not
// consume (the split of L2), and rebuilds only what it did (the merge of L0, which the replayed
// split consumed, leaves L1 bare).
TEST(PartialReplay, PasCKeepsTargetSchedule) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  auto* x = ops::TensorBuilder().shape({4, 6, 10}).build();
  fusion.addInput(x);
  auto* a = ops::exp(x);
  auto* b = ops::neg(a);
  fusion.addOutput(b);
  a->split(2, 5)->merge(0, 1);  // [L0*L1, L2/5, 5]
  b->split(0, 2);               // [L0/2, 2, L1, L2]
  EXPECT_EQ(TransformReplay::replayPasC(a, b, 2), 2);
  EXPECT_EQ(describeLoop(a, kPlain),
            "[split(L0,2,inner).o{2}, split(L0,2,inner).i{2}, L1{6}, split(L2,5,inner).o{2}, "
            "split(L2,5,inner).i{5}]");
  verify(fusion);
}

// replayCasP at a partial position keeps the consumer's own split of an untouched ID, and the
// replay's left-over half of the split it did replay comes right after the prefix.
TEST(PartialReplay, CasPKeepsTargetSchedule) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  auto* x = ops::TensorBuilder().shape({4, 6, 10}).build();
  fusion.addInput(x);
  auto* a = ops::exp(x);
  auto* b = ops::neg(a);
  fusion.addOutput(b);
  a->split(0, 2);                                 // [L0/2, 2, L1, L2]
  b->split(1, 3)->reorder(std::vector<int64_t>{0, 3, 1, 2});  // [L0, L2, L1/3, 3]
  EXPECT_EQ(TransformReplay::replayCasP(b, a, 1), 1);
  EXPECT_EQ(describeLoop(b, kPlain),
            "[split(L0,2,inner).o{2}, split(L0,2,inner).i{2}, L2{10}, split(L1,3,inner).o{2}, "
            "split(L1,3,inner).i{3}]");
  // Replaying the full loop afterwards discards the consumer's own split of L1.
  TransformReplay::replayCasP(b, a);
  EXPECT_EQ(describeLoop(b, kPlain), describeLoop(a, kPlain));
  verify(fusion);
}

// A producer merge of exactly the dims a reshape merges reuses the reshape's merge; a later split
// of it applies to the merged logical ID, and the producer then inlines fully into the reshape.
TEST(ReshapeReplay, ProducerMergeOfReshapedDims) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  auto* x = ops::TensorBuilder().shape({4, 6}).build();
  fusion.addInput(x);
  auto* a = ops::exp(x);
  auto* r = ops::reshape(a, {24});  // root [4, 6], logical [merge]
  auto* y = ops::neg(r);
  fusion.addOutput(y);
  a->merge(0)->split(0, 8);  // [3, 8]
  EXPECT_EQ(TransformReplay::replayCasP(r, a), 2);
  EXPECT_EQ(describeLoop(r, kPlain), describeLoop(a, kPlain));
  EXPECT_EQ(r->axis(0)->definition()->input(0), r->logical()[0]);
  verify(fusion);
  inlineMost(fusion);
  EXPECT_EQ(a->computeAtPosition(), 2);
}

// A producer split equal to the reshape's split (24 -> [4, 6]) reuses it: the reshape output's
// loop is its logical domain.
TEST(ReshapeReplay, ProducerSplitMatchingReshape) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  auto* x = ops::TensorBuilder().shape({24, 5}).build();
  fusion.addInput(x);
  auto* a = ops::exp(x);
  auto* r = ops::reshape(a, {4, 6, 5});
  fusion.addOutput(r);
  a->split(0, 6);
  int64_t n = fusion.numStatements();
  EXPECT_EQ(TransformReplay::replayCasP(r, a), 3);
  EXPECT_EQ(r->loop(), r->logical());
  EXPECT_EQ(fusion.numStatements(), n);  // nothing new was made
  verify(fusion);
}

// Producer schedules that differ from the reshape's transforms apply to the loop-side equivalent
// of the reshaped ID: a split of 24 by 4 where the reshape splits by 6 splits merge(4, 6); a merge
// of 24 with 5 merges merge(4, 6) with 5. Inlining through the reshape still maps them.
TEST(ReshapeReplay, ProducerScheduleDifferentFromReshape) {
  for (int variant = 0; variant < 2; ++variant) {
    Fusion fusion;
    FusionGuard guard(&fusion);
    auto* x = ops::TensorBuilder().shape({24, 5}).build();
    fusion.addInput(x);
    auto* a = ops::exp(x);
    auto* r = ops::reshape(a, {4, 6, 5});
    auto* y = ops::neg(r);
    fusion.addOutput(y);
    if (variant == 0) {
      a->split(0, 4);  // [6, 4, 5]
    } else {
      a->merge(0);     // [120]
    }
    TransformReplay::replayCasP(r, a);
    // r's root is [L0{24}, L1{5}]; its logical [split(L0,6).o, split(L0,6).i, L1].
    const std::string m = "merge(split(L0,6,inner).o,split(L0,6,inner).i)";
    if (variant == 0) {
      EXPECT_EQ(describeLoop(r, kPlain),
                "[split(" + m + ",4,inner).o{6}, split(" + m + ",4,inner).i{4}, L1{5}]");
    } else {
      EXPECT_EQ(describeLoop(r, kPlain), "[merge(" + m + ",L1){120}]");
    }
    verify(fusion);
    IdGraph exact(fusion, IdMappingMode::Exact);
    for (int64_t k = 0; k < a->nDims(); ++k) {
      EXPECT_TRUE(exact.areMapped(a->axis(k), r->axis(k))) << "variant " << variant << " " << k;
    }
    TransformReplay::replayCasP(y, r);
    inlineMost(fusion);
    EXPECT_EQ(a->computeAtPosition(), a->nDims()) << "variant " << variant;
  }
}

// Propagation from a scheduled tensor before a reshape reaches the tensors after it.
TEST(ReshapeReplay, PropagationThroughReshape) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  auto* x = ops::TensorBuilder().shape({4, 6, 8}).build();
  fusion.addInput(x);
  auto* a = ops::exp(x);
  auto* r = ops::reshape(a, {24, 8});
  auto* y = ops::neg(r);
  fusion.addOutput(y);
  a->merge(0)->merge(0)->split(0, 32);  // [6, 32]
  propagateTransforms(a);
  EXPECT_EQ(describeLoop(r, kPlain), describeLoop(a, kPlain));
  EXPECT_EQ(y->nDims(), 2);
  verify(fusion);
  inlineMost(fusion);
  EXPECT_EQ(a->computeAtPosition(), 2);
  EXPECT_EQ(r->computeAtPosition(), 2);
}

}  // namespace
}  // namespace loom::transform
