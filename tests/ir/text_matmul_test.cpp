// SPDX-License-Identifier: Apache-2.0
// matmul and linear in the IR: the .fus round trip and printed form, the clone, the logical map
// of operand dims, and the parser's and verifier's errors (ranks, IterTypes, dtypes).
#include <gtest/gtest.h>

#include "ir/text_test_util.h"
#include "loom/ir/cloner.h"
#include "loom/ir/logical_map.h"
#include "loom/ops/ops.h"

namespace loom::ir {
namespace {

#define EXPECT_HAS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

using test::parseError;

TEST(TextMatmulTest, RoundTripAndClone) {
  Fusion f;
  FusionGuard g(&f);
  auto* a = ops::TensorBuilder().shape({-1, 1, -1, 8}).dtype(DataType::BFloat16).build();
  auto* b = ops::TensorBuilder().shape({3, 8, -1}).dtype(DataType::BFloat16).build();
  auto* x = ops::TensorBuilder().shape({-1, 8}).dtype(DataType::Float16).build();
  auto* w = ops::TensorBuilder().shape({5, 8}).dtype(DataType::Float16).build();
  auto* bias = ops::TensorBuilder().shape({5}).dtype(DataType::Float16).build();
  auto* v = ops::TensorBuilder().shape({8}).dtype(DataType::Float32).build();
  for (TensorView* in : {a, b, x, w, bias, v}) f.addInput(in);
  TensorView* mm = ops::matmul(a, b);
  TensorView* lin = ops::linear(x, w, bias);
  TensorView* nobias = ops::linear(x, w);
  TensorView* dot = ops::matmul(v, v);
  for (TensorView* out : {mm, lin, nobias, dot}) f.addOutput(out);
  EXPECT_EQ(mm->rank(), 4);  // [a0, 3, a2, b2]
  EXPECT_EQ(mm->dtype(), DataType::BFloat16);
  EXPECT_EQ(dot->rank(), 0);
  test::expectRoundTrip(f);
  const std::string text = printFusion(f);
  EXPECT_HAS(text, " = matmul(T0, T1)");
  EXPECT_HAS(text, " = linear(T2, T3, T4)");
  EXPECT_HAS(text, " = linear(T2, T3)\n");
  auto parsed = parseFusion(text, "mm.fus");
  ASSERT_TRUE(parsed->outputs()[1]->definition()->isA<LinearOp>());
  EXPECT_TRUE(parsed->outputs()[1]->definition()->as<LinearOp>()->hasBias());
  EXPECT_FALSE(parsed->outputs()[2]->definition()->as<LinearOp>()->hasBias());
  std::unique_ptr<Fusion> copy = f.clone();
  std::string why;
  EXPECT_TRUE(structurallyEqual(*copy, f, &why)) << why;
}

// Batch dims line up from the right, m with a's second-to-last dim, n with b's last (linear:
// w's first); k (a's last, b's second-to-last) lines up with out's trailing r{k}.
TEST(TextMatmulTest, LogicalMapPairsTheContractedDimWithRk) {
  Fusion f;
  FusionGuard g(&f);
  auto* a = ops::TensorBuilder().shape({-1, -1, -1}).build();
  auto* b = ops::TensorBuilder().shape({-1, -1}).build();
  f.addInput(a);
  f.addInput(b);
  TensorView* out = ops::matmul(a, b);
  f.addOutput(out);
  ASSERT_EQ(out->logical().size(), 4u);  // [a0, a1, b1, r{k}]
  ASSERT_TRUE(out->logical()[3]->isReduction());
  auto pa = pairwiseLogicalMap(a, out);
  ASSERT_EQ(pa.size(), 3u);
  EXPECT_EQ(pa[0].first, a->logical()[0]);
  EXPECT_EQ(pa[0].second, out->logical()[0]);
  EXPECT_EQ(pa[1].first, a->logical()[1]);
  EXPECT_EQ(pa[1].second, out->logical()[1]);
  EXPECT_EQ(pa[2].first, a->logical()[2]);
  EXPECT_EQ(pa[2].second, out->logical()[3]);
  auto pb = pairwiseLogicalMap(b, out);
  ASSERT_EQ(pb.size(), 2u);
  EXPECT_EQ(pb[0].first, b->logical()[0]);
  EXPECT_EQ(pb[0].second, out->logical()[3]);
  EXPECT_EQ(pb[1].first, b->logical()[1]);
  EXPECT_EQ(pb[1].second, out->logical()[2]);
  // matmulOperandDims names k by -1 (no iteration dim of out).
  EXPECT_EQ(matmulOperandDims(out->definition(), a), (std::vector<int64_t>{0, 1, -1}));
  EXPECT_EQ(matmulOperandDims(out->definition(), b), (std::vector<int64_t>{-1, 2}));
}

// linear: x's leading dims line up with out's, w's rows with out's features, the contracted
// dims of both with r{k}, a 1-D bias with the features.
TEST(TextMatmulTest, LinearLogicalMapAndPrintedRk) {
  Fusion f;
  FusionGuard g(&f);
  auto* x = ops::TensorBuilder().shape({2, 3, 8}).build();
  auto* w = ops::TensorBuilder().shape({5, 8}).build();
  auto* bias = ops::TensorBuilder().shape({5}).build();
  for (TensorView* in : {x, w, bias}) f.addInput(in);
  TensorView* out = ops::linear(x, w, bias);
  f.addOutput(out);
  EXPECT_EQ(matmulOperandDims(out->definition(), bias), (std::vector<int64_t>{2}));
  auto px = pairwiseLogicalMap(x, out);
  ASSERT_EQ(px.size(), 3u);
  EXPECT_EQ(px[2].first, x->logical()[2]);
  EXPECT_EQ(px[2].second, out->logical()[3]);
  auto pbias = pairwiseLogicalMap(bias, out);
  ASSERT_EQ(pbias.size(), 1u);
  EXPECT_EQ(pbias[0].second, out->logical()[2]);
  auto pw = pairwiseLogicalMap(w, out);
  ASSERT_EQ(pw.size(), 2u);
  EXPECT_EQ(pw[1].first, w->logical()[1]);
  EXPECT_EQ(pw[1].second, out->logical()[3]);
  const std::string text = printFusion(f);
  EXPECT_HAS(text, "T3 : f32  global [i6{2}, i7{3}, i8{5}, r9{8}]") << text;
  test::expectRoundTrip(f);
}

TEST(TextMatmulTest, ParserAndVerifierErrors) {
  const std::string head = "inputs: T0, T1\noutputs: T2\n";
  // A dtype outside f32/bf16/f16.
  auto err = parseError(head +
                        "T0 : f64 global [i0{4}, i1{8}]\nT1 : f64 global [i2{8}, i3{5}]\n"
                        "T2 : f64 global [i4{4}, i5{5}, r6{8}]\nT2 = matmul(T0, T1)\n");
  EXPECT_HAS(err, "matmul computes in f32, bf16 or f16, not f64");
  // Mixed dtypes.
  err = parseError(head +
                   "T0 : f32 global [i0{4}, i1{8}]\nT1 : bf16 global [i2{8}, i3{5}]\n"
                   "T2 : f32 global [i4{4}, i5{5}, r6{8}]\nT2 = matmul(T0, T1)\n");
  EXPECT_HAS(err, "T1 is bf16, but matmul takes operands of its output's dtype f32");
  // The output's rank.
  err = parseError(head +
                   "T0 : f32 global [i0{4}, i1{8}]\nT1 : f32 global [i2{8}, i3{5}]\n"
                   "T2 : f32 global [i4{4}]\nT2 = matmul(T0, T1)\n");
  EXPECT_HAS(err, "its output T2 must have 2 dims and then one reduction ID, the contracted r{k} "
                  "(3 logical IDs, the last a reduction), not 1 logical IDs of which 0 reductions");
  // The output without its r{k} (Loom's form before it carried the contracted dim).
  err = parseError(head +
                   "T0 : f32 global [i0{4}, i1{8}]\nT1 : f32 global [i2{8}, i3{5}]\n"
                   "T2 : f32 global [i4{4}, i5{5}]\nT2 = matmul(T0, T1)\n");
  EXPECT_HAS(err, "its output T2 must have 2 dims and then one reduction ID");
  // r{k} not last.
  err = parseError(head +
                   "T0 : f32 global [i0{4}, i1{8}]\nT1 : f32 global [i2{8}, i3{5}]\n"
                   "T2 : f32 global [r6{8}, i4{4}, i5{5}]\nT2 = matmul(T0, T1)\n");
  EXPECT_HAS(err, "its output T2 must have 2 dims and then one reduction ID");
  // A broadcast output dim where the operand has none.
  err = parseError(head +
                   "T0 : f32 global [i0{4}, i1{8}]\nT1 : f32 global [i2{8}, i3{5}]\n"
                   "T2 : f32 global [b4{1}, i5{5}, r6{8}]\nT2 = matmul(T0, T1)\n");
  EXPECT_HAS(err, "is a broadcast ID, but it lines up with i0 of T0");
  // linear: a 3-D weight, a bias of the wrong rank, too many operands.
  err = parseError(head +
                   "T0 : f32 global [i0{4}, i1{8}]\nT1 : f32 global [i2{2}, i3{5}, i6{8}]\n"
                   "T2 : f32 global [i4{4}, i5{5}]\nT2 = linear(T0, T1)\n");
  EXPECT_HAS(err, "linear takes an input of rank 1 or more and a weight of rank 1 or 2");
  err = parseError(
      "inputs: T0, T1, T3\noutputs: T2\nT0 : f32 global [i0{4}, i1{8}]\n"
      "T1 : f32 global [i2{8}]\nT3 : f32 global [i6{1}]\n"
      "T2 : f32 global [i4{4}]\nT2 = linear(T0, T1, T3)\n");
  EXPECT_HAS(err, "must be 0-D, or 1-D for a 2-D weight");
  err = parseError(
      "inputs: T0, T1, T3\noutputs: T2\nT0 : f32 global [i0{4}, i1{8}]\n"
      "T1 : f32 global [i2{8}]\nT3 : f32 global []\n"
      "T2 : f32 global [i4{4}]\nT2 = linear(T0, T1, T3, T3)\n");
  EXPECT_HAS(err, "linear takes 2 operands, got 4");
}

}  // namespace
}  // namespace loom::ir
