// SPDX-License-Identifier: Apache-2.0
// The conversions and dtypes the .fus rule allows (docs/text-format.md, "Types") compute the same
// in kernels and in the reference evaluator: casts that saturate, wrap or round once, integer
// powers, 16-bit and Bool arithmetic. Each fusion runs through FusionExecutorCache (outputs
// poisoned) and must match the reference exactly, on values chosen where the old conversions
// differed (NaN, infinities, out of range, ties that two roundings break the other way). Built
// twice: host backend (emu) and CUDA (gpu).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "loom/eval/compare.h"
#include "loom/ir/ir.h"
#include "loom/ir/parser.h"
#include "loom/runtime/fusion_executor_cache.h"
#include "runtime/runtime_test_backend.h"
#include "runtime/runtime_test_util.h"

namespace loom::runtime {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Tensor values(DataType dt, const std::vector<double>& v) {
  Tensor t = Tensor::empty({int64_t(v.size())}, dt);
  for (size_t i = 0; i < v.size(); ++i) t.setDoubleLinear(int64_t(i), v[i]);
  return t;
}

class TextTypes : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = loom::test::backendUnavailable(testBackend())) GTEST_SKIP() << *why;
  }

  // Runs `text` on `args` and compares every output with the reference within `tol` (exact by
  // default); returns the kernel's outputs.
  static std::vector<Tensor> runAndCheck(const std::string& text,
                                         const std::vector<eval::Argument>& args,
                                         eval::Tolerance tol = {0.0, 0.0}) {
    return test::runAndCheck(ir::parseFusion(text, "types.fus"), args, tol).outputs;
  }

  // inputs: T0 of `in`; outputs: T1 = cast(T0, out).
  static std::string castText(const char* in, const char* out, int n) {
    const std::string size = std::to_string(n);
    return std::string("inputs: T0\noutputs: T1\nT0 : ") + in + " global [i0{" + size +
           "}]\nT1 : " + out + " global [i1{" + size + "}]\nT1 = cast(T0, " + out + ")\n";
  }
};

// Floats to integers truncate toward zero and saturate, NaN giving 0 (the reference did; kernels
// left it to C++'s undefined conversion, which the host emulation compiled to INT_MIN).
TEST_F(TextTypes, FloatToIntegerCastsSaturate) {
  const std::vector<double> v = {kNaN, kInf, -kInf, 3e9, -3e9, 1e19, -1e19, 2.7, -2.7, -0.0};
  for (const char* from : {"f32", "f64", "f16"}) {
    for (const char* to : {"i32", "i64"}) {
      SCOPED_TRACE(std::string(from) + " -> " + to);
      Tensor in = values(*parseDataType(from), v);
      std::vector<Tensor> out = runAndCheck(castText(from, to, int(v.size())), {in});
      // The rule itself: NaN is 0, +inf the largest value, 2.7 truncates to 2.
      ASSERT_EQ(out.size(), 1u);
      EXPECT_EQ(out[0].getDoubleLinear(0), 0.0);
      EXPECT_EQ(out[0].getDoubleLinear(1), std::string(to) == "i32" ? 2147483647.0 : 0x1p63);
      EXPECT_EQ(out[0].getDoubleLinear(7), 2.0);
    }
  }
}

// Integers narrow by wrapping, as torch and the kernels' static_cast do (the reference saturated).
TEST_F(TextTypes, IntegerNarrowingWraps) {
  const std::vector<double> v = {0x1p32 + 5, 0x1p31, -0x1p31 - 1, -7, 0x1p40 - 1};
  std::vector<Tensor> out =
      runAndCheck(castText("i64", "i32", int(v.size())), {values(DataType::Int64, v)});
  EXPECT_EQ(out[0].getDoubleLinear(0), 5.0);
  EXPECT_EQ(out[0].getDoubleLinear(1), -0x1p31);
  EXPECT_EQ(out[0].getDoubleLinear(2), 0x1p31 - 1);
}

