// SPDX-License-Identifier: Apache-2.0
// LoopGraph: loop groups through the ID graphs, promotion, trivial groups, nesting and its
// errors.
#include <gtest/gtest.h>

#include "loom/ops/ops.h"
#include "loom/transform/inlining.h"
#include "loom/transform/loop_graph.h"
#include "loom/transform/propagation.h"
#include "loom/transform/schedule.h"
#include "test_utils.h"

namespace loom::transform {
namespace {

using namespace test;

// An intermediate inlined into two consumers puts both consumers' loops in its groups: the three
// tensors run in one loop nest.
TEST(LoopGraph, FanOutSharesOneLoop) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  auto* x = ops::TensorBuilder().shape({4, 8}).build();
  fusion.addInput(x);
  auto* t = ops::exp(x);
  auto* a = ops::neg(t);
  auto* b = ops::abs(t);
  fusion.addOutput(a);
  fusion.addOutput(b);
  inlineMost(fusion);
  LoopGraph lg(fusion);
  for (int64_t k = 0; k < 2; ++k) {
    EXPECT_EQ(lg.group(t->axis(k)), lg.group(a->axis(k)));
    EXPECT_EQ(lg.group(t->axis(k)), lg.group(b->axis(k)));
  }
  EXPECT_EQ(lg.loopPath(a), lg.loopPath(b));
  EXPECT_EQ(lg.scope(t), lg.group(a->axis(1)));
  EXPECT_EQ(lg.parent(lg.group(a->axis(1))), lg.group(a->axis(0)));
  EXPECT_EQ(lg.parent(lg.group(a->axis(0))), -1);
}

// A producer without the broadcast its consumer merges with a real dim shares the consumer's
// loops (matched through the permissive graph, not by position); the loop is promoted to the
// member covering both dims, and the producer's loop ID is not exactly promoted (lowering indexes
// it through the promoted ID's history).
TEST(LoopGraph, PromotionCoversTheBroadcastResolvedDims) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  auto* x = ops::TensorBuilder().shape({-1}).build();
  auto* y = ops::TensorBuilder().shape({-1, -1}).build();
  fusion.addInput(x);
  fusion.addInput(y);
  auto* e = ops::exp(x);
  auto* bc = ops::broadcast(e, {true, false});
  auto* out = ops::add(bc, y);
  fusion.addOutput(out);
  out->merge(0)->split(0, 4);
  propagateTransforms(out);
  inlineMost(fusion);
  ASSERT_EQ(e->computeAtPosition(), 2);
  LoopGraph lg(fusion);
  EXPECT_EQ(lg.group(e->axis(0)), lg.group(out->axis(0)));
  EXPECT_EQ(lg.promoted(e->axis(0)), out->axis(0));
  EXPECT_FALSE(lg.isExactlyPromoted(e->axis(0)));
  EXPECT_TRUE(lg.isExactlyPromoted(out->axis(0)));
}

// A consumer's broadcast loop ID between two shared ones is skipped by the alignment, and a
// group whose members are all serial broadcasts is trivial (not a loop).
TEST(LoopGraph, ConsumerBroadcastLoopsAreSkippedAndTrivial) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  auto* x = ops::TensorBuilder().shape({4, 8}).build();
  fusion.addInput(x);
  auto* a = ops::exp(x);
  auto* b = ops::broadcast(a, {false, true, false});  // [4, 1, 8]
  fusion.addOutput(b);
  inlineMost(fusion);
  ASSERT_EQ(a->computeAtPosition(), 2);
  LoopGraph lg(fusion);
  EXPECT_EQ(lg.group(a->axis(1)), lg.group(b->axis(2)));
  EXPECT_TRUE(lg.isTrivial(lg.group(b->axis(1))));
  std::vector<int64_t> path = lg.loopPath(b);
  EXPECT_EQ(path, (std::vector<int64_t>{lg.group(b->axis(0)), lg.group(b->axis(2))}));
  std::vector<int64_t> at;
  const IdGraph permissive(fusion, IdMappingMode::Permissive);
  ASSERT_TRUE(alignLoops(a, b, 2, permissive, at));
  EXPECT_EQ(at, (std::vector<int64_t>{0, 2}));
}

