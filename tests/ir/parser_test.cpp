// SPDX-License-Identifier: Apache-2.0
// The .fus parser: hand-written texts, and one error test per user error with its location.
#include <gtest/gtest.h>

#include "ir/text_test_util.h"

namespace loom::ir {
namespace {

constexpr const char* kHeader = "inputs: T0\noutputs: T1\n";

// The parse error message of `text`, or "" when it parses.
using test::parseError;

void expectError(const std::string& text, const std::string& location,
                 const std::string& message) {
  std::string err = parseError(text);
  EXPECT_EQ(err.rfind("bad.fus:" + location + ": ", 0), 0u) << err;
  EXPECT_NE(err.find(message), std::string::npos) << err;
}

// A hand-written text builds the nodes it names, with the numbers written in the text.
TEST(ParserTest, HandWritten) {
  auto f = parseFusion(
      "inputs: T0, s5  // comment\n"
      "outputs: T1\n"
      "s5 : bf16\n"
      "   T0 : bf16 global [i0{4}, b1{1, expand=7}]\n"
      "T1 : bf16 global [i2{4}, b3{1}]\n"
      "T1 = mul(T0, s5)   # broadcasting is already explicit\n");
  ASSERT_EQ(f->inputs().size(), 2u);
  auto* t0 = f->inputs()[0]->as<TensorView>();
  EXPECT_EQ(t0->name(), 0);
  EXPECT_EQ(t0->dtype(), DataType::BFloat16);
  EXPECT_EQ(t0->memoryType(), MemoryType::Global);
  EXPECT_TRUE(t0->logical()[1]->isBroadcast());
  EXPECT_EQ(t0->logical()[1]->expandedExtent()->constInt(), 7);
  EXPECT_EQ(f->inputs()[1]->name(), 5);
  auto* t1 = f->outputs()[0]->as<TensorView>();
  ASSERT_NE(t1->definition(), nullptr);
  EXPECT_EQ(t1->definition()->as<BinaryOp>()->opType(), BinaryOpType::Mul);
}

// Typed literals, negative numbers, infinities and exponents keep their dtype and value.
TEST(ParserTest, Literals) {
  auto f = parseFusion(
      "inputs: T0, T3\noutputs: T1, T2\n"
      "T0 : f32 global [i0{4}]\nT1 : f32 global [i1{4}]\nT2 : i32 global [i2{4}]\n"
      "T3 : i32 global [i3{4}]\n"
      "T1 = clamp(T0, -inf, f32(1e-05))\nT2 = maximum(T3, i32(-3))\n");
  auto* clamp = f->outputs()[0]->definition()->as<TernaryOp>();
  EXPECT_EQ(clamp->b()->as<Scalar>()->constDouble(), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(clamp->c()->dtype(), DataType::Float32);
  EXPECT_EQ(clamp->c()->as<Scalar>()->constDouble(), 1e-05);
  auto* mx = f->outputs()[1]->definition()->as<BinaryOp>();
  EXPECT_EQ(mx->rhs()->dtype(), DataType::Int32);
  EXPECT_EQ(mx->rhs()->as<Scalar>()->constInt(), -3);
}

// Splits and merges between logical and loop rebuild the schedule; the loop line may come
// before the transform lines that define its IDs.
TEST(ParserTest, ScheduleLines) {
  auto f = parseFusion(std::string(kHeader) +
                       "s0 : i64\n"
                       "s1 : i64 = ceil_div(s0, 4)\n"
                       "T0 : f32 global [i0{s0}]\n"
                       "T1 : f32 global [i1{s0}]\n"
                       "  loop [i2{s1}, i3{4, TIDx}]\n"
                       "  i2, i3 = split(i1, 4)\n"
                       "T1 = neg(T0)\n");
  auto* t1 = f->outputs()[0]->as<TensorView>();
  ASSERT_EQ(t1->nDims(), 2);
  EXPECT_EQ(t1->axis(1)->parallelType(), ParallelType::TIDx);
  EXPECT_TRUE(t1->axis(0)->definition()->isA<Split>());
}

TEST(ParserErrorTest, UnknownOp) {
  // An op name the parser does not know is reported at the name.
  expectError(std::string(kHeader) + "T0 : f32 global [i0{4}]\nT1 : f32 global [i1{4}]\n"
                                     "T1 = frobnicate(T0)\n",
              "5:6", "unknown op 'frobnicate'");
}

// A name used before its definition is reported where it is used.
TEST(ParserErrorTest, UndefinedName) {
  expectError(std::string(kHeader) + "T0 : f32 global [i0{s3}]\n", "3:21", "undefined name s3");
  expectError(std::string(kHeader) + "T0 : f32 global [i0{4}]\nT1 : f32 global [i7]\n", "4:18",
              "undefined IterDomain i7");
  expectError("inputs: T9\noutputs:\n", "1:9", "undefined name T9");
}

// Declaring a tensor, scalar or IterDomain twice is an error naming the first definition.
TEST(ParserErrorTest, Redefinition) {
  expectError(std::string(kHeader) + "T0 : f32 global [i0{4}]\nT0 : f32 global [i1{4}]\n", "4:1",
              "redefinition of T0 (first defined at 3:1)");
  expectError(std::string(kHeader) + "T0 : f32 global [i0{4}, i0{4}]\n", "3:25",
              "redefinition of IterDomain i0 (first defined at 3:18)");
  expectError(std::string(kHeader) + "T0 : f32 global [i0{4}]\nT1 : f32 global [i1{4}]\n"
                                     "T1 = neg(T0)\nT1 = exp(T0)\n",
              "6:1", "T1 already has a definition");
}

// A scalar defined in terms of itself is an error (evaluating it grew a stack without end), and
// a broadcast whose flags do not fit its operand and output is rejected at the line of the expr
// (the logical map asserted later).
TEST(ParserErrorTest, SelfReferenceAndOperandRanks) {
  expectError(std::string(kHeader) + "s0 : i64\ns1 : i64 = ceil_div(s1, 128)\n", "4:1",
              "s1 is used in its own definition");
  expectError(std::string("inputs: T0\noutputs: T2\nT0 : f32 global [i0{4}, i1{8}]\n"
                          "T2 : f32 global [b2{1}, i3{8}]\nT2 = broadcast(T0, flags=[true, false])\n"),
              "5:6", "'T2 = broadcast(T0)': operand T0 has 2 dims to line up with T2, which has 1");
}

// Ops check how many operands and outputs they get.
TEST(ParserErrorTest, OperandCount) {
  std::string decls = std::string(kHeader) + "T0 : f32 global [i0{4}]\nT1 : f32 global [i1{4}]\n";
  expectError(decls + "T1 = add(T0)\n", "5:6", "add takes 2 operands, got 1");
  expectError(decls + "T1, T0 = exp(T0)\n", "5:1", "exp has 1 output, got 2");
  expectError(decls + "T1 = sum(T0)\n", "5:6", "sum needs the argument init=");
}

// Unknown data types, memory types and attributes are rejected where they are written.
TEST(ParserErrorTest, BadNames) {
  expectError(std::string(kHeader) + "T0 : f33 global [i0{4}]\n", "3:6", "unknown data type 'f33'");
  expectError(std::string(kHeader) + "T0 : f32 texture [i0{4}]\n", "3:10",
              "unknown memory type 'texture'");
  expectError(std::string(kHeader) + "T0 : f32 global [i0{4, warp}]\n", "3:24",
              "unknown IterDomain attribute 'warp'");
  expectError(std::string(kHeader) + "T0 : f32 global [i0{4}] $\n", "3:25",
              "unexpected character '$'");
}

// A scalar named with the largest int64 (the .fus fuzzer's find: adding one to it overflowed while
// the parser picked names for constants) is a range error where it is declared.
TEST(ParserErrorTest, ScalarNameBeyondTheRange) {
  std::string err = parseError(std::string(kHeader) + "s9223372036854775807 : i64\n");
  EXPECT_NE(err.find("is out of range"), std::string::npos) << err;
}

// A cast whose dtype disagrees with the declared output dtype is an error.
TEST(ParserErrorTest, CastDtype) {
  expectError(std::string(kHeader) + "T0 : f32 global [i0{4}]\nT1 : f32 global [i1{4}]\n"
                                     "T1 = cast(T0, bf16)\n",
              "5:15", "cast to bf16 but T1 is declared f32");
}

// A loop ID that no split/merge line derives from the logical domain is reported at the tensor.
TEST(ParserErrorTest, DomainNotDerivable) {
  expectError(std::string(kHeader) + "T0 : f32 global [i0{4}]\n  loop [i1{4}]\n", "3:1",
              "T0: loop ID i1 is not derived from the logical domain");
}

// Contiguity must match the allocation domain (one flag per ID, '-' for broadcasts).
TEST(ParserErrorTest, BadContiguity) {
  expectError(std::string(kHeader) + "T0 : f32 global [i0{4}, b1{1}] contig=[t, t]\n", "3:1",
              "contiguity flag 1");
}

// Parallel types follow IterDomain::parallelize's rules (vectorize needs a constant extent).
TEST(ParserErrorTest, BadParallelType) {
  expectError(std::string(kHeader) + "s0 : i64\nT0 : f32 global [i0{s0, vectorize}]\n", "4:18",
              "is not a constant");
}

// Rules the verifier checks are reported at the declaration of the tensor it names.
TEST(ParserErrorTest, VerifierErrorAtTensor) {
  expectError(std::string(kHeader) +
                  "T0 : f32 global [i0{4}]\nT1 : f32 global [i1{8}]\n"
                  "  loop [i2{2, TIDx}, i3{4, TIDx}]\n  i2, i3 = split(i1, 4)\nT1 = neg(T0)\n",
              "4:1", "invalid fusion");
}

// A fusion input must not be computed by an expr.
TEST(ParserErrorTest, InputWithDefinition) {
  expectError("inputs: T1\noutputs: T1\nT0 : f32 global [i0{4}]\nT1 : f32 global [i1{4}]\n"
              "T1 = neg(T0)\n",
              "1:9", "inputs cannot have a definition");
}

// A tensor that is read must be computed or be an input; the error is the check's own text.
TEST(ParserErrorTest, UsedTensorNeitherComputedNorInput) {
  expectError("inputs:\noutputs: T1\nT0 : f32 global [i0{4}]\nT1 : f32 global [i1{4}]\n"
              "T1 = neg(T0)\n",
              "3:1", "T0 is used by 'T1 = neg(T0)' but is neither computed nor a fusion input");
  EXPECT_EQ(parseError("inputs:\noutputs: T1\nT0 : f32 global [i0{4}]\n"
                       "T1 : f32 global [i1{4}]\nT1 = neg(T0)\n")
                .find("bug in Loom"),
            std::string::npos);
}

// A missing file is a user error naming the path.
TEST(ParserErrorTest, MissingFile) {
  try {
    parseFusionFile("/nonexistent/x.fus");
    FAIL() << "expected an error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/x.fus"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace loom::ir
