// SPDX-License-Identifier: Apache-2.0
// The rules of one op in the .fus text (docs/text-format.md, "Types" and "IterTypes of op
// outputs"): dtypes of operands and outputs, plain literals taking the computation type, and the
// IterTypes of output IDs. Each broken rule is a UserError at the op's line naming the op and the
// value; ir::verify applies the same rules to fusions built in C++.
#include <gtest/gtest.h>

#include "ir/text_test_util.h"
#include "loom/ir/verifier.h"

namespace loom::ir {
namespace {

// The parse error message of `text`, or "" when it parses.
using test::parseError;

void expectError(const std::string& text, const std::string& location, const std::string& message) {
  std::string err = parseError(text);
  EXPECT_EQ(err.rfind("bad.fus:" + location + ": ", 0), 0u) << err;
  EXPECT_NE(err.find(message), std::string::npos) << err;
}

// One unary or binary op T2 = <call> over inputs T0 and T1 of the given dtypes.
std::string binaryText(const std::string& t0, const std::string& t1, const std::string& t2,
                       const std::string& call) {
  return "inputs: T0, T1\noutputs: T2\nT0 : " + t0 + " global [i0{4}]\nT1 : " + t1 +
         " global [i1{4}]\nT2 : " + t2 + " global [i2{4}]\nT2 = " + call + "\n";
}

// ---- Types ------------------------------------------------------------------------------------

// An op whose declared output dtype differs from its operands' is rejected at its line, naming the
// op, the operand and the dtype it computes in (the audit's add of f32 into an i32 output).
TEST(TextTypes, OperandOfAnotherDtypeIsRejected) {
  expectError(binaryText("f32", "f32", "i32", "add(T0, T1)"), "6:6",
              "'T2 = add(T0, T1)': T0 is f32, but add computes in i32, the dtype of its output T2 "
              "(convert with cast)");
  expectError(binaryText("f32", "f16", "f32", "mul(T0, T1)"), "6:6",
              "T1 is f16, but mul computes in f32");
  // A 16-bit intermediate of f32 operands (the audit's normalization): a cast says where it rounds.
  expectError(binaryText("f32", "f32", "f16", "sub(T0, T1)"), "6:6",
              "T0 is f32, but sub computes in f16");
  expectError(binaryText("i64", "f32", "bool", "lt(T0, T1)"), "6:6",
              "T1 is f32, but lt compares operands of one dtype, here i64 (the dtype of T0)");
  expectError(binaryText("f32", "f32", "f32", "lt(T0, T1)"), "6:6", "T2 is f32, but lt gives Bool");
  expectError(binaryText("f32", "f32", "f32", "where(T1, T0, T0)"), "6:6",
              "T1 is f32, but the condition of where is Bool");
}

// A literal of the wrong kind, or a typed constant of another dtype, is rejected (the audit's i64
// mul with an f32 scalar): a fraction is no integer, an integer no bool, and a value outside i32 no
// i32.
TEST(TextTypes, LiteralsOfAnotherDtypeAreRejected) {
  const std::string ints =
      "inputs: T0\noutputs: T1\nT0 : i64 global [i0{4}]\n"
      "T1 : i64 global [i1{4}]\n";
  expectError(ints + "T1 = mul(T0, 0.7)\n", "5:14",
              "the literal 0.7 is not a value of i64, the dtype mul computes in here");
  expectError(ints + "T1 = mul(T0, f32(0.7))\n", "5:6",
              "the constant f32(0.7) is f32, but mul computes in i64");
  expectError(ints + "T1 = add(T0, nan)\n", "5:14", "the literal nan is not a value of i64");
  const std::string bools =
      "inputs: T0\noutputs: T1\nT0 : bool global [i0{4}]\n"
      "T1 : bool global [i1{4}]\n";
  expectError(bools + "T1 = logical_and(T0, 1)\n", "5:22",
              "the literal 1 is not a value of bool, the dtype logical_and computes in here "
              "(write true or false)");
  expectError(ints + "T1 = mul(T0, 0.7)\n", "5:14", "(that of T1; cast the other operands first)");
  const std::string i32 =
      "inputs: T0\noutputs: T1\nT0 : i32 global [i0{4}]\n"
      "T1 : i32 global [i1{4}]\n";
  expectError(i32 + "T1 = add(T0, 3000000000)\n", "5:14",
              "the literal 3000000000 is out of the range of i32");
  expectError(i32 + "T1 = add(T0, i32(3000000000))\n", "5:18",
              "the literal 3000000000 is out of the range of i32");
  expectError(i32 + "s0 : f32\nT1 = add(T0, s0)\n", "6:6", "s0 is f32, but add computes in i32");
}

// The narrow and unsigned integer types in the text form: i8 i16 u8 u16 u32 u64 parse, a literal
// takes the range of its type (an unsigned one also the negative values of its width, which
// wrap: u8(-1) is 255; a u64 literal is any i64, its bits), and a sum in one of them is refused
// (it would wrap on the way; ops::sum accumulates them in i64).
TEST(TextTypes, NarrowAndUnsignedIntegers) {
  auto text = [](const std::string& dt, const std::string& call) {
    return "inputs: T0\noutputs: T1\nT0 : " + dt + " global [i0{4}]\nT1 : " + dt +
           " global [i1{4}]\nT1 = " + call + "\n";
  };
  for (const char* dt : {"i8", "i16", "u8", "u16", "u32", "u64"}) {
    auto f = parseFusion(text(dt, "bitwise_right_shift(T0, 3)"));
    EXPECT_EQ(f->outputs()[0]->dtype(), *parseDataType(dt)) << dt;
  }
  auto wrapped = parseFusion(text("u8", "add(T0, u8(-1))"));
  auto* c = wrapped->outputs()[0]->definition()->input(1)->as<Scalar>();
  EXPECT_EQ(c->dtype(), DataType::UInt8);
  EXPECT_EQ(c->constInt(), 255);
  auto all_ones = parseFusion(text("u64", "add(T0, u64(-1))"));
  EXPECT_EQ(all_ones->outputs()[0]->definition()->input(1)->as<Scalar>()->constInt(), -1);
  expectError(text("i8", "add(T0, 128)"), "5:14", "the literal 128 is out of the range of i8");
  expectError(text("u8", "add(T0, 256)"), "5:14", "the literal 256 is out of the range of u8");
  expectError(text("u16", "add(T0, -32769)"), "5:14",
              "the literal -32769 is out of the range of u16");
  expectError("inputs: T0\noutputs: T1\nT0 : u8 global [i0{4}]\nT1 : u8 global [r1{4}]\n"
              "T1 = sum(T0, init=0)\n",
              "5:6", "sum accumulates in u8");
}

// The 8-bit floats in the text form: f8e4m3fn and f8e5m2 (and torch's long names) parse, casts
// in and out and a where choosing a typed constant of the type print and read back the same, and
// a sum accumulating in one of them is refused (ops::sum accumulates them in f32).
TEST(TextTypes, EightBitFloats) {
  const std::string text =
      "inputs: T0, T1\noutputs: T2, T3, T5\n"
      "T0 : f8e4m3fn global [i0{4}]\nT1 : float8_e5m2 global [i1{4}]\n"
      "T2 : f32 global [i2{4}]\nT3 : f8e5m2 global [i3{4}]\nT4 : bool global [i4{4}]\n"
      "T5 : f8e4m3fn global [i5{4}]\n"
      "T2 = cast(T0, f32)\nT3 = cast(T2, f8e5m2)\nT4 = lt(T2, 1)\nT5 = where(T4, T0, "
      "f8e4m3fn(0.5))\n";
  auto f = parseFusion(text);
  EXPECT_EQ(f->inputs()[0]->dtype(), DataType::Float8_e4m3fn);
  EXPECT_EQ(f->inputs()[1]->dtype(), DataType::Float8_e5m2);
  EXPECT_EQ(f->outputs()[1]->dtype(), DataType::Float8_e5m2);
  const std::string printed = printFusion(*f);
  EXPECT_NE(printed.find("T0 : f8e4m3fn global"), std::string::npos) << printed;
  EXPECT_NE(printed.find("f8e4m3fn(0.5)"), std::string::npos) << printed;
  EXPECT_EQ(printFusion(*parseFusion(printed)), printed);
  expectError(
      "inputs: T0\noutputs: T1\nT0 : f8e5m2 global [i0{4}]\n"
      "T1 : f8e5m2 global [r1{4}]\nT1 = sum(T0, init=0)\n",
      "5:6", "sum accumulates in f8e5m2");
}

// A plain literal takes the dtype its op computes in, as a Python number does in torch; a typed
// literal keeps its own (and must be that dtype).
TEST(TextTypes, PlainLiteralsTakeTheComputationType) {
  auto f = parseFusion(
      "inputs: T0, T5\noutputs: T1, T2, T3, T4, T6, T7\n"
      "T0 : f32 global [i0{4}]\nT1 : f32 global [i1{4}]\nT2 : f32 global [r2{4}]\n"
      "T3 : bool global [i3{4}]\nT4 : f16 global [i4{4}]\nT5 : i32 global [i5{4}]\n"
      "T6 : i32 global [i6{4}]\nT7 : f32 global [i7{4}]\n"
      "T1 = mul(T0, 0.5)\nT2 = sum(T0, init=0)\nT3 = lt(T0, 1)\nT4 = where(T3, 1, 0.25)\n"
      "T6 = add(T5, 3)\nT7 = clamp(T0, -inf, f32(2.0))\n");
  auto constant = [&](int out, int input) {
    return f->outputs()[size_t(out)]->definition()->input(size_t(input))->as<Scalar>();
  };
  EXPECT_EQ(constant(0, 1)->dtype(), DataType::Float32);
  EXPECT_EQ(constant(0, 1)->constDouble(), 0.5);
  auto* sum = f->outputs()[1]->definition()->as<ReductionOp>();
  EXPECT_EQ(sum->init()->dtype(), DataType::Float32);
  EXPECT_EQ(sum->init()->constDouble(), 0.0);
  EXPECT_EQ(constant(2, 1)->dtype(), DataType::Float32);  // the dtype of what it is compared with
  EXPECT_EQ(constant(3, 1)->dtype(), DataType::Float16);
  EXPECT_EQ(constant(3, 2)->dtype(), DataType::Float16);
  EXPECT_EQ(constant(4, 1)->dtype(), DataType::Int32);
  EXPECT_EQ(constant(4, 1)->constInt(), 3);
  EXPECT_EQ(constant(5, 1)->dtype(), DataType::Float32);
  EXPECT_EQ(constant(5, 2)->dtype(), DataType::Float32);
  // The printer writes the adopted constants typed, and that text reads back the same.
  const std::string printed = printFusion(*f);
  EXPECT_NE(printed.find("mul(T0, f32(0.5))"), std::string::npos) << printed;
  EXPECT_NE(printed.find(", f16(1.0), f16(0.25))"), std::string::npos) << printed;
  EXPECT_EQ(printFusion(*parseFusion(printed)), printed);
}

// Ops that only make sense in some dtypes say so: float-only math, Bool division and negation,
// sums that would lose precision in their accumulator, Welford outside f32/f64, and shape ops
// that would convert.
TEST(TextTypes, OpsOutsideTheirDtypesAreRejected) {
  expectError(binaryText("i64", "i64", "i64", "exp(T0)"), "6:6",
              "exp computes in a floating dtype, not i64");
  expectError(binaryText("i32", "i32", "i32", "lerp(T0, T1, T1)"), "6:6",
              "lerp computes in a floating dtype, not i32");
  expectError(binaryText("bool", "bool", "bool", "div(T0, T1)"), "6:6",
              "div is not defined for Bool");
  expectError(binaryText("bool", "bool", "bool", "neg(T0)"), "6:6",
              "neg is not defined for Bool (use logical_not)");
  const std::string sum =
      "inputs: T0\noutputs: T1\nT0 : f16 global [i0{4}]\n"
      "T1 : f16 global [r1{4}]\nT1 = sum(T0, init=0)\n";
  expectError(sum, "5:6",
              "sum accumulates in f16, which loses the sum on the way: ops::sum "
              "accumulates 16- and 8-bit floats in f32");
  expectError(
      "inputs: T0\noutputs: T1\nT0 : f32 global [i0{4}]\nT1 : i64 global [r1{4}]\n"
      "T1 = sum(T0, init=0)\n",
      "5:6", "T0 is f32, but sum computes in i64");
  expectError(
      "inputs: T0\noutputs: T1, T2, T3\nT0 : f16 global [i0{4}]\n"
      "T1 : f16 global [r1{4}]\nT2 : f16 global [r2{4}]\nT3 : i64 global [r3{4}]\n"
      "T1, T2, T3 = welford(T0, 0.0, 1, init_avg=0.0, init_m2=0.0, init_n=0)\n",
      "7:14", "welford computes in f32 or f64, not f16");
  expectError(binaryText("f32", "f32", "f64", "set(T0)"), "6:6",
              "T0 is f32, but set does not convert: T2 is f64");
}

// What the rule allows parses: casts between any dtypes, predicates on any dtype, Bool
// arithmetic, 16-bit math on 16-bit operands.
TEST(TextTypes, ConsistentOpsParse) {
  EXPECT_EQ(parseError(binaryText("f32", "f32", "i32", "cast(T0, i32)")), "");
  EXPECT_EQ(parseError(binaryText("i64", "f32", "bool", "isnan(T1)")), "");
  EXPECT_EQ(parseError(binaryText("bool", "bool", "bool", "add(T0, T1)")), "");
  EXPECT_EQ(parseError(binaryText("f16", "f16", "f16", "mul(T0, T1)")), "");
  EXPECT_EQ(parseError(binaryText("i64", "i64", "i64", "pow(T0, T1)")), "");
}

// A fusion built in C++ that breaks the rule fails ir::verify naming the expr (FusionExecutorCache
// reports it as a user error) and is refused by lowering with a UserError.
TEST(TextTypes, VerifierAppliesTheRuleToCppFusions) {
  Fusion f;
  FusionGuard g(&f);
  TensorView* a = test::makeInput({IrBuilder::index(4)}, DataType::Float32);
  TensorView* out = test::makeTv(test::copyIds(a), DataType::Int32, MemoryType::Global);
  IrBuilder::create<BinaryOp>(BinaryOpType::Add, out, a, a);
  f.addOutput(out);
  try {
    verify(f);
    FAIL() << "verify accepted an add of f32 into i32";
  } catch (const InternalError& e) {
    EXPECT_NE(e.reason().find("T0 is f32, but add computes in i32"), std::string::npos)
        << e.reason();
  }
  auto problem = exprProblem(out->definition());
  ASSERT_TRUE(problem.has_value());
  EXPECT_NE(problem->find("'T1 = add(T0, T0)'"), std::string::npos) << *problem;
}

// ---- IterTypes ---------------------------------------------------------------------------------

// A broadcast's new ID must be a broadcast ID: an iteration ID there would stand for a row the
// broadcast never wrote (kernels read past it).
TEST(TextIterTypes, BroadcastNewIdMustBeBroadcast) {
  const std::string head = "inputs: T0\noutputs: T1\nT0 : f32 global [i0{4}]\n";
  expectError(head + "T1 : f32 global [i1{8}, i2{4}]\nT1 = broadcast(T0, flags=[true, false])\n",
              "5:6",
              "'T1 = broadcast(T0)': the new ID i1 (position 0) of T1 must be a broadcast ID "
              "(write b1)");
  EXPECT_EQ(parseError(head + "T1 : f32 global [b1{1}, i2{4}]\n"
                              "T1 = broadcast(T0, flags=[true, false])\n"),
            "");
}

// An output ID lines up with its operands' IDs: it is a broadcast only where they all are, and
// only reductions make reduction IDs. Squeezed IDs have extent 1.
TEST(TextIterTypes, OutputIdsFollowTheirOperands) {
  expectError(
      "inputs: T0\noutputs: T1\nT0 : f32 global [i0{4}]\nT1 : f32 global [b1{1}]\n"
      "T1 = neg(T0)\n",
      "5:6",
      "'T1 = neg(T0)': T1's ID b1 is a broadcast ID, but it lines up with i0 of T0, which "
      "is not one");
  expectError(
      "inputs: T0\noutputs: T1\nT0 : f32 global [i0{4}]\nT1 : f32 global [r1{4}]\n"
      "T1 = exp(T0)\n",
      "5:6", "T1's ID r1 is a reduction ID, but exp reduces nothing (write i1)");
  expectError(
      "inputs: T0\noutputs: T1\nT0 : f32 global [i0{4}, i1{3}]\n"
      "T1 : f32 global [i2{3}]\nT1 = squeeze(T0, flags=[true, false])\n",
      "5:6", "squeezed ID i0 of T0 has the extent 4; only size-1 dims are squeezed");
  expectError(
      "inputs: T0\noutputs: T1\nT0 : f32 global [i0{4}, i1{3}]\n"
      "T1 : f32 global [b2{1}, r3{3}]\nT1 = sum(T0, init=0.0)\n",
      "5:6", "T1's ID b2 is a broadcast ID, but it lines up with i0 of T0");
}

// Split, merge and resize lines give their outputs the IterType the transform implies.
TEST(TextIterTypes, TransformOutputsKeepTheirType) {
  const std::string head = "inputs: T0\noutputs: T1\nT0 : f32 global [i0{8}]\n";
  expectError(head +
                  "T1 : f32 global [r1{8}]\n  loop [r2{2}, i3{4}]\n  r2, i3 = split(r1, 4)\n"
                  "T1 = sum(T0, init=0.0)\n",
              "6:12", "'i2, i3 = split(i1)': i3 must be a reduction ID (write r3)");
  expectError(
      "inputs: T0\noutputs: T1\nT0 : f32 global [i0{2}, i1{4}]\n"
      "T1 : f32 global [i2{2}, r3{4}]\n  loop [i4{8}]\n  i4 = merge(i2, r3)\n"
      "T1 = sum(T0, init=0.0)\n",
      "6:8",
      "i2 and r3 do not merge (a reduction ID merges only with reductions or "
      "broadcasts)");
  expectError(
      "inputs: T0\noutputs: T1\nT0 : f32 global [i0{4}]\nT1 : f32 global [b2{6}]\n"
      "  root [i1{4}]\n  b2 = resize(i1, 1, 1)\nT1 = pad(T0, value=0.0)\n",
      "6:8", "b2 must be an iteration ID (write i2)");
}

// A transform's outputs have the extents IterDomain::split, merge and resize give them: a split
// half declared too short would leave elements no loop visits (and the kernel never writes).
TEST(TextIterTypes, TransformOutputsHaveTheirExtents) {
  const std::string head = "inputs: T0\noutputs: T1\nT0 : f32 global [i0{64}]\n";
  const std::string tail = "T1 = neg(T0)\n";
  expectError(head + "T1 : f32 global [i1{64}]\n  loop [i2{10}, i3{4}]\n  i2, i3 = split(i1, 4)\n" +
                  tail,
              "6:12", "'i2, i3 = split(i1)': the extent of i2 must be 16, not 10");
  expectError(head + "T1 : f32 global [i1{64}]\n  loop [i2{16}, i3{8}]\n  i2, i3 = split(i1, 4)\n" +
                  tail,
              "6:12", "the extent of i3 must be 4, not 8");
  expectError(head +
                  "T1 : f32 global [i1{64}]\n  loop [i2{2}, i3{30}]\n"
                  "  i2, i3 = outer_split(i1, 2)\n" +
                  tail,
              "6:12", "the extent of i3 must be 32, not 30");
  expectError(head + "T1 : f32 global [i1{64}]\n  loop [i2{16}, i3{0}]\n  i2, i3 = split(i1, 0)\n" +
                  tail,
              "6:12", "the split factor must be positive, not 0");
  // A ragged split rounds up (the last block is predicated).
  EXPECT_EQ(parseError("inputs: T0\noutputs: T1\nT0 : f32 global [i0{10}]\n"
                       "T1 : f32 global [i1{10}]\n  loop [i2{3}, i3{4}]\n"
                       "  i2, i3 = split(i1, 4)\n" +
                       tail),
            "");
  expectError(
      "inputs: T0\noutputs: T1\nT0 : f32 global [i0{4}, i1{8}]\n"
      "T1 : f32 global [i2{4}, i3{8}]\n  loop [i4{16}]\n  i4 = merge(i2, i3)\n" +
          tail,
      "6:8", "'i4 = merge(i2, i3)': the extent of i4 must be 32, not 16");
  expectError("inputs: T0\noutputs: T1\nT0 : f32 global [i0{4}]\nT1 : f32 global [i2{5}]\n"
              "  root [i1{4}]\n  i2 = resize(i1, 1, 1)\nT1 = pad(T0, value=0.0)\n",
              "6:8", "the extent of i2 must be 6, not 5");
  // Symbolic extents name scalars of their own; only constants are compared.
  EXPECT_EQ(parseError("inputs: T0\noutputs: T1\ns0 : i64\ns1 : i64 = ceil_div(s0, 4)\n"
                       "T0 : f32 global [i0{s0}]\n"
                       "T1 : f32 global [i1{s0}]\n  loop [i2{s1}, i3{4}]\n"
                       "  i2, i3 = split(i1, 4)\n" +
                       tail),
            "");
}

}  // namespace
}  // namespace loom::ir
