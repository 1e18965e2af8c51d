// SPDX-License-Identifier: Apache-2.0
// The indexing ops in the IR and the .fus text form: exact round trips, the printed form, the
// verifier's and the ops' errors, and the reference evaluator's out-of-range message.
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

TEST(TextIndexingTest, RoundTrip) {
  Fusion f;
  FusionGuard g(&f);
  TensorView* x = input(f, {-1, 8});
  TensorView* i1 = input(f, {-1}, DataType::Int32);
  TensorView* i2 = input(f, {-1, 8}, DataType::Int64);
  TensorView* src = input(f, {-1, 8});
  f.addOutput(ops::indexSelect(x, -1, i1));
  f.addOutput(ops::gather(x, 0, i2));
  f.addOutput(ops::takeAlongAxis(x, i2, 1));
  f.addOutput(ops::scatter(x, 1, i2, src));
  f.addOutput(ops::scatterAdd(x, 0, i2, src));
  test::expectRoundTrip(f);
  std::string text = printFusion(f);
  EXPECT_HAS(text, " = index_select(T0, T4, dim=1)");
  EXPECT_HAS(text, " = gather(T0, T2, dim=0)");
  EXPECT_HAS(text, " = take_along_axis(T0, T2, dim=1)");
  EXPECT_HAS(text, " = scatter(T0, T2, T3, dim=1)");
  EXPECT_HAS(text, " = scatter_add(T0, T2, T3, dim=0)");
  auto parsed = parseFusion(text, "idx.fus");
  auto* g2 = parsed->outputs()[2]->definition();
  ASSERT_TRUE(g2->isA<GatherOp>());
  EXPECT_TRUE(g2->as<GatherOp>()->exact());
  EXPECT_EQ(g2->as<GatherOp>()->dim(), 1);
  EXPECT_TRUE(parsed->outputs()[4]->definition()->as<ScatterOp>()->accumulate());
}

TEST(TextIndexingTest, VerifierErrors) {
  const std::string head = "inputs: T0, T1\noutputs: T2\n";
  auto err = parseError(head +
                        "T0 : f32 global [i0{4}, i1{8}]\nT1 : f32 global [i2{4}, i3{8}]\n"
                        "T2 : f32 global [i4{4}, i5{8}]\nT2 = gather(T0, T1, dim=1)\n");
  EXPECT_HAS(err, "the index T1 is f32; an index is i32 or i64");
  err = parseError(head +
                   "T0 : f32 global [i0{4}, i1{8}]\nT1 : i64 global [i2{5}, i3{8}]\n"
                   "T2 : f32 global [i4{5}, i5{8}]\nT2 = gather(T0, T1, dim=1)\n");
  EXPECT_HAS(err, "the index T1 has extent 5 at dim 0, T0 has 4 (at most that needed off dim 1)");
  err = parseError(head +
                   "T0 : f32 global [i0{4}, i1{8}]\nT1 : i64 global [i2{4}, i3{8}]\n"
                   "T2 : f32 global [i4{4}, i5{8}]\nT2 = gather(T0, T1, dim=2)\n");
  EXPECT_HAS(err, "dim 2 is out of range for T0 of rank 2");
  err = parseError(head +
                   "T0 : f32 global [i0{4}, i1{8}]\nT1 : i64 global [i2{4}, i3{8}]\n"
                   "T2 : f64 global [i4{4}, i5{8}]\nT2 = gather(T0, T1, dim=1)\n");
  EXPECT_HAS(err, "gather does not convert");
  err = parseError(head +
                   "T0 : f32 global [i0{4}, i1{8}]\nT1 : i64 global [i2{3}, i3{8}]\n"
                   "T2 : f32 global [i4{4}, i5{8}]\nT2 = index_select(T0, T1, dim=0)\n");
  EXPECT_HAS(err, "(position 1) lines up with T0 and must be a broadcast ID of size 1");
}

TEST(TextIndexingTest, OpErrors) {
  Fusion f;
  FusionGuard g(&f);
  TensorView* x = input(f, {4, 8});
  TensorView* fi = input(f, {4, 8});
  TensorView* i2 = input(f, {5, 8}, DataType::Int64);
  TensorView* i1 = input(f, {3, 2}, DataType::Int64);
  EXPECT_EQ(userError([&] { ops::gather(x, 1, fi); }),
            "gather: the index T1 is f32; an index tensor is i32 or i64");
  EXPECT_EQ(userError([&] { ops::gather(x, 1, i2); }),
            "gather: the index T2 [5, 8] has size 5 at dimension 0 but the input T0 [4, 8] has 4 "
            "(at most that needed off dimension 1)");
  EXPECT_EQ(userError([&] { ops::takeAlongAxis(x, i1, 0); }),
            "take_along_axis: the index T3 [3, 2] has size 2 at dimension 1 but the input T0 "
            "[4, 8] has 8 (equal sizes needed off dimension 0)");
  EXPECT_EQ(userError([&] { ops::indexSelect(x, 2, i1); }),
            "index_select: the index T3 has 2 dims; index_select takes a 1-D (or 0-D) index");
  EXPECT_EQ(userError([&] { ops::scatter(x, 0, i1, ops::cast(x, DataType::Float64)); }),
            "scatter: the source T4 is f64 but the input T0 is f32 (cast one of them)");
  EXPECT_EQ(userError([&] { ops::embedding(i1, i2, std::nullopt, 1.0); }),
            "embedding: max_norm renormalizes rows, so the weight T2 must be floating, "
            "got i64");
}

// The reference evaluator names the op, both tensors and the value.
TEST(TextIndexingTest, ReferenceOutOfRange) {
  Fusion f;
  FusionGuard g(&f);
  TensorView* x = input(f, {-1, -1});
  TensorView* idx = input(f, {-1}, DataType::Int32);
  f.addOutput(ops::indexSelect(x, 0, idx));
  Tensor xt = Tensor::empty({3, 2}, DataType::Float32);
  fillRandom(xt, 1);
  Tensor it = Tensor::empty({2}, DataType::Int32);
  static_cast<int32_t*>(it.data())[0] = 1;
  static_cast<int32_t*>(it.data())[1] = -3;
  const std::vector<eval::Argument> args{xt, it};
  EXPECT_EQ(userError([&] { eval::evaluateFusion(f, args); }),
            "index_select: index value -3 in T2 is out of range for dimension 0 of T0 (size 3); "
            "indices must lie in [0, 3) (negative ones are not wrapped)");
}

}  // namespace
}  // namespace loom::ir
