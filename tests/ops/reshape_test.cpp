// SPDX-License-Identifier: Apache-2.0
// reshape: the merge/split structure from root to logical, -1 inference, size-1 dims, errors.
#include "ops_test_utils.h"

namespace loom::ops::testing {
namespace {

using ReshapeTest = OpsTest;

const ir::Expr* def(const IterDomain* id) { return id->definition(); }

// [2,3,4] -> [6,4]: the first two root IDs merge, the last passes through.
TEST_F(ReshapeTest, Merge) {
  auto* x = input({2, 3, 4});
  auto* y = reshape(x, {6, 4});
  EXPECT_EQ(sizes(y), (std::vector<int64_t>{6, 4}));
  ASSERT_TRUE(y->definition()->isA<ir::ReshapeOp>());
  ASSERT_EQ(y->root().size(), 3u);
  auto* m = def(y->logical()[0])->as<ir::Merge>();
  EXPECT_EQ(m->outer(), y->root()[0]);
  EXPECT_EQ(m->inner(), y->root()[1]);
  EXPECT_TRUE(y->logical()[0]->isRFactorProduct());
  EXPECT_EQ(y->logical()[1], y->root()[2]);
  EXPECT_TRUE(idsDisjoint({x, y}));
  verifyOutputs({y});
}

// [6,4] -> [2,3,4]: the first root ID splits (inner split by 3).
TEST_F(ReshapeTest, Split) {
  auto* y = reshape(input({6, 4}), {2, 3, 4});
  EXPECT_EQ(sizes(y), (std::vector<int64_t>{2, 3, 4}));
  auto* s = def(y->logical()[0])->as<ir::Split>();
  EXPECT_EQ(def(y->logical()[1]), s);
  EXPECT_EQ(s->in(), y->root()[0]);
  EXPECT_TRUE(s->innerSplit());
  EXPECT_EQ(s->factor()->constInt(), 3);
  verifyOutputs({y});
}

// [2,3,4] -> [4,6]: everything merges, then one split.
TEST_F(ReshapeTest, MergeAllThenSplit) {
  auto* y = reshape(input({2, 3, 4}), {4, 6});
  EXPECT_EQ(sizes(y), (std::vector<int64_t>{4, 6}));
  auto* s = def(y->logical()[1])->as<ir::Split>();
  EXPECT_EQ(s->factor()->constInt(), 6);
  auto* m = def(s->in())->as<ir::Merge>();
  EXPECT_EQ(m->inner(), y->root()[2]);
  EXPECT_TRUE(def(m->outer())->isA<ir::Merge>());
  verifyOutputs({y});
}

// One -1 is inferred from the element count.
TEST_F(ReshapeTest, InferSize) {
  auto* y = reshape(input({2, 3, 4}), {-1, 12});
  EXPECT_EQ(sizes(y), (std::vector<int64_t>{2, 12}));
  auto* z = reshape(input({8}), {2, -1, 2});
  EXPECT_EQ(sizes(z), (std::vector<int64_t>{2, 2, 2}));
  verifyOutputs({y, z});
}

// Size-1 input dims are squeezed first, size-1 output dims broadcast after.
TEST_F(ReshapeTest, SizeOneDims) {
  auto* x = input({2, 1, 3});
  auto* y = reshape(x, {3, 1, 2});
  EXPECT_EQ(sizes(y), (std::vector<int64_t>{3, 1, 2}));
  EXPECT_EQ(types(y), "iter,bcast,iter");
  auto* b = y->definition()->as<ir::BroadcastOp>();
  auto* r = b->in()->definition()->as<ir::ReshapeOp>();
  EXPECT_TRUE(r->in()->definition()->isA<ir::SqueezeOp>());
  // Only size-1 changes: no ReshapeOp at all.
  auto* z = reshape(x, {2, 3});
  EXPECT_TRUE(z->definition()->isA<ir::SqueezeOp>());
  auto* w = reshape(input({4}), {1, 4});
  EXPECT_TRUE(w->definition()->isA<ir::BroadcastOp>());
  verifyOutputs({y, z, w});
}

// The same shape gives a plain copy.
TEST_F(ReshapeTest, SameShape) {
  auto* y = reshape(input({2, 3}), {2, 3});
  EXPECT_TRUE(y->definition()->isA<ir::LoadStoreOp>());
}

// Element-count mismatches and two -1s are UserErrors; a symbolic input makes a dynamic reshape.
TEST_F(ReshapeTest, Errors) {
  auto* x = input({2, 3});
  std::string msg = userError([&] { reshape(x, {4, 2}); });
  EXPECT_HAS(msg, x->toString());
  EXPECT_HAS(msg, "[2, 3]");
  EXPECT_HAS(msg, "[4, 2]");
  EXPECT_HAS(userError([&] { reshape(x, {-1, -1}); }), "only one size may be -1");
  EXPECT_HAS(userError([&] { reshape(x, {-1, 4}); }), "cannot infer");
  auto* s = input({-1, 3});
  EXPECT_TRUE(
      reshape(s, std::vector<int64_t>{3, -1})->definition()->as<ir::ReshapeOp>()->isDynamic());
}

}  // namespace
}  // namespace loom::ops::testing
