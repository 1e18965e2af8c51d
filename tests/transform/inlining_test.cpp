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
// broadcasts of the statistics inline fully (their broadcast ID maps permissively to the I1 the
// subtraction / division resolves it to); pointwise tensors between them inline fully.
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
  EXPECT_EQ(bm->computeAtPosition(), 2);  // [I0, B1]: B1 resolves to d's I1
  EXPECT_EQ(d->computeAtPosition(), 2);
  EXPECT_EQ(d->maxProducerPosition(), 2);
  EXPECT_EQ(e->computeAtPosition(), 1);
  EXPECT_EQ(s->computeAtPosition(), 1);
  EXPECT_EQ(bs->computeAtPosition(), 2);  // [I0, B1]: B1 resolves to y's I1
  EXPECT_EQ(y->maxProducerPosition(), 2);
  std::string msg = userError([&] { inlineAt(e, 2); });
  EXPECT_TRUE(has(msg, "reads the reduction's result")) << msg;
}

// layer_norm from ops: exact positions per tensor, each also legal (not above the recomputed
// maximum).
TEST(Inlining, LayerNormPositions) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  auto* x = ops::TensorBuilder().shape({4, 8}).build();
  fusion.addInput(x);
  auto r = ops::layerNorm(x, 1, nullptr, nullptr);
  fusion.addOutput(r.y);
  inlineMost(fusion);
  auto* w = x->uses().front()->as<WelfordOp>();
  TensorView* avg = w->outAvg();                                      // [I0, R1]
  TensorView* m2 = w->outM2();                                        // [I0, R1]
  TensorView* var = m2->uses().front()->output(0)->as<TensorView>();  // m2 / N: [I0]
  TensorView* mean = r.mean;                                          // broadcast(avg): [I0, B1]
  TensorView* centered = mean->uses().front()->output(0)->as<TensorView>();  // x - mean
  TensorView* bvar = var->uses().front()->output(0)->as<TensorView>();       // [I0, B1]
  TensorView* veps = bvar->uses().front()->output(0)->as<TensorView>();      // var + eps
  ASSERT_TRUE(mean->definition()->isA<BroadcastOp>());
  ASSERT_TRUE(bvar->definition()->isA<BroadcastOp>());
  ASSERT_EQ(r.rstd->definition()->input(0), veps);
  // Welford outputs stop before their reduction axis; N has no uses.
  EXPECT_EQ(avg->computeAtPosition(), 1);
  EXPECT_EQ(m2->computeAtPosition(), 1);
  EXPECT_EQ(w->outN()->computeAtPosition(), 0);
  // var has only I0, all of it shared with bvar.
  EXPECT_EQ(var->computeAtPosition(), 1);
  // The broadcasts' B1 resolves to the I1 of the normalization, so everything after the
  // statistics inlines fully into the output's loops.
  for (TensorView* tv : {mean, centered, bvar, veps, r.rstd}) {
    EXPECT_EQ(tv->computeAtPosition(), 2) << tv->toString();
  }
  EXPECT_EQ(bvar->maxProducerPosition(), 1);
  EXPECT_EQ(r.y->computeAtPosition(), 0);
  EXPECT_EQ(r.y->maxProducerPosition(), 2);
  EXPECT_EQ(x->computeAtPosition(), 0);  // fusion input
  for (TensorView* tv : fusion.allTvs()) {
    EXPECT_LE(tv->computeAtPosition(), maxInlinePosition(tv)) << tv->toString();
  }
}

// A producer whose loop is ordered differently from a consumer's shares only the common prefix
// that maps; a producer with two consumers shares only what maps into both.
TEST(Inlining, ReorderedConsumerSharesCommonPrefix) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  auto* x = ops::TensorBuilder().shape({4, 6, 8}).build();
  fusion.addInput(x);
  auto* a = ops::exp(x);
  auto* b = ops::neg(a);
  fusion.addOutput(b);
  b->reorder(std::vector<int64_t>{0, 2, 1});  // [I0, I2, I1]
  EXPECT_EQ(maxInlinePosition(a), 1);
  std::string msg = userError([&] { inlineAt(a, 2); });
  EXPECT_TRUE(has(msg, "axis 1 (")) << msg;
  EXPECT_TRUE(has(msg, "does not map to axis 1 of consumer")) << msg;
  inlineMost(fusion);
  EXPECT_EQ(a->computeAtPosition(), 1);
  EXPECT_EQ(b->maxProducerPosition(), 1);

  auto* c = ops::abs(a);  // a second consumer, fully reordered: [I2, I1, I0]
  fusion.addOutput(c);
  c->reorder(std::vector<int64_t>{2, 1, 0});
  EXPECT_EQ(maxInlinePosition(a), 0);
}

