// SPDX-License-Identifier: Apache-2.0
// Pairwise logical maps and whole-fusion exact / permissive ID graphs.
#include <gtest/gtest.h>

#include "loom/ops/ops.h"
#include "loom/transform/id_graph.h"
#include "loom/ir/logical_map.h"
#include "loom/transform/replay.h"
#include "test_utils.h"

namespace loom::transform {
namespace {

using namespace test;

// The logical map skips producer reductions and consumer new broadcasts, and goes through the
// root of a permute.
TEST(LogicalMap, SkipsReductionsAndNewBroadcasts) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  auto* x = ops::TensorBuilder().shape({4, 8}).build();
  fusion.addInput(x);
  auto* s = ops::sum(x, {1});
  auto* b = ops::broadcast(s, {true, false});
  auto* p = ops::permute(x, {1, 0});
  fusion.addOutput(b);
  fusion.addOutput(p);
  auto sb = ir::pairwiseLogicalMap(s, b);
  ASSERT_EQ(sb.size(), 1u);
  EXPECT_EQ(sb[0].first, s->logical()[0]);
  EXPECT_EQ(sb[0].second, b->logical()[1]);
  auto xs = ir::pairwiseLogicalMap(x, s);
  ASSERT_EQ(xs.size(), 2u);
  EXPECT_TRUE(xs[1].second->isReduction());
  auto xp = ir::producerToConsumerMap(x, p);
  EXPECT_EQ(xp.at(x->logical()[0]), p->domain()->maybeRoot()[0]);
  EXPECT_TRUE(has(userError([&] { ir::pairwiseLogicalMap(b, s); }), "is not an input"));
}

// Exact maps producer/consumer IDs and equal splits of mapped IDs, never broadcast to iteration;
// permissive also maps broadcasts to what they resolve.
TEST(IdGraph, ExactAndPermissive) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  auto* x = ops::TensorBuilder().shape({4, 8}).build();
  auto* y = ops::TensorBuilder().shape({4, 1}).build();
  fusion.addInput(x);
  fusion.addInput(y);
  auto* a = ops::exp(x);
  auto* z = ops::add(a, y);
  fusion.addOutput(z);
  z->split(1, 4);
  TransformReplay::replayPasC(a, z);
  IdGraph exact(fusion, IdMappingMode::Exact);
  EXPECT_TRUE(exact.areMapped(x->logical()[1], z->logical()[1]));
  EXPECT_TRUE(exact.areMapped(a->axis(2), z->axis(2)));
  EXPECT_FALSE(exact.areMapped(a->axis(1), z->axis(2)));
  EXPECT_FALSE(exact.areMapped(y->logical()[1], z->logical()[1]));
  IdGraph permissive(fusion, IdMappingMode::Permissive);
  EXPECT_TRUE(permissive.areMapped(y->logical()[1], z->logical()[1]));
  EXPECT_LT(permissive.numSets(), exact.numSets());
  EXPECT_GE(exact.disjointSet(z->axis(1)).size(), 2u);
}

// mapIds adds a fact the fusion cannot show and closes the graph: two reshapes of unrelated
// inputs map through their merges and splits once the inputs are mapped.
TEST(IdGraph, MapIdsClosesOverTransforms) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  auto* x = ops::TensorBuilder().shape({10, 20}).build();
  auto* y = ops::TensorBuilder().shape({10, 20}).build();
  fusion.addInput(x);
  fusion.addInput(y);
  auto* rx = ops::reshape(x, std::vector<int64_t>{20, 10});
  auto* ry = ops::reshape(y, std::vector<int64_t>{20, 10});
  fusion.addOutput(rx);
  fusion.addOutput(ry);
  IdGraph exact(fusion, IdMappingMode::Exact);
  const int64_t before = exact.numSets();
  EXPECT_FALSE(exact.areMapped(rx->logical()[0], ry->logical()[0]));
  EXPECT_TRUE(exact.mapIds(x->logical()[0], y->logical()[0]));
  // One input dim is not enough for the merge of both.
  EXPECT_FALSE(exact.areMapped(rx->logical()[0], ry->logical()[0]));
  EXPECT_TRUE(exact.mapIds(x->logical()[1], y->logical()[1]));
  EXPECT_FALSE(exact.mapIds(y->logical()[1], x->logical()[1]));  // mapped already
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(exact.areMapped(rx->logical()[i], ry->logical()[i]));
    EXPECT_TRUE(exact.areMapped(rx->root()[i], ry->root()[i]));
  }
  const auto* mx = rx->root()[0]->uses().at(0)->as<ir::Merge>();
  const auto* my = ry->root()[0]->uses().at(0)->as<ir::Merge>();
  EXPECT_TRUE(exact.areMapped(mx->out(), my->out()));
  EXPECT_LT(exact.numSets(), before);

  Fusion other;
  FusionGuard other_guard(&other);
  auto* z = ops::TensorBuilder().shape({10}).build();
  other.addInput(z);
  EXPECT_TRUE(has(userError([&] { exact.mapIds(x->logical()[0], z->logical()[0]); }),
                  "is not an IterDomain of this graph's fusion"));
}

}  // namespace
}  // namespace loom::transform
