// SPDX-License-Identifier: Apache-2.0
// TransformReplay (selfReplay, replayPasC, replayCasP), propagation and parallelizeAllLike.
#include <gtest/gtest.h>

#include <random>

#include "loom/ops/ops.h"
#include "loom/transform/propagation.h"
#include "loom/transform/replay.h"
#include "loom/transform/inlining.h"
#include "test_utils.h"

namespace loom::transform {
namespace {

using namespace test;

// Applies a random sequence of splits, merges and reorders to tv's loop.
void randomSchedule(TensorView* tv, std::mt19937& rng) {
  int steps = int(rng() % 5) + 1;
  for (int s = 0; s < steps; ++s) {
    int64_t n = tv->nDims();
    switch (rng() % 3) {
      case 0:
        tv->split(int64_t(rng() % uint64_t(n)), int64_t(rng() % 4) + 1, rng() % 2 == 0);
        break;
      case 1:
        if (n > 1) tv->merge(int64_t(rng() % uint64_t(n - 1)));
        break;
      default: {
        std::vector<int64_t> perm(static_cast<size_t>(n), 0);
        for (int64_t i = 0; i < n; ++i) perm[size_t(i)] = i;
        std::shuffle(perm.begin(), perm.end(), rng);
        tv->reorder(perm);
      }
    }
  }
}

// Random schedules of a consumer replayed to its producer (and back to another consumer) give
// structurally equal loop domains.
TEST(Replay, RandomRoundTrips) {
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 40; ++trial) {
    Fusion fusion;
    FusionGuard guard(&fusion);
    auto* x = ops::TensorBuilder().shape({4, 6, 10}).build();
    fusion.addInput(x);
    auto* a = ops::exp(x);
    auto* b = ops::neg(a);
    auto* c = ops::abs(a);
    fusion.addOutput(b);
    fusion.addOutput(c);
    randomSchedule(b, rng);
    b->axis(0)->parallelize(ParallelType::BIDx);
    int64_t pos = TransformReplay::replayPasC(a, b, -1, {.parallel = ParallelCopy::All});
    EXPECT_EQ(pos, b->nDims());
    EXPECT_EQ(describeLoop(a), describeLoop(b)) << "trial " << trial;
    TransformReplay::replayCasP(c, a, -1, {.parallel = ParallelCopy::All});
    EXPECT_EQ(describeLoop(c), describeLoop(b)) << "trial " << trial;
    verify(fusion);
  }
}

// Replaying only loop[0, pos) makes the first matched IDs equal and leaves the rest unscheduled.
TEST(Replay, PartialPosition) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  auto* x = ops::TensorBuilder().shape({4, 6, 10}).build();
  fusion.addInput(x);
  auto* a = ops::exp(x);
  auto* b = ops::neg(a);
  fusion.addOutput(b);
  b->split(2, 5)->split(0, 2);  // [4/2, 2, 6, 2, 5]
  int64_t pos = TransformReplay::replayPasC(a, b, 2);
  EXPECT_EQ(pos, 2);
  EXPECT_EQ(describeLoop(a, {.types = false, .parallel = false}),
            "[split(L0,2,inner).o{2}, split(L0,2,inner).i{2}, L1{6}, L2{10}]");
}

// Replaying the same schedule twice reuses the target's existing Split/Merge exprs.
TEST(Replay, ReplayIsIdempotent) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  auto* x = ops::TensorBuilder().shape({4, 6}).build();
  fusion.addInput(x);
  auto* a = ops::exp(x);
  auto* b = ops::neg(a);
  fusion.addOutput(b);
  b->merge(0)->split(0, 4);
  TransformReplay::replayPasC(a, b);
  auto loop = a->loop();
  int64_t n = fusion.numStatements();
  TransformReplay::replayPasC(a, b);
  EXPECT_EQ(a->loop(), loop);
  EXPECT_EQ(fusion.numStatements(), n);
}

// A consumer reduction's split lands on the producer's iteration ID; replaying the reduction's
// producer back to a consumer skips the reduction IDs.
TEST(Replay, ThroughReduction) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  auto* x = ops::TensorBuilder().shape({4, 16}).build();
  fusion.addInput(x);
  auto* a = ops::exp(x);
  auto* s = ops::sum(a, {1});
  auto* t = ops::neg(s);
  fusion.addOutput(t);
  s->split(1, 4);
  TransformReplay::replayPasC(a, s);
  EXPECT_EQ(describeLoop(a), "[L0{4:iter:serial}, split(L1,4,inner).o{4:iter:serial}, "
                             "split(L1,4,inner).i{4:iter:serial}]");
  s->split(0, 2);
  TransformReplay::replayCasP(t, s);
  EXPECT_EQ(describeLoop(t),
            "[split(L0,2,inner).o{2:iter:serial}, split(L0,2,inner).i{2:iter:serial}]");
}