// A consumer may put its own broadcast loop IDs between the producer's IDs: the producer's
// position maps to the consumer position after its last matched ID.
TEST(Inlining, ConsumerBroadcastsAreSkipped) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  auto* x = ops::TensorBuilder().shape({4, 8}).build();
  auto* y = ops::TensorBuilder().shape({3, 4, 8}).build();
  fusion.addInput(x);
  fusion.addInput(y);
  auto* a = ops::exp(x);                                // [I0, I1]
  auto* b = ops::broadcast(a, {true, false, false});    // [B, I0, I1]
  auto* c = ops::add(y, b);                             // [I, I0, I1]
  fusion.addOutput(c);
  inlineMost(fusion);
  EXPECT_EQ(a->computeAtPosition(), 2);
  EXPECT_EQ(b->maxProducerPosition(), 3);  // a's I1 is b's axis 2
  EXPECT_EQ(b->computeAtPosition(), 3);    // B resolves to y's leading I
  EXPECT_EQ(c->maxProducerPosition(), 3);
}

// A broadcast resolved by its consumer is shared with it; one still a broadcast in the consumer
// maps exactly and is shared too, except when that consumer is a fusion output (its store would
// run once per element of the resolving loop, and never when it is empty); a broadcast whose
// consumer splits the resolving ID is not shared.
TEST(Inlining, BroadcastResolvedByConsumer) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  auto* x = ops::TensorBuilder().shape({4, 8}).build();
  fusion.addInput(x);
  auto* s = ops::sum(x, {1});                      // [I0, R1]
  auto* bs = ops::broadcast(s, {false, true});     // [I0, B1]
  auto* y = ops::add(x, bs);                       // [I0, I1]: resolves B1
  auto* z = ops::neg(bs);                          // [I0, B1]: keeps it
  fusion.addOutput(y);
  fusion.addOutput(z);
  EXPECT_EQ(maxInlinePosition(bs), 1);  // z's B1 would share y's I1 loop
  inlineMost(fusion);
  EXPECT_EQ(s->computeAtPosition(), 1);
  EXPECT_EQ(bs->computeAtPosition(), 1);
  EXPECT_EQ(y->maxProducerPosition(), 1);
  EXPECT_EQ(z->maxProducerPosition(), 1);
  // Without the output the broadcast is shared with the consumer that resolves it.
  {
    Fusion f3;
    FusionGuard g3(&f3);
    auto* x3 = ops::TensorBuilder().shape({4, 8}).build();
    f3.addInput(x3);
    auto* bs3 = ops::broadcast(ops::sum(x3, {1}), {false, true});
    auto* y3 = ops::add(x3, bs3);
    f3.addOutput(ops::add(y3, ops::neg(bs3)));
    inlineMost(f3);
    EXPECT_EQ(bs3->computeAtPosition(), 2);
  }

  Fusion f2;
  FusionGuard g2(&f2);
  auto* x2 = ops::TensorBuilder().shape({4, 8}).build();
  f2.addInput(x2);
  auto* bs2 = ops::broadcast(ops::sum(x2, {1}), {false, true});
  auto* y2 = ops::add(x2, bs2);
  f2.addOutput(y2);
  y2->split(1, 4);  // [I0, I1/4, 4]: B1 no longer lines up with one loop ID
  EXPECT_EQ(maxInlinePosition(bs2), 1);
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

// One caller-built permissive graph serves several inlining calls and gives the positions the
// graph-building overloads give; the same graph still reports illegal positions.
TEST(Inlining, SharedGraphOverloadsMatch) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  auto* in = ops::TensorBuilder().shape({4, 8}).build();
  fusion.addInput(in);
  auto* x = ops::set(in);
  auto* m = ops::max(x, {1});
  auto* bm = ops::broadcast(m, {false, true});
  auto* d = ops::sub(x, bm);
  auto* e = ops::exp(d);
  fusion.addOutput(e);
  const IdGraph permissive(fusion, IdMappingMode::Permissive);
  for (TensorView* tv : {x, m, bm, d}) {
    EXPECT_EQ(maxInlinePosition(tv, permissive), maxInlinePosition(tv)) << tv->toString();
  }
  EXPECT_EQ(maxInlinePosition(x, permissive), 1);
  inlineMost({bm, d}, permissive);
  EXPECT_EQ(bm->computeAtPosition(), 2);
  EXPECT_EQ(d->computeAtPosition(), 2);
  inlineAt(m, 1, permissive);
  EXPECT_EQ(m->computeAtPosition(), 1);
  std::string msg = userError([&] { inlineAt(x, 2, permissive); });
  EXPECT_TRUE(has(msg, "reads the reduction's result")) << msg;
  EXPECT_EQ(x->computeAtPosition(), 0);
  inlineAt(x, -1, permissive, /*best_effort=*/true);
  EXPECT_EQ(x->computeAtPosition(), 1);
}

}  // namespace
}  // namespace loom::transform