// Owners that disagree about where a thread/block loop nests settle on the deepest claim when
// only thread/block loops lie between: exp(x) shared by neg(e) [BIDx, TIDx] and by a broadcast
// into [BIDy, BIDx, TIDy, TIDx] puts neg's loops inside BIDy and TIDy.
TEST(LoopGraph, ParallelLoopsNestInsideExtraParallelLoops) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  auto* x = ops::TensorBuilder().shape({-1}).build();
  auto* y = ops::TensorBuilder().shape({-1, -1}).build();
  fusion.addInput(x);
  fusion.addInput(y);
  auto* e = ops::exp(x);
  auto* big = ops::mul(ops::broadcast(e, {true, false}), y);
  auto* small = ops::neg(e);
  fusion.addOutput(big);
  fusion.addOutput(small);
  big->split(0, 4)->split(2, 32)->reorder(std::vector<int64_t>{0, 2, 1, 3});  // [o, I/32, 4, 32]
  propagateTransforms(big);  // e and small: [I/32, 32]
  ASSERT_EQ(small->nDims(), 2);
  big->axis(0)->parallelize(ParallelType::BIDy);
  big->axis(1)->parallelize(ParallelType::BIDx);
  big->axis(2)->parallelize(ParallelType::TIDy);
  big->axis(3)->parallelize(ParallelType::TIDx);
  parallelizeAllLike(big);
  small->axis(0)->parallelize(ParallelType::BIDx);
  small->axis(1)->parallelize(ParallelType::TIDx);
  inlineMost(fusion);
  ASSERT_EQ(e->computeAtPosition(), 2);
  LoopGraph lg(fusion);
  EXPECT_EQ(lg.loopPath(small), lg.loopPath(big));
}

// Shared loop IDs with two different thread/block types are a UserError naming both types.
TEST(LoopGraph, ConflictingParallelTypesAreAUserError) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  auto* x = ops::TensorBuilder().shape({4, 8}).build();
  fusion.addInput(x);
  auto* a = ops::exp(x);
  auto* b = ops::neg(a);
  fusion.addOutput(b);
  inlineMost(fusion);
  a->axis(0)->parallelize(ParallelType::BIDx);
  b->axis(0)->parallelize(ParallelType::TIDx);
  std::string msg = userError([&] { LoopGraph lg(fusion); });
  EXPECT_TRUE(has(msg, "BIDx")) << msg;
  EXPECT_TRUE(has(msg, "TIDx")) << msg;
  EXPECT_TRUE(has(msg, "share one loop")) << msg;
}

// A reduction's own loops nest inside the loops it shares with its producer's consumers; its
// reduction loop is its own (the consumer of its result sits outside it).
TEST(LoopGraph, ReductionLoopIsOwnedByTheReduction) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  auto* x = ops::TensorBuilder().shape({4, 8}).build();
  fusion.addInput(x);
  auto* a = ops::exp(x);
  auto* s = ops::sum(a, {1});
  auto* t = ops::neg(s);
  fusion.addOutput(t);
  inlineMost(fusion);
  LoopGraph lg(fusion);
  EXPECT_EQ(lg.group(a->axis(1)), lg.group(s->axis(1)));
  EXPECT_EQ(lg.parent(lg.group(s->axis(1))), lg.group(t->axis(0)));
  EXPECT_EQ(lg.scope(s), lg.group(t->axis(0)));
  EXPECT_EQ(lg.loopPath(t), (std::vector<int64_t>{lg.group(t->axis(0))}));
}

}  // namespace
}  // namespace loom::transform
