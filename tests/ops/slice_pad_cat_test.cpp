// SPDX-License-Identifier: Apache-2.0
// slice, pad and cat: the Resize structure from root to logical, bound normalization, shapes,
// dtype promotion and errors.
#include "loom/ir/scalar_math.h"
#include "ops_test_utils.h"

namespace loom::ops::testing {
namespace {

using SlicePadCatTest = OpsTest;

const ir::Resize* resizeOf(const IterDomain* id) {
  return id->definition() != nullptr ? id->definition()->dynCast<ir::Resize>() : nullptr;
}

// A slice's root mirrors the input; a sliced dim is Resize(root, -start, stop - extent), an
// unsliced dim is its root ID.
TEST_F(SlicePadCatTest, SliceStructure) {
  auto* x = input({4, 6});
  auto* y = slice(x, {0, 1}, {4, 5});
  ASSERT_TRUE(y->definition()->isA<ir::SliceOp>());
  EXPECT_EQ(y->definition()->as<ir::SliceOp>()->in(), x);
  EXPECT_EQ(sizes(y), (std::vector<int64_t>{4, 4}));
  ASSERT_EQ(y->root().size(), 2u);
  EXPECT_EQ(y->logical()[0], y->root()[0]);
  const ir::Resize* r = resizeOf(y->logical()[1]);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->in(), y->root()[1]);
  EXPECT_EQ(r->left()->constInt(), -1);
  EXPECT_EQ(r->right()->constInt(), -1);
  EXPECT_TRUE(y->logical()[1]->isRFactorProduct());
  EXPECT_EQ(types(y), "iter,iter");
  EXPECT_TRUE(idsDisjoint({x, y}));
  verifyOutputs({y});
}

// Bounds are normalized as Python slicing: negative bounds wrap, then clamp to [0, extent];
// stop < start gives an empty dim.
TEST_F(SlicePadCatTest, SliceNormalizesBounds) {
  auto* x = input({10});
  EXPECT_EQ(sizes(slice(x, {-3}, {10})), (std::vector<int64_t>{3}));
  EXPECT_EQ(sizes(slice(x, {-100}, {2})), (std::vector<int64_t>{2}));
  EXPECT_EQ(sizes(slice(x, {7}, {100})), (std::vector<int64_t>{3}));
  auto* empty = slice(x, {6}, {2});
  EXPECT_EQ(sizes(empty), (std::vector<int64_t>{0}));
  EXPECT_EQ(resizeOf(empty->logical()[0])->left()->constInt(), -6);
  EXPECT_EQ(sizes(slice(x, {3}, {-1})), (std::vector<int64_t>{6}));
  verifyOutputs({empty});
}

// The one-dim overload slices only `dim` (negative wraps); a slice of everything is a copy.
TEST_F(SlicePadCatTest, SliceOneDimAndWhole) {
  auto* x = input({4, -1});
  auto* y = slice(x, -2, 1, 3);
  EXPECT_EQ(sizes(y), (std::vector<int64_t>{2, -1}));
  EXPECT_EQ(y->logical()[1], y->root()[1]);
  auto* whole = slice(x, 0, 0, 4);
  EXPECT_TRUE(whole->definition()->isA<ir::LoadStoreOp>());
  verifyOutputs({y, whole});
}

// Scalar bounds are normalized by scalar math (where/max/min) evaluated at run time.
TEST_F(SlicePadCatTest, SliceScalarBounds) {
  auto* x = input({-1, 8});
  auto* start = ir::IrBuilder::symbolic(DataType::Int64);
  fusion_.addInput(start);
  auto* y = slice(x, {start, 2}, {x->logical()[0]->extent(), 8});
  EXPECT_EQ(sizes(y), (std::vector<int64_t>{-1, 6}));
  const ir::Resize* r = resizeOf(y->logical()[0]);
  ASSERT_NE(r, nullptr);
  EXPECT_FALSE(r->left()->isConst());
  EXPECT_TRUE(r->right()->isConstInt(0));  // the stop is the extent itself
  verifyOutputs({y});
}

// Steps other than 1, and bound lists of the wrong length, are UserErrors naming the tensor.
TEST_F(SlicePadCatTest, SliceErrors) {
  auto* x = input({4, 6});
  std::string msg = userError([&] { slice(x, {0, 0}, {4, 6}, {1, 2}); });
  EXPECT_HAS(msg, x->toString());
  EXPECT_HAS(msg, "step 2 at dimension 1");
  EXPECT_HAS(userError([&] { slice(x, 1, 0, 6, -1); }), "only step 1");
  msg = userError([&] { slice(x, {0}, {4}); });
  EXPECT_HAS(msg, "has rank 2 but 1 starts and 1 stops");
  // A floating bound is taken (checked integral at run time: FloatSizes in runtime/); a Bool
  // one is not.
  auto* b = ir::IrBuilder::symbolic(DataType::Bool);
  EXPECT_HAS(userError([&] { slice(x, 0, Size(b), 4); }),
             "must be an integer or a floating value that is one");
}

// Pad widths pair up from the last dim backward; fewer pairs leave leading dims alone; the
// value is cast to x's dtype.
TEST_F(SlicePadCatTest, PadStructure) {
  auto* x = input({2, 3, 4}, DataType::BFloat16);
  auto* y = pad(x, {1, 2, 0, 0}, 1.5);
  ASSERT_TRUE(y->definition()->isA<ir::PadOp>());
  auto* p = y->definition()->as<ir::PadOp>();
  EXPECT_EQ(p->in(), x);
  EXPECT_EQ(p->value()->dtype(), DataType::BFloat16);
  EXPECT_EQ(y->dtype(), DataType::BFloat16);
  EXPECT_EQ(sizes(y), (std::vector<int64_t>{2, 3, 7}));
  EXPECT_EQ(y->logical()[0], y->root()[0]);
  EXPECT_EQ(y->logical()[1], y->root()[1]);
  const ir::Resize* r = resizeOf(y->logical()[2]);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->left()->constInt(), 1);
  EXPECT_EQ(r->right()->constInt(), 2);
  auto* z = pad(x, {0, 0, 3, 1});
  EXPECT_EQ(sizes(z), (std::vector<int64_t>{2, 7, 4}));
  EXPECT_EQ(z->definition()->as<ir::PadOp>()->value()->constDouble(), 0.0);
  verifyOutputs({y, z});
}

