// SPDX-License-Identifier: Apache-2.0
// inlineMost / inlineAt / computeAt positions and their legality errors.
#include <gtest/gtest.h>

#include "loom/ops/ops.h"
#include "loom/transform/inlining.h"
#include "test_utils.h"

namespace loom::transform {
namespace {

using namespace test;

// Pointwise chains inline fully; fusion inputs and outputs without uses stay at 0.
TEST(Inlining, PointwiseInlinesFully) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  auto* x = ops::TensorBuilder().shape({4, 8}).build();
  fusion.addInput(x);
  auto* a = ops::exp(x);
  auto* b = ops::neg(a);
  auto* c = ops::abs(b);
  fusion.addOutput(c);
  inlineMost(fusion);
  EXPECT_EQ(x->computeAtPosition(), 0);
  EXPECT_EQ(a->computeAtPosition(), 2);
  EXPECT_EQ(b->computeAtPosition(), 2);
  EXPECT_EQ(c->computeAtPosition(), 0);
  EXPECT_EQ(c->maxProducerPosition(), 2);
}

// A reduction's producer inlines fully into it; the reduction stops before its reduction axis.
TEST(Inlining, ReductionStopsAtReductionAxis) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  auto* x = ops::TensorBuilder().shape({4, 8}).build();
  fusion.addInput(x);
  auto* a = ops::exp(x);
  auto* s = ops::sum(a, {1});
  auto* t = ops::neg(s);
  fusion.addOutput(t);
  inlineMost(fusion);
  EXPECT_EQ(a->computeAtPosition(), 2);
  EXPECT_EQ(s->computeAtPosition(), 1);
  EXPECT_EQ(t->maxProducerPosition(), 1);
  std::string msg = userError([&] { inlineAt(s, 2); });
  EXPECT_TRUE(has(msg, "is a reduction")) << msg;
}

// Softmax: tensors read both by a reduction and after it stop at the reduced axis; the
// broadcasts of the statistics back off over their trailing broadcast ID; pointwise tensors
// between them inline fully.
TEST(Inlining, SoftmaxPositions) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  auto* in = ops::TensorBuilder().shape({4, 8}).build();
  fusion.addInput(in);
  auto* x = ops::set(in);
  auto* m = ops::max(x, {1});
  auto* bm = ops::broadcast(m, {false, true});
  auto* d = ops::sub(x, bm);
  auto* e = ops::exp(d);
  auto* s = ops::sum(e, {1});
  auto* bs = ops::broadcast(s, {false, true});
  auto* y = ops::div(e, bs);
  fusion.addOutput(y);
  inlineMost(fusion);
  EXPECT_EQ(x->computeAtPosition(), 1);
  EXPECT_EQ(m->computeAtPosition(), 1);
  EXPECT_EQ(bm->computeAtPosition(), 1);
  EXPECT_EQ(maxInlinePosition(bm), 2);
  EXPECT_EQ(d->computeAtPosition(), 2);
  EXPECT_EQ(e->computeAtPosition(), 1);
  EXPECT_EQ(s->computeAtPosition(), 1);
  EXPECT_EQ(bs->computeAtPosition(), 1);
  std::string msg = userError([&] { inlineAt(e, 2); });
  EXPECT_TRUE(has(msg, "reads the reduction's result")) << msg;
}

// layer_norm from ops: every non-input tensor gets a legal position and none crosses a
// reduction (checked by recomputing the legal maximum).
TEST(Inlining, LayerNormPositionsAreLegal) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  auto* x = ops::TensorBuilder().shape({4, 8}).build();
  fusion.addInput(x);
  auto r = ops::layerNorm(x, 1, nullptr, nullptr);
  fusion.addOutput(r.y);
  inlineMost(fusion);
  int inlined = 0;
  for (TensorView* tv : fusion.allTvs()) {
    EXPECT_LE(tv->computeAtPosition(), maxInlinePosition(tv)) << tv->toString();
    if (tv->domain()->hasReduction()) {
      EXPECT_LE(tv->computeAtPosition(), 1);
    }
    inlined += tv->computeAtPosition() == 2 ? 1 : 0;
  }
  EXPECT_GT(inlined, 0);
}

// Vectorized IDs (and unrolled ones when not allowed) stop inlining.
TEST(Inlining, VectorizeAndUnrollStopInlining) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  auto* x = ops::TensorBuilder().shape({4, 8}).build();
  fusion.addInput(x);
  auto* a = ops::exp(x);
  auto* b = ops::neg(a);
  fusion.addOutput(b);
  a->axis(1)->parallelize(ParallelType::Vectorize);
  std::string msg = userError([&] { inlineAt(a, 2); });
  EXPECT_TRUE(has(msg, "is vectorized")) << msg;
  a->axis(1)->parallelize(ParallelType::Serial);
  a->axis(0)->parallelize(ParallelType::Unroll);
  EXPECT_EQ(maxInlinePosition(a, {.allow_unroll = false}), 0);
  EXPECT_EQ(maxInlinePosition(a), 2);
}

// IDs that do not map to the consumer's loop stop inlining.
TEST(Inlining, UnmappedConsumerAxis) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  auto* x = ops::TensorBuilder().shape({4, 8}).build();
  fusion.addInput(x);
  auto* a = ops::exp(x);
  auto* b = ops::neg(a);
  fusion.addOutput(b);
  b->reorder(std::vector<int64_t>{1, 0});
  std::string msg = userError([&] { inlineAt(a, 1); });
  EXPECT_TRUE(has(msg, "does not map to axis 0 of consumer")) << msg;
}

// computeAt replays the consumer's schedule onto the producer chain and inlines it.
TEST(Inlining, ComputeAtReplaysAndInlines) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  auto* x = ops::TensorBuilder().shape({4, 8}).build();
  fusion.addInput(x);
  auto* a = ops::exp(x);
  auto* b = ops::neg(a);
  auto* c = ops::abs(b);
  fusion.addOutput(c);
  c->merge(0)->split(0, 4);
  computeAt(a, c, 1);
  EXPECT_EQ(a->computeAtPosition(), 1);
  EXPECT_EQ(b->computeAtPosition(), 1);
  EXPECT_EQ(describeId(a, a->axis(0)), describeId(c, c->axis(0)));
  EXPECT_TRUE(has(userError([&] { computeAt(c, a, 1); }), "is not upstream"));
}

}  // namespace
}  // namespace loom::transform
