// SPDX-License-Identifier: Apache-2.0
// Shape ops: broadcast, broadcastInDim, squeeze, unsqueeze, expand, permute, transpose, set.
#include "ops_test_utils.h"

namespace loom::ops::testing {
namespace {

using ShapeTest = OpsTest;

// broadcast inserts new extent-1 Broadcast IDs at the true positions.
TEST_F(ShapeTest, Broadcast) {
  auto* x = input({3, 4});
  auto* b = broadcast(x, {true, false, true, false});
  EXPECT_EQ(types(b), "bcast,iter,bcast,iter");
  EXPECT_EQ(sizes(b), (std::vector<int64_t>{1, 3, 1, 4}));
  EXPECT_TRUE(b->definition()->isA<ir::BroadcastOp>());
  EXPECT_TRUE(idsDisjoint({x, b}));
  EXPECT_EQ(broadcast(x, {false, false}), x);
  verifyOutputs({b});
}

// broadcast needs one false entry per input dimension.
TEST_F(ShapeTest, BroadcastError) {
  auto* x = input({3, 4});
  std::string msg = userError([&] { broadcast(x, {true, false}); });
  EXPECT_HAS(msg, x->toString());
  EXPECT_HAS(msg, "has rank 2");
}

// unsqueeze inserts one Broadcast dim; negative positions count from the end of the output.
TEST_F(ShapeTest, Unsqueeze) {
  auto* x = input({3, 4});
  EXPECT_EQ(types(unsqueeze(x, 0)), "bcast,iter,iter");
  EXPECT_EQ(types(unsqueeze(x, -1)), "iter,iter,bcast");
  EXPECT_HAS(userError([&] { unsqueeze(x, 3); }), "out of range");
}

// squeeze removes size-1 dims with a SqueezeOp whose flags index the input dims.
TEST_F(ShapeTest, Squeeze) {
  auto* x = input({1, 3, 1});
  auto* s = squeeze(x, {0, -1});
  EXPECT_EQ(sizes(s), (std::vector<int64_t>{3}));
  auto* op = s->definition()->as<ir::SqueezeOp>();
  EXPECT_EQ(op->isSqueezedDim(), (std::vector<bool>{true, false, true}));
  verifyOutputs({s});
}

// Squeezing a dimension that is not size 1 is a UserError naming the tensor and dimension.
TEST_F(ShapeTest, SqueezeError) {
  auto* x = input({1, 3});
  std::string msg = userError([&] { squeeze(x, {1}); });
  EXPECT_HAS(msg, x->toString());
  EXPECT_HAS(msg, "dimension 1");
  EXPECT_HAS(msg, "not a size-1");
  auto* e = expand(input({1}), {4});
  EXPECT_HAS(userError([&] { squeeze(e, {0}); }),
             "not a size-1 (broadcast) dimension: " + e->logical()[0]->toString());
  EXPECT_HAS(userError([&] { squeeze(e, {0}); }), "squeeze_expanded removes it");
  EXPECT_HAS(userError([&] { squeeze(x, {0, 0}); }), "appears twice");
  // squeeze_expanded removes expanded broadcasts only, never a dim of another size.
  EXPECT_HAS(userError([&] { squeeze(x, {1}, /*squeeze_expanded=*/true); }), "not a size-1");
}

// squeeze_expanded (nvFuser's): an expanded broadcast holds one value; squeezing keeps it.
TEST_F(ShapeTest, SqueezeExpanded) {
  auto* x = input({3, 1});
  auto* e = expand(x, {-1, 5});
  auto* s = squeeze(e, {1}, /*squeeze_expanded=*/true);
  EXPECT_EQ(sizes(s), (std::vector<int64_t>{3}));
  EXPECT_EQ(s->definition()->as<ir::SqueezeOp>()->isSqueezedDim(),
            (std::vector<bool>{false, true}));
  // A size-1 broadcast squeezes with or without the flag.
  EXPECT_EQ(sizes(squeeze(x, {1}, /*squeeze_expanded=*/true)), (std::vector<int64_t>{3}));
  verifyOutputs({s});
}

// expand gives Broadcast IDs an expanded extent; -1 keeps a dim; new leading dims are allowed.
TEST_F(ShapeTest, Expand) {
  auto* x = input({1, 4});
  auto* e = expand(x, {5, -1});
  EXPECT_EQ(types(e), "bcast,iter");
  EXPECT_EQ(sizes(e), (std::vector<int64_t>{5, 4}));
  EXPECT_EQ(e->logical()[0]->extent()->constInt(), 1);
  EXPECT_EQ(e->logical()[0]->expandedExtent()->constInt(), 5);
  EXPECT_TRUE(e->definition()->isA<ir::ExpandOp>());
  auto* lead = expand(x, {2, 3, 4});
  EXPECT_EQ(sizes(lead), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(types(lead), "bcast,bcast,iter");
  verifyOutputs({e, lead});
}

// expand of a non-broadcast dim to another size is a UserError.
TEST_F(ShapeTest, ExpandError) {
  auto* x = input({2, 4});
  std::string msg = userError([&] { expand(x, {3, 4}); });
  EXPECT_HAS(msg, x->toString());
  EXPECT_HAS(msg, "dimension 0");
  EXPECT_HAS(msg, "has size 2");
  EXPECT_HAS(userError([&] { expand(x, {4}); }), "only 1 sizes");
  EXPECT_NO_THROW(expand(x, {2, 4}));
  // A size known only at run time is not ignored: the output dim keeps the input's extent (one
  // dim to the schedulers) and the fusion requires the size asked for, which binding checks
  // (shape_constraints_test.cpp).
  auto* s = input({-1, -1});
  auto* e = expand(s, {5, -1});
  EXPECT_EQ(sizes(e), (std::vector<int64_t>{-1, -1}));
  EXPECT_EQ(e->logical()[0]->extent(), s->logical()[0]->extent());
  EXPECT_EQ(types(e), "iter,iter");
  ASSERT_EQ(fusion_.extentRequirements().size(), 1u);
  EXPECT_EQ(fusion_.extentRequirements()[0].value, s->logical()[0]->extent());
  EXPECT_EQ(fusion_.extentRequirements()[0].expected, 5);
  EXPECT_HAS(fusion_.extentRequirements()[0].what, "must already have the size 5");
  verifyOutputs({e});
}

// broadcastInDim maps input dims to output dims, adds broadcasts and expands them.
TEST_F(ShapeTest, BroadcastInDim) {
  auto* x = input({3});
  auto* y = broadcastInDim(x, {2, 3, 5}, {1});
  EXPECT_EQ(sizes(y), (std::vector<int64_t>{2, 3, 5}));
  EXPECT_EQ(types(y), "bcast,iter,bcast");
  auto* s = broadcastInDim(input({1, 4}), {6, 4}, {0, 1});
  EXPECT_EQ(sizes(s), (std::vector<int64_t>{6, 4}));
  verifyOutputs({y, s});
}

// broadcastInDim rejects size mismatches and non-increasing dims.
TEST_F(ShapeTest, BroadcastInDimErrors) {
  auto* x = input({3});
  EXPECT_HAS(userError([&] { broadcastInDim(x, {2, 4}, {1}); }), "has size 3");
  auto* y = input({3, 4});
  EXPECT_HAS(userError([&] { broadcastInDim(y, {4, 3, 2}, {1, 0}); }), "increasing");
  EXPECT_HAS(userError([&] { broadcastInDim(y, {3, 4}, {0}); }), "has rank 2");
}

// permute: root = fresh clones of the input, logical = root permuted, LoadStoreOp Set.
TEST_F(ShapeTest, Permute) {
  auto* x = input({2, 3, 4});
  auto* p = permute(x, {2, 0, 1});
  EXPECT_EQ(sizes(p), (std::vector<int64_t>{4, 2, 3}));
  ASSERT_EQ(p->root().size(), 3u);
  EXPECT_EQ(p->logical()[0], p->root()[2]);
  EXPECT_EQ(p->logical()[1], p->root()[0]);
  EXPECT_TRUE(p->definition()->isA<ir::LoadStoreOp>());
  EXPECT_TRUE(idsDisjoint({x, p}));
  auto* t = transpose(x, 0, -1);
  EXPECT_EQ(sizes(t), (std::vector<int64_t>{4, 3, 2}));
  verifyOutputs({p, t});
}

// permute needs a permutation of the dims.
TEST_F(ShapeTest, PermuteErrors) {
  auto* x = input({2, 3});
  EXPECT_HAS(userError([&] { permute(x, {0}); }), "has rank 2");
  EXPECT_HAS(userError([&] { permute(x, {0, 0}); }), "appears twice");
  EXPECT_HAS(userError([&] { permute(x, {0, 2}); }), "out of range");
}

// set copies with fresh IDs and no root; reductions of the input are dropped.
TEST_F(ShapeTest, Set) {
  auto* x = input({2, 3});
  auto* s = set(x);
  EXPECT_FALSE(s->domain()->hasRoot());
  EXPECT_EQ(sizes(s), (std::vector<int64_t>{2, 3}));
  auto* r = set(sum(x, {0}));
  EXPECT_EQ(types(r), "iter");
  verifyOutputs({s, r});
}

}  // namespace
}  // namespace loom::ops::testing