// Negative widths crop; all-zero widths give a copy; Scalar widths give symbolic extents.
TEST_F(SlicePadCatTest, PadNegativeZeroAndScalar) {
  auto* x = input({5});
  EXPECT_EQ(sizes(pad(x, {-1, -2})), (std::vector<int64_t>{2}));
  EXPECT_TRUE(pad(x, {0, 0})->definition()->isA<ir::LoadStoreOp>());
  auto* w = ir::IrBuilder::symbolic(DataType::Int64);
  fusion_.addInput(w);
  auto* y = pad(x, {w, 1});
  EXPECT_EQ(sizes(y), (std::vector<int64_t>{-1}));
  verifyOutputs({y});
}

// Odd width counts, more pairs than dims, a crop below zero and a tensor value are UserErrors.
TEST_F(SlicePadCatTest, PadErrors) {
  auto* x = input({4, 6});
  EXPECT_HAS(userError([&] { pad(x, {1}); }), "(left, right) pairs");
  EXPECT_HAS(userError([&] { pad(x, {1, 1, 1, 1, 1, 1}); }), "at most one pair per dimension");
  std::string msg = userError([&] { pad(x, {-4, -3}); });
  EXPECT_HAS(msg, x->toString());
  EXPECT_HAS(msg, "dimension 1");
  EXPECT_HAS(msg, "negative size -1");
  EXPECT_HAS(userError([&] { pad(x, {1, 1}, input({1})); }), "must be a number or a Scalar");
}

// cat pads each input to the full extent along dim (input k at offset sum of the previous
// extents) and concatenates them with one CatOp.
TEST_F(SlicePadCatTest, CatStructure) {
  auto* a = input({2, 3});
  auto* b = input({2, 4});
  auto* c = input({2, 1});
  auto* y = cat({a, b, c}, -1);
  ASSERT_TRUE(y->definition()->isA<ir::CatOp>());
  auto* op = y->definition()->as<ir::CatOp>();
  EXPECT_EQ(op->dim(), 1);
  ASSERT_EQ(op->numInputs(), 3u);
  EXPECT_EQ(sizes(y), (std::vector<int64_t>{2, 8}));
  EXPECT_EQ(types(y), "iter,iter");
  const int64_t lefts[] = {0, 3, 7};
  const int64_t rights[] = {5, 1, 0};
  for (size_t k = 0; k < 3; ++k) {
    auto* padded = op->in(k);
    EXPECT_TRUE(padded->definition()->isA<ir::PadOp>());
    EXPECT_EQ(sizes(padded), (std::vector<int64_t>{2, 8}));
    const ir::Resize* r = op->inputResize(k);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->left()->constInt(), lefts[k]);
    EXPECT_EQ(r->right()->constInt(), rights[k]);
  }
  verifyOutputs({y});
}

// Inputs are cast to their common dtype (no half widening); one input gives a copy.
TEST_F(SlicePadCatTest, CatPromotesAndSingleInput) {
  auto* a = input({2}, DataType::Float16);
  auto* b = input({3}, DataType::Float16);
  EXPECT_EQ(cat({a, b}, 0)->dtype(), DataType::Float16);
  auto* i = input({3}, DataType::Int32);
  auto* y = cat({a, i}, 0);
  EXPECT_EQ(y->dtype(), DataType::Float16);
  auto* one = cat({i}, 0);
  EXPECT_TRUE(one->definition()->isA<ir::LoadStoreOp>());
  verifyOutputs({y, one});
}

// Symbolic extents give a symbolic total; the other dims keep their extents.
TEST_F(SlicePadCatTest, CatSymbolic) {
  auto* a = input({-1, 4});
  auto* b = input({3, 4});
  auto* y = cat({a, b}, 0);
  EXPECT_EQ(sizes(y), (std::vector<int64_t>{-1, 4}));
  verifyOutputs({y});
}

// Mismatched ranks or constant sizes, an empty list and 0-D inputs are UserErrors.
TEST_F(SlicePadCatTest, CatErrors) {
  auto* a = input({2, 3});
  auto* b = input({4, 3});
  std::string msg = userError([&] { cat({a, b}, 1); });
  EXPECT_HAS(msg, a->toString());
  EXPECT_HAS(msg, b->toString());
  EXPECT_HAS(msg, "do not match at dimension 0 (2 vs 4); only dimension 1 may differ");
  EXPECT_HAS(userError([&] { cat({a, input({3})}, 0); }), "every input must have the same rank");
  EXPECT_HAS(userError([&] { cat({}, 0); }), "at least one tensor");
  EXPECT_HAS(userError([&] { cat({input({})}, 0); }), "zero-dimensional");
  EXPECT_HAS(userError([&] { cat({a, b}, 2); }), "dimension 2 is out of range");
}

}  // namespace
}  // namespace loom::ops::testing
