// SPDX-License-Identifier: Apache-2.0
// ID graphs and replay around Resize (slice, pad, cat): a Resize output is an ID of its own, and
// replay does not go through it.
#include <gtest/gtest.h>

#include "loom/ops/ops.h"
#include "loom/transform/id_graph.h"
#include "loom/transform/replay.h"
#include "test_utils.h"

namespace loom::transform {
namespace {

using namespace test;

// The slice's root maps to its producer; its Resize output maps to neither its root ID nor the
// producer, but to its consumer; unsliced dims map straight through.
TEST(ResizeGraph, ResizeOutputIsNewId) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  auto* x = ops::TensorBuilder().shape({4, 8}).build();
  fusion.addInput(x);
  auto* s = ops::slice(x, {0, 2}, {4, 6});
  auto* e = ops::exp(s);
  fusion.addOutput(e);
  for (auto mode : {IdMappingMode::Exact, IdMappingMode::Permissive}) {
    IdGraph graph(fusion, mode);
    EXPECT_TRUE(graph.areMapped(x->logical()[1], s->root()[1]));
    EXPECT_FALSE(graph.areMapped(s->root()[1], s->logical()[1]));
    EXPECT_FALSE(graph.areMapped(x->logical()[1], e->logical()[1]));
    EXPECT_TRUE(graph.areMapped(s->logical()[1], e->logical()[1]));
    EXPECT_TRUE(graph.areMapped(x->logical()[0], e->logical()[0]));
  }
}

// Replaying a producer's split onto a slice consumer reaches the unsliced dim only; the sliced
// dim stays whole and no split is made on the Resize input.
TEST(ResizeGraph, ReplayStopsAtResize) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  auto* x = ops::TensorBuilder().shape({4, 8}).build();
  fusion.addInput(x);
  auto* a = ops::neg(x);
  auto* s = ops::slice(a, {1, 2}, {4, 6});
  auto* p = ops::pad(a, {1, 1});
  fusion.addOutput(s);
  fusion.addOutput(p);
  a->split(1, 2);
  a->split(0, 2);
  TransformReplay::replayCasP(s, a);
  EXPECT_TRUE(s->root()[1]->uses().size() == 1 && s->root()[1]->uses()[0]->isA<ir::Resize>());
  EXPECT_TRUE(s->root()[0]->uses().size() == 1 && s->root()[0]->uses()[0]->isA<ir::Resize>());
  TransformReplay::replayCasP(p, a);
  EXPECT_EQ(p->nDims(), 3);  // the unpadded dim 0 is split; the padded dim 1 is not
  EXPECT_NO_THROW(ir::verify(fusion));
  // The other way round, the producer takes the consumer's splits of its logical (Resize) IDs.
  auto* e = ops::exp(s);
  fusion.addOutput(e);
  e->split(1, 3);
  TransformReplay::replayPasC(s, e);
  EXPECT_EQ(s->nDims(), 3);
  EXPECT_NO_THROW(ir::verify(fusion));
}

// cat's padded inputs map to the output along every dim, the cat dim included.
TEST(ResizeGraph, CatMapsPaddedInputs) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  auto* x = ops::TensorBuilder().shape({2, 3}).build();
  auto* y = ops::TensorBuilder().shape({2, 5}).build();
  fusion.addInput(x);
  fusion.addInput(y);
  auto* c = ops::cat({x, y}, 1);
  fusion.addOutput(c);
  IdGraph exact(fusion, IdMappingMode::Exact);
  auto* op = c->definition()->as<ir::CatOp>();
  EXPECT_TRUE(exact.areMapped(op->in(0)->logical()[1], c->logical()[1]));
  EXPECT_TRUE(exact.areMapped(op->in(1)->logical()[1], c->logical()[1]));
  EXPECT_FALSE(exact.areMapped(x->logical()[1], c->logical()[1]));
  EXPECT_TRUE(exact.areMapped(x->logical()[0], c->logical()[0]));
}

}  // namespace
}  // namespace loom::transform