// Doubles and integers reach the 16-bit types with one rounding: values just past a 16-bit tie
// that a first rounding to float lands exactly on (then rounded to even: the wrong way).
TEST_F(TextTypes, SixteenBitCastsRoundOnce) {
  const std::vector<double> f16_ties = {1 + 0x1p-11 + 0x1p-40, -(1 + 0x1p-11 + 0x1p-40),
                                        2048 + 1 + 0x1p-30};
  std::vector<Tensor> h =
      runAndCheck(castText("f64", "f16", 3), {values(DataType::Float64, f16_ties)});
  EXPECT_EQ(h[0].getDoubleLinear(0), 1 + 0x1p-10);
  const std::vector<double> bf16_ties = {1 + 0x1p-8 + 0x1p-40, 256 + 1 + 0x1p-30};
  std::vector<Tensor> b =
      runAndCheck(castText("f64", "bf16", 2), {values(DataType::Float64, bf16_ties)});
  EXPECT_EQ(b[0].getDoubleLinear(0), 1 + 0x1p-7);
  // 2^24 + 2^16 + 1 as an integer: float rounds it to the bf16 tie 2^24 + 2^16.
  const std::vector<double> ints = {0x1p24 + 0x1p16 + 1, -(0x1p24 + 0x1p16 + 1),
                                    0x1p30 + 0x1p22 + 1};
  for (const char* from : {"i32", "i64"}) {
    SCOPED_TRACE(from);
    std::vector<Tensor> r =
        runAndCheck(castText(from, "bf16", 3), {values(*parseDataType(from), ints)});
    EXPECT_EQ(r[0].getDoubleLinear(0), 0x1p24 + 0x1p17);
  }
}

// Integer powers are exact and wrap, as the reference computes them (kernels used powf, which
// rounds past 2^24); negative exponents give the integer part of the power.
TEST_F(TextTypes, IntegerPowersAreExact) {
  const std::string text =
      "inputs: T0, T1\noutputs: T2\nT0 : i64 global [i0{5}]\nT1 : i64 global [i1{5}]\n"
      "T2 : i64 global [i2{5}]\nT2 = pow(T0, T1)\n";
  std::vector<Tensor> out = runAndCheck(text, {values(DataType::Int64, {3, 7, 2, -1, -5}),
                                               values(DataType::Int64, {30, 17, -1, -3, 3})});
  EXPECT_EQ(out[0].getDoubleLinear(0), 205891132094649.0);  // 3^30
  const std::string i32 =
      "inputs: T0, T1\noutputs: T2\nT0 : i32 global [i0{2}]\nT1 : i32 global [i1{2}]\n"
      "T2 : i32 global [i2{2}]\nT2 = pow(T0, T1)\n";
  std::vector<Tensor> w =
      runAndCheck(i32, {values(DataType::Int32, {3, 5}), values(DataType::Int32, {21, 3})});
  EXPECT_EQ(w[0].getDoubleLinear(0), 1870418611.0);  // 3^21 wrapped to 32 bits
}

// 16-bit math on 16-bit operands computes in float and rounds once; Bool arithmetic tests the
// result for != 0. Both as the reference computes them.
TEST_F(TextTypes, SixteenBitAndBoolArithmetic) {
  Tensor a = Tensor::empty({64}, DataType::Float16);
  Tensor b = Tensor::empty({64}, DataType::Float16);
  fillRandom(a, 1);
  fillRandom(b, 2);
  const std::string half =
      "inputs: T0, T1\noutputs: T2, T3, T4, T5\nT0 : f16 global [i0{64}]\nT1 : f16 global "
      "[i1{64}]\n"
      "T2 : f16 global [i2{64}]\nT3 : f16 global [i3{64}]\nT4 : f16 global [i4{64}]\n"
      "T5 : f16 global [i5{64}]\nT2 = add(T0, T1)\nT3 = mul(T0, 0.1)\nT4 = div(T0, T1)\n"
      "T5 = sqrt(T2)\n";
  runAndCheck(half, {a, b}, eval::defaultTolerance(DataType::Float16));
  const std::string bools =
      "inputs: T0, T1\noutputs: T2, T3, T4, T5\nT0 : bool global [i0{4}]\nT1 : bool global "
      "[i1{4}]\n"
      "T2 : bool global [i2{4}]\nT3 : bool global [i3{4}]\nT4 : bool global [i4{4}]\n"
      "T5 : bool global [i5{4}]\nT2 = add(T0, T1)\nT3 = mul(T0, T1)\nT4 = sub(T0, T1)\n"
      "T5 = pow(T0, T1)\n";
  runAndCheck(bools, {values(DataType::Bool, {0, 0, 1, 1}), values(DataType::Bool, {0, 1, 0, 1})});
}

}  // namespace
}  // namespace loom::runtime
