// SPDX-License-Identifier: Apache-2.0
// reshape and expand with symbolic sizes: the dynamic ReshapeOp, Symbolic IDs, the static path
// for constants, and errors.
#include "ops_test_utils.h"

namespace loom::ops::testing {
namespace {

using DynamicReshapeTest = OpsTest;

Scalar* scalarInput(ir::Fusion& f) {
  auto* s = ir::IrBuilder::symbolic(DataType::Int64);
  f.addInput(s);
  return s;
}

// A symbolic input extent makes a dynamic reshape: root mirrors the input, logical IDs are
// fresh (no transforms), Symbolic for symbolic sizes, Iteration/Broadcast for constants.
TEST_F(DynamicReshapeTest, SymbolicInput) {
  auto* x = input({-1, 6});
  auto* y = reshape(x, {-1, 2, 1, 3});
  ASSERT_TRUE(y->definition()->isA<ir::ReshapeOp>());
  auto* op = y->definition()->as<ir::ReshapeOp>();
  EXPECT_TRUE(op->isDynamic());
  ASSERT_EQ(y->root().size(), 2u);
  EXPECT_EQ(types(y), "sym,iter,bcast,iter");
  for (auto* id : y->logical()) EXPECT_EQ(id->definition(), nullptr);
  EXPECT_EQ(sizes(y), (std::vector<int64_t>{-1, 2, 1, 3}));
  EXPECT_TRUE(idsDisjoint({x, y}));
  verifyOutputs({y});
}

// Scalar sizes become the extents of Symbolic IDs, also with a constant input.
TEST_F(DynamicReshapeTest, ScalarSizes) {
  auto* x = input({4, 6});
  Scalar* n = scalarInput(fusion_);
  auto* y = reshape(x, {n, -1});
  EXPECT_EQ(y->logical()[0]->extent(), n);
  EXPECT_EQ(types(y), "sym,sym");
  EXPECT_TRUE(y->definition()->as<ir::ReshapeOp>()->isDynamic());
  verifyOutputs({y});
}

// Constant sizes and extents take the static path (Split/Merge, no Symbolic IDs).
TEST_F(DynamicReshapeTest, ConstantsAreStatic) {
  auto* y = reshape(input({2, 3, 4}), {ir::IrBuilder::index(6), -1});
  EXPECT_FALSE(y->definition()->as<ir::ReshapeOp>()->isDynamic());
  EXPECT_TRUE(y->logical()[0]->definition()->isA<ir::Merge>());
  verifyOutputs({y});
}

// The input's own extents give a copy.
TEST_F(DynamicReshapeTest, SameExtentsIsCopy) {
  auto* x = input({-1, -1});
  auto* y = reshape(x, {x->logical()[0]->extent(), x->logical()[1]->extent()});
  EXPECT_TRUE(y->definition()->isA<ir::LoadStoreOp>());
}

// Two -1s, negative sizes, a -1 next to a zero size and a non-dividing constant product are
// UserErrors, as in torch (symbolic products are checked at run time).
TEST_F(DynamicReshapeTest, Errors) {
  auto* x = input({-1, 6});
  EXPECT_HAS(userError([&] { reshape(x, {-1, -1}); }), "only one size may be -1");
  std::string msg = userError([&] { reshape(x, {3, -2}); });
  EXPECT_HAS(msg, "invalid size -2 at dimension 1");
  EXPECT_HAS(msg, x->toString());
  EXPECT_HAS(userError([&] { reshape(x, {0, -1}); }), "cannot infer the -1");
  // All constants: the static reshape's check.
  EXPECT_HAS(userError([&] {
               reshape(input({2, 3}), {ir::IrBuilder::index(4), -1});
             }),
             "cannot infer the -1");
}

// expand with a Scalar size gives a broadcast an expanded extent; a Symbolic dim stays
// Symbolic with the new size; -1 keeps a dim.
TEST_F(DynamicReshapeTest, ExpandScalarSizes) {
  auto* x = input({1, 4});
  Scalar* n = scalarInput(fusion_);
  auto* y = expand(x, {n, -1});
  EXPECT_TRUE(y->logical()[0]->isBroadcast());
  EXPECT_EQ(y->logical()[0]->expandedExtent(), n);
  EXPECT_EQ(sizes(y), (std::vector<int64_t>{-1, 4}));
  auto* r = reshape(input({-1}), {n});
  auto* e = expand(r, {5});
  EXPECT_EQ(types(e), "sym");
  EXPECT_EQ(sizes(e), (std::vector<int64_t>{5}));
  EXPECT_HAS(userError([&] { expand(x, {n, 5}); }), "cannot be expanded to 5");
  verifyOutputs({y, e});
}

// Pointwise ops prefer an Iteration operand over a Symbolic one for the output ID.
TEST_F(DynamicReshapeTest, PointwisePrefersIteration) {
  auto* x = input({-1});
  Scalar* n = scalarInput(fusion_);
  auto* r = reshape(input({-1}), {n});
  auto* y = add(r, x);
  EXPECT_EQ(types(y), "iter");
  EXPECT_EQ(y->logical()[0]->extent(), x->logical()[0]->extent());
  EXPECT_EQ(types(add(r, r)), "sym");
}

}  // namespace
}  // namespace loom::ops::testing