// A consumer merge with a new broadcast ID is forwarded onto the producer's other ID.
TEST(Replay, ForwardsThroughBroadcast) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  auto* x = ops::TensorBuilder().shape({4, 8}).build();
  fusion.addInput(x);
  auto* s = ops::sum(x, {1});
  auto* b = ops::broadcast(s, {false, true});
  auto* y = ops::add(x, b);
  fusion.addOutput(y);
  b->merge(0)->split(0, 2);
  int64_t pos = TransformReplay::replayPasC(s, b);
  EXPECT_EQ(pos, 2);
  EXPECT_EQ(describeLoop(s, {.types = false, .parallel = false}),
            "[split(L0,2,inner).o{2}, split(L0,2,inner).i{2}, L1{8}]");
}

// selfReplay copies loop, allocation, contiguity and parallel types; extra reductions go first.
TEST(Replay, SelfReplayWithExtraReductions) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  auto* x = ops::TensorBuilder().shape({4, 6, 8}).build();
  fusion.addInput(x);
  auto* s = ops::sum(x, {1});  // [i, r, i]
  auto* t = ops::neg(s);       // [i, i]
  fusion.addOutput(t);
  t->setDeviceMesh(DeviceMesh::arange(2));
  t->split(0, 2, false)->reorder(std::vector<int64_t>{1, 0, 2});
  t->axis(1)->parallelize(ParallelType::DIDx);
  t->setAllocationDomain(t->loop(), {true, false, true});
  TransformReplay::selfReplay(t, s);
  EXPECT_EQ(describeLoop(s), "[L1{6:red:serial}, split(L0,2,outer).i{2:iter:serial}, "
                             "split(L0,2,outer).o{2:iter:DIDx}, L2{8:iter:serial}]");
  EXPECT_EQ(describeAllocation(s), describeLoop(s));
  EXPECT_EQ(s->contiguity(), (Contiguity{std::nullopt, true, false, true}));
  EXPECT_EQ(s->deviceMesh(), DeviceMesh::arange(2));
  verify(fusion);
}

// selfReplay needs logical domains that match 1:1 up to reductions.
TEST(Replay, SelfReplayMismatchIsUserError) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  auto* x = ops::TensorBuilder().shape({4, 6}).build();
  auto* y = ops::TensorBuilder().shape({4, 6, 2}).build();
  auto* z = ops::TensorBuilder().shape({4, 1}).build();
  std::string msg = userError([&] { TransformReplay::selfReplay(x, y); });
  EXPECT_TRUE(has(msg, "do not match 1:1")) << msg;
  msg = userError([&] { TransformReplay::selfReplay(x, z); });
  EXPECT_TRUE(has(msg, "logical ID 1 has type iter")) << msg;
}

// Replay refuses to rewrite an inlined tensor.
TEST(Replay, RefusesInlinedTarget) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  auto* x = ops::TensorBuilder().shape({4, 6}).build();
  fusion.addInput(x);
  auto* a = ops::exp(x);
  auto* b = ops::neg(a);
  fusion.addOutput(b);
  inlineAt(a, 1);
  std::string msg = userError([&] { TransformReplay::replayPasC(a, b); });
  EXPECT_TRUE(has(msg, "already inlined")) << msg;
}

// Propagation from a reduction reference schedules every tensor; parallelizeAllLike copies the
// parallel types to mapped loop IDs.
TEST(Propagation, ScheduleEveryTensorFromReference) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  auto* x = ops::TensorBuilder().shape({8, 32}).build();
  fusion.addInput(x);
  auto* m = ops::max(x, {1});
  auto* b = ops::broadcast(m, {false, true});
  auto* y = ops::sub(x, b);
  fusion.addOutput(y);
  y->split(1, 4);  // [8, 8, 4]
  y->axis(0)->parallelize(ParallelType::BIDx);
  y->axis(1)->parallelize(ParallelType::TIDx);
  propagateTransforms(y);
  parallelizeAllLike(y);
  for (TensorView* tv : {x, m, b}) {
    ASSERT_EQ(tv->nDims(), 3) << tv->toString();
    EXPECT_EQ(tv->axis(0)->parallelType(), ParallelType::BIDx) << tv->toString();
    EXPECT_EQ(tv->axis(1)->parallelType(), ParallelType::TIDx) << tv->toString();
  }
  EXPECT_TRUE(m->axis(1)->isReduction());
  EXPECT_TRUE(b->axis(1)->isBroadcast());
  auto tree = maxInfoSpanningTree(y);
  EXPECT_EQ(tree.size(), 3u);
  verify(fusion);
}

// The spanning tree prefers the path that keeps the most reference IDs: siblings over others.
TEST(Propagation, SiblingsAreReachedDirectly) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  auto* x = ops::TensorBuilder().shape({8, 32}).build();
  fusion.addInput(x);
  auto w = ops::welford(x, {1});
  fusion.addOutput(w.avg);
  fusion.addOutput(w.m2);
  fusion.addOutput(w.n);
  auto tree = maxInfoSpanningTree(w.avg);
  ASSERT_GE(tree.size(), 2u);
  EXPECT_EQ(tree[0].step, PropagationStep::Sibling);
  EXPECT_EQ(tree[1].step, PropagationStep::Sibling);
  EXPECT_EQ(tree[0].information, 2);
}

}  // namespace
}  // namespace loom::transform
