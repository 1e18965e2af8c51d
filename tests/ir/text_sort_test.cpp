// SPDX-License-Identifier: Apache-2.0
// argsort, topk, segment_set and stride_order in the IR and the .fus text form (issue 36): exact
// round trips and the printed forms, the verifier's and the ops' errors (each naming the tensor
// or argument), and the reference evaluator's check of topk's k against the dim's size.
#include <gtest/gtest.h>

#include "ir/text_test_util.h"
#include "loom/eval/reference_evaluator.h"
#include "loom/ops/ops.h"

namespace loom::ir {
namespace {

#define EXPECT_HAS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

using test::parseError;

template <typename F>
std::string userError(F&& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.reason();
  }
  return "(no error)";
}

TensorView* input(Fusion& f, std::vector<int64_t> shape, DataType dt = DataType::Float32) {
  TensorView* tv = ops::TensorBuilder().shape(std::move(shape)).dtype(dt).build();
  f.addInput(tv);
  return tv;
}

TEST(TextSortTest, RoundTripAndPrintedForms) {
  Fusion f;
  FusionGuard g(&f);
  TensorView* x = input(f, {-1, 8});
  Scalar* k = IrBuilder::symbolic(DataType::Int64);
  f.addInput(k);
  f.addOutput(ops::argsort(x, -1));
  f.addOutput(ops::argsort(x, 0, /*descending=*/true));
  ops::TopKResult a = ops::topk(x, 3, 1);
  ops::TopKResult b = ops::topk(x, k, 0, /*largest=*/false);
  for (TensorView* t : {a.values, a.indices, b.values, b.indices}) f.addOutput(t);
  f.addOutput(ops::segmentSet(ops::exp(x)));
  f.addOutput(ops::strideOrder(x, {0, 1}));
  test::expectRoundTrip(f);
  const std::string text = printFusion(f);
  EXPECT_HAS(text, " = argsort(T0, dim=1, descending=false)");
  EXPECT_HAS(text, " = argsort(T0, dim=0, descending=true)");
  EXPECT_HAS(text, " = topk(T0, 3, dim=1, largest=true)");
  EXPECT_HAS(text, " = topk(T0, s");
  EXPECT_HAS(text, ", dim=0, largest=false)");
  EXPECT_HAS(text, " = segment_set(T");
  auto parsed = parseFusion(text, "sort.fus");
  const Expr* tk = parsed->outputs()[2]->definition();
  ASSERT_TRUE(tk->isA<TopKOp>());
  EXPECT_EQ(tk->as<TopKOp>()->dim(), 1);
  EXPECT_TRUE(tk->as<TopKOp>()->largest());
  EXPECT_EQ(tk->as<TopKOp>()->k()->constInt(), 3);
  EXPECT_TRUE(parsed->outputs()[1]->definition()->as<ArgsortOp>()->descending());
  const auto* ss = parsed->outputs()[6]->definition()->as<LoadStoreOp>();
  EXPECT_TRUE(ss->isSegmentBoundary());
  EXPECT_FALSE(parsed->outputs()[7]->definition()->as<LoadStoreOp>()->isSegmentBoundary());
  // stride_order [0, 1]: dim 0 innermost, so the allocation lists dim 1 first.
  const auto* so = parsed->outputs()[7]->as<TensorView>();
  ASSERT_TRUE(so->domain()->hasAllocation());
  EXPECT_EQ(so->domain()->allocation()[0], so->logical()[1]);
}

TEST(TextSortTest, VerifierErrors) {
  const std::string head = "inputs: T0\noutputs: T1\nT0 : f32 global [i0{4}, i1{8}]\n";
  EXPECT_HAS(parseError(head + "T1 : f32 global [i2{4}, i3{8}]\n"
                               "T1 = argsort(T0, dim=1, descending=false)\n"),
             "T1 is f32, but argsort gives indices as i64");
  EXPECT_HAS(parseError(head + "T1 : i64 global [i2{4}, i3{8}]\n"
                               "T1 = argsort(T0, dim=2, descending=false)\n"),
             "dim 2 is out of range for T0 of rank 2");
  EXPECT_HAS(parseError(head + "T1 : i64 global [i2{4}, i3{7}]\n"
                               "T1 = argsort(T0, dim=1, descending=false)\n"),
             "T1's ID i3 along dim 1 has the extent 7; it must be the input's (8)");
  EXPECT_HAS(parseError(head + "T1 : i64 global [i2{4}, i3{8}]\n"
                               "T1 = argsort(T0, dim=1, descending=1)\n"),
             "descending must be true or false");
  const std::string two = "inputs: T0\noutputs: T1, T2\nT0 : f32 global [i0{4}, i1{8}]\n";
  EXPECT_HAS(parseError(two + "T1 : f32 global [i2{4}, i3{3}]\nT2 : i64 global [i4{4}, i5{2}]\n"
                              "T1, T2 = topk(T0, 3, dim=1, largest=true)\n"),
             "T2's ID i5 along dim 1 has the extent 2; it must be k (3)");
  EXPECT_HAS(parseError(two + "T1 : f64 global [i2{4}, i3{3}]\nT2 : i64 global [i4{4}, i5{3}]\n"
                              "T1, T2 = topk(T0, 3, dim=1, largest=true)\n"),
             "topk's values have the dtype of its input T0");
  EXPECT_HAS(parseError(two + "T1 : f32 global [i2{4}, i3{3}]\nT2 : i64 global [i4{4}, i5{3}]\n"
                              "T1, T2 = topk(T0, 3, dim=1)\n"),
             "topk needs the argument largest=");
  EXPECT_HAS(parseError("inputs: T0\noutputs: T1\nT0 : c64 global [i0{4}]\n"
                        "T1 : i64 global [i1{4}]\nT1 = argsort(T0, dim=0, descending=false)\n"),
             "argsort orders real values; T0 is c64");
}

TEST(TextSortTest, OpErrorsNameTheTensorOrArgument) {
  Fusion f;
  FusionGuard g(&f);
  TensorView* x = input(f, {4, 8});
  TensorView* s = input(f, {});
  TensorView* c = input(f, {4}, DataType::ComplexFloat);
  TensorView* e = ops::TensorBuilder().shape({4, 6}).contiguity({true, std::nullopt}).build();
  f.addInput(e);
  EXPECT_EQ(
      userError([&] { ops::argsort(x, 2); }),
      "argsort: dimension 2 is out of range for T0 of rank 2 (expected -2 <= dim < 2). Tried to "
      "access out of boundary index 2. total index: 2");
  EXPECT_EQ(userError([&] { ops::argsort(s, 0); }),
            "argsort: T1 is 0-dim; there is no dimension to sort along");
  EXPECT_EQ(userError([&] { ops::argsort(c, 0); }),
            "argsort: T2 is c64; complex values have no order");
  EXPECT_HAS(userError([&] { ops::topk(e, 2, 1); }),
             "topk: dimension 1 of T3 [4, 6] is an expanded broadcast");
  EXPECT_EQ(
      userError([&] { ops::topk(x, 9, 1); }),
      "topk: k = 9 is larger than the size 8 of dimension 1 of T0 [4, 8] (selected index k out "
      "of range)");
  EXPECT_EQ(
      userError([&] { ops::topk(x, -1, 1); }),
      "topk: k = -1 is negative; k counts the elements to keep (Unexpected size of axis: -1)");
  EXPECT_EQ(userError([&] { ops::select(x, 1, 8); }),
            "select: index 8 is out of range for dimension 1 of T0 [4, 8] (size 8); it must lie "
            "in [-8, 8)");
  EXPECT_EQ(userError([&] { ops::select(s, 0, 0); }),
            "select: T1 is 0-dim; there is no dimension to select from");
  EXPECT_EQ(userError([&] {
              ops::strideOrder(x, {0, 0});
            }),
            "stride_order: [0, 0] is not a permutation of 0..1 (entry 1 is 0)");
  EXPECT_EQ(userError([&] { ops::strideOrder(x, {0}); }),
            "stride_order: 1 entries for T0 [4, 8] of rank 2; give one place per dimension");
  EXPECT_HAS(userError([&] { ops::tril(ops::sum(x, {0})); }),
             " has rank 1; tril takes a tensor of rank 2 or more");
}

// k is checked against the dim's size when the sizes are bound (here by the reference).
TEST(TextSortTest, ReferenceChecksKAgainstTheSize) {
  Fusion f;
  FusionGuard g(&f);
  TensorView* x = input(f, {-1, -1});
  Scalar* k = IrBuilder::symbolic(DataType::Int64);
  f.addInput(k);
  f.addOutput(ops::topk(x, k, 1).values);
  Tensor xt = Tensor::empty({2, 3}, DataType::Float32);
  fillRandom(xt, 1);
  const std::vector<eval::Argument> args{xt, int64_t(4)};
  EXPECT_HAS(userError([&] { eval::evaluateFusion(f, args); }),
             "topk: k = 4 (from input 1 (s4)) is outside [0, 3]: T0 dimension 1 has size 3");
}

}  // namespace
}  // namespace loom::ir
