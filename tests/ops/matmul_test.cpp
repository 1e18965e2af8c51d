// SPDX-License-Identifier: Apache-2.0
// matmul and linear: output shapes and IterTypes for torch's rank rules, and the UserErrors for
// operands that do not multiply (each names the tensors and what was expected).
#include "ops_test_utils.h"

namespace loom::ops::testing {
namespace {

using MatmulOpsTest = OpsTest;

TEST_F(MatmulOpsTest, ShapesFollowTorch) {
  EXPECT_EQ(sizes(matmul(input({4}), input({4}))), (std::vector<int64_t>{}));
  EXPECT_EQ(sizes(matmul(input({4}), input({4, 3}))), (std::vector<int64_t>{3}));
  EXPECT_EQ(sizes(matmul(input({2, 4}), input({4}))), (std::vector<int64_t>{2}));
  EXPECT_EQ(sizes(matmul(input({2, 4}), input({4, 3}))), (std::vector<int64_t>{2, 3}));
  TensorView* batched = matmul(input({5, 1, 2, 4}), input({6, 4, 3}));
  EXPECT_EQ(sizes(batched), (std::vector<int64_t>{5, 6, 2, 3}));
  EXPECT_EQ(types(batched), "iter,iter,iter,iter,red");
  TensorView* bcast = matmul(input({1, 2, 4}), input({1, 4, 3}));
  EXPECT_EQ(types(bcast), "bcast,iter,iter,red");
  EXPECT_EQ(sizes(matmul(input({4}), input({7, 4, 3}))), (std::vector<int64_t>{7, 3}));
  EXPECT_EQ(sizes(linear(input({2, 3, 8}), input({5, 8}))), (std::vector<int64_t>{2, 3, 5}));
  EXPECT_EQ(sizes(linear(input({2, 8}), input({8}), input({}))), (std::vector<int64_t>{2}));
  TensorView* lin = linear(input({8}, DataType::BFloat16), input({5, 8}, DataType::BFloat16),
                           input({5}, DataType::BFloat16));
  EXPECT_EQ(sizes(lin), (std::vector<int64_t>{5}));
  EXPECT_EQ(lin->dtype(), DataType::BFloat16);
  verifyOutputs({batched, bcast, lin});
}

// As nvFuser's, the output's logical domain ends with the contracted dim as a Reduction ID of
// its extent ([.., m, n, r{k}]); rank() and the sizes users see leave it out.
TEST_F(MatmulOpsTest, OutputEndsWithTheContractedReductionId) {
  auto last = [](const TensorView* tv) { return tv->logical().back(); };
  TensorView* lin = linear(input({2, 3, 8}), input({5, 8}));
  EXPECT_EQ(types(lin), "iter,iter,iter,red");
  EXPECT_EQ(lin->rank(), 3);
  EXPECT_EQ(last(lin)->extent()->constInt(), 8);
  EXPECT_EQ(types(linear(input({2, 8}), input({8}))), "iter,red");
  TensorView* dot = matmul(input({4}), input({4}));
  EXPECT_EQ(types(dot), "red");
  EXPECT_EQ(dot->rank(), 0);
  EXPECT_EQ(types(matmul(input({4}), input({7, 4, 3}))), "iter,iter,red");
  EXPECT_EQ(types(matmul(input({2, 4}), input({4}))), "iter,red");
  // A size-1 k: the extent of the operand whose k is not a broadcast, still 1.
  EXPECT_EQ(last(matmul(input({2, 1}), input({1, 3})))->extent()->constInt(), 1);
  // A symbolic k: the operand's extent.
  TensorView* x = input({-1, -1});
  TensorView* sym = linear(x, input({5, -1}));
  EXPECT_EQ(last(sym)->extent(), x->logical()[1]->extent());
  // A chain reads the user-visible dims: the output's r{k} is no operand dim of the next one.
  TensorView* chained = matmul(matmul(input({2, 4}), input({4, 3})), input({3, 6}));
  EXPECT_EQ(sizes(chained), (std::vector<int64_t>{2, 6}));
  EXPECT_EQ(last(chained)->extent()->constInt(), 3);
  // nvFuser's 3-D weight: the stacked linear's r{k} stays on the inner linear's output.
  EXPECT_EQ(sizes(linear(input({3, 8}), input({2, 5, 8}))), (std::vector<int64_t>{2, 3, 5}));
  verifyOutputs({lin, dot, sym, chained});
}

TEST_F(MatmulOpsTest, OperandsThatDoNotMultiplyAreUserErrors) {
  TensorView* a = input({2, 4});
  TensorView* b = input({5, 3});
  EXPECT_HAS(userError([&] { matmul(a, b); }),
             "matmul: the contracted sizes differ: T0 [2, 4] has 4 in its last dim, T1 [5, 3] "
             "has 5 in its second-to-last dim");
  EXPECT_HAS(userError([&] { matmul(input({4}), input({5})); }), "has 5 in its only dim");
  EXPECT_HAS(userError([&] { matmul(input({}), input({5})); }),
             "matmul: both operands need at least one dim");
  EXPECT_HAS(userError([&] { matmul(input({2, 3, 4}), input({5, 4, 3})); }), "matmul: sizes of T");
  EXPECT_HAS(userError([&] {
               matmul(input({2, 4}, DataType::Int64), input({4, 3}, DataType::Int64));
             }),
             "is i64; matmul multiplies f32, bf16 or f16 tensors (cast it first)");
  EXPECT_HAS(userError([&] {
               matmul(input({2, 4}), input({4, 3}, DataType::BFloat16));
             }),
             "is f32 but T");
  EXPECT_HAS(userError([&] {
               linear(input({2, 4}), input({3, 5}));
             }),
             "linear: the contracted sizes differ");
  // nvFuser's 3-D weight [groups, out, in] is a linear per group (its bias [groups, out]); a
  // 4-D one is none of the forms.
  EXPECT_HAS(userError([&] {
               linear(input({2, 4}), input({5, 2, 3, 4}));
             }),
             "must be [out_features, in_features], [in_features] or [groups, out_features, "
             "in_features]");
  EXPECT_HAS(userError([&] {
               linear(input({2, 4}), input({2, 3, 4}), input({6}));
             }),
             "must be [groups, out_features]");
  EXPECT_HAS(userError([&] {
               linear(input({2, 4}), input({3, 4}), input({5}));
             }),
             "must have one element per output feature (3, the rows of T");
  EXPECT_HAS(userError([&] {
               linear(input({2, 4}), input({4}), input({3}));
             }),
             "must be 0-D for the 1-D weight");
}

}  // namespace
}  // namespace loom::ops::testing
