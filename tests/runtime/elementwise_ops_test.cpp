// SPDX-License-Identifier: Apache-2.0
// nvFuser's further elementwise ops and Loom's integer rules (issue 36, docs/ops.md): every op runs
// through FusionExecutorCache on edge values (NaN, infinities, -0.0, the integer limits, shift
// counts past the width, zero divisors) and random values, outputs poisoned, and must match the
// reference evaluator; each op also survives the text form (printed, parsed, printed the same).
// Built twice: host backend (emu) and CUDA (gpu).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>

#include "loom/eval/compare.h"
#include "loom/ir/ir.h"
#include "loom/ir/parser.h"
#include "loom/ops/ops.h"
#include "loom/runtime/fusion_executor_cache.h"
#include "runtime/runtime_test_backend.h"
#include "runtime/runtime_test_util.h"

namespace loom::runtime {
namespace {

using ir::Fusion;
using ir::FusionGuard;
using ir::TensorView;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kI32Max = 2147483647.0;
constexpr double kI32Min = -2147483648.0;

using Unary = std::function<TensorView*(TensorView*)>;
using Binary = std::function<TensorView*(TensorView*, TensorView*)>;

Tensor values(DataType dt, const std::vector<double>& v) {
  Tensor t = Tensor::empty({int64_t(v.size())}, dt);
  for (size_t i = 0; i < v.size(); ++i) t.setDoubleLinear(int64_t(i), v[i]);
  return t;
}

// Edge values then `n` random ones in [lo, hi].
std::vector<double> floatValues(double lo, double hi, int n = 64) {
  std::vector<double> v = {0.0,    -0.0,     kInf, -kInf, kNaN,   1.0,  -1.0,  2.0,
                           -2.0,   0.5,      -0.5, 1e-30, -1e-30, 1e30, -1e30, 100.0,
                           -100.0, 0.999999, -3.0, 1e-8,  3.5,    -2.5};
  std::mt19937_64 rng(36);
  std::uniform_real_distribution<double> d(lo, hi);
  for (int i = 0; i < n; ++i) v.push_back(d(rng));
  return v;
}

// Integers whose edges matter for `dt`: around 0, shift widths, the limits (Int64: within 2^53,
// where the reference's doubles are exact).
std::vector<double> intValues(DataType dt) {
  std::vector<double> v = {0, 1, -1, 2, -2, 3, -7, 12, -18, 31, 32, 33, 63, 64, -33, 1000003};
  if (dt == DataType::Int32) {
    for (double x : {kI32Max, kI32Min, kI32Max - 1, kI32Min + 1, 65536.0}) v.push_back(x);
  } else {
    for (double x : {0x1p53, -0x1p53, 0x1p40 + 3, -0x1p31, 0x1p31}) v.push_back(x);
  }
  return v;
}

// Every pair of `v`, as two inputs of v.size()^2 elements.
std::pair<std::vector<double>, std::vector<double>> pairs(const std::vector<double>& v) {
  std::vector<double> a, b;
  for (double x : v) {
    for (double y : v) {
      a.push_back(x);
      b.push_back(y);
    }
  }
  return {a, b};
}

class ElementwiseOps : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = loom::test::backendUnavailable(testBackend())) GTEST_SKIP() << *why;
  }

  static RuntimeOptions options() { return poisonedOptions(); }

  // The CUDA math functions are a few ulps from the correctly rounded double result.
  static eval::Tolerance tolerance(DataType dt) {
    if (isIntegralType(dt) || dt == DataType::Bool) return {0.0, 0.0};
    return dt == DataType::Float64 ? eval::Tolerance{1e-12, 1e-12} : eval::Tolerance{1e-5, 1e-6};
  }

  // Runs `f` on `args` (outputs poisoned), compares every output with the reference, checks the
  // text form round trip, and returns the kernel's outputs.
  static std::vector<Tensor> runAndCheck(std::unique_ptr<Fusion> f,
                                         const std::vector<eval::Argument>& args,
                                         const std::vector<std::string>& names) {
    test::expectTextRoundTrip(*f, "ops.fus");
    return test::runAndCheck(
               std::move(f), args,
               test::Tolerances::byOutput([](size_t, DataType dt) { return tolerance(dt); }), names)
        .outputs;
  }

  static std::vector<Tensor> runUnary(DataType dt, const std::vector<double>& v,
                                      const std::vector<std::pair<std::string, Unary>>& ops) {
    auto f = std::make_unique<Fusion>();
    std::vector<std::string> names;
    {
      FusionGuard g(f.get());
      TensorView* x = ops::TensorBuilder().rank(1).dtype(dt).build();
      f->addInput(x);
      for (const auto& [name, op] : ops) {
        f->addOutput(op(x));
        names.push_back(name);
      }
    }
    return runAndCheck(std::move(f), {values(dt, v)}, names);
  }

  static std::vector<Tensor> runBinary(DataType dt, const std::vector<double>& v,
                                       const std::vector<std::pair<std::string, Binary>>& ops) {
    auto [a, b] = pairs(v);
    auto f = std::make_unique<Fusion>();
    std::vector<std::string> names;
    {
      FusionGuard g(f.get());
      TensorView* x = ops::TensorBuilder().rank(1).dtype(dt).build();
      TensorView* y = ops::TensorBuilder().rank(1).dtype(dt).build();
      f->addInput(x);
      f->addInput(y);
      for (const auto& [name, op] : ops) {
        f->addOutput(op(x, y));
        names.push_back(name);
      }
    }
    return runAndCheck(std::move(f), {values(dt, a), values(dt, b)}, names);
  }
};

#define LOOM_OP(name, fn)                          \
  {                                                \
    name, [](TensorView* x) { return ops::fn(x); } \
  }
#define LOOM_OP2(name, fn)                                           \
  {                                                                  \
    name, [](TensorView* x, TensorView* y) { return ops::fn(x, y); } \
  }

// The floating functions on f32 and f64 (and bf16, computed in f32), edge values included.
TEST_F(ElementwiseOps, FloatingUnaryMatchReference) {
  const std::vector<std::pair<std::string, Unary>> fns = {
      LOOM_OP("acos", acos),         LOOM_OP("acosh", acosh),       LOOM_OP("asin", asin),
      LOOM_OP("asinh", asinh),       LOOM_OP("atan", atan),         LOOM_OP("atanh", atanh),
      LOOM_OP("cosh", cosh),         LOOM_OP("sinh", sinh),         LOOM_OP("tan", tan),
      LOOM_OP("erfc", erfc),         LOOM_OP("erfinv", erfinv),     LOOM_OP("erfcinv", erfcinv),
      LOOM_OP("expm1", expm1),       LOOM_OP("log10", log10),       LOOM_OP("log1p", log1p),
      LOOM_OP("lgamma", lgamma),     LOOM_OP("trunc", trunc),       LOOM_OP("frac", frac),
      LOOM_OP("signbit", signbit),   LOOM_OP("isfinite", isFinite), LOOM_OP("isneginf", isNegInf),
      LOOM_OP("isposinf", isPosInf), LOOM_OP("isreal", isReal)};
  for (DataType dt : {DataType::Float32, DataType::Float64, DataType::BFloat16}) {
    SCOPED_TRACE(dataTypeName(dt));
    std::vector<double> v = floatValues(-3.0, 3.0);
    // The inverse error functions' domains, densely near their ends.
    for (double y : {0.9999, -0.9999, 1.9999, 1e-6, 1e-20, 0.25, 1.75}) v.push_back(y);
    runUnary(dt, v, fns);
  }
}

// A few results pinned to the values torch gives, so that the reference itself is checked.
TEST_F(ElementwiseOps, UnaryEdgeValuesAreTorchs) {
  const std::vector<double> v = {-0.0, kInf, -kInf, kNaN, 1.0, -1.0, 0.0, 2.0};
  std::vector<Tensor> out =
      runUnary(DataType::Float32, v,
               {LOOM_OP("frac", frac), LOOM_OP("signbit", signbit), LOOM_OP("erfinv", erfinv),
                LOOM_OP("atanh", atanh), LOOM_OP("lgamma", lgamma)});
  EXPECT_TRUE(std::isnan(out[0].getDoubleLinear(1)));    // frac(inf)
  EXPECT_EQ(out[1].getDoubleLinear(0), 1.0);             // signbit(-0.0)
  EXPECT_EQ(out[1].getDoubleLinear(1), 0.0);             // signbit(inf)
  EXPECT_EQ(out[2].getDoubleLinear(4), kInf);            // erfinv(1)
  EXPECT_EQ(out[2].getDoubleLinear(5), -kInf);           // erfinv(-1)
  EXPECT_TRUE(std::isnan(out[2].getDoubleLinear(7)));    // erfinv(2)
  EXPECT_TRUE(std::signbit(out[2].getDoubleLinear(0)));  // erfinv(-0.0) is -0.0
  EXPECT_EQ(out[3].getDoubleLinear(4), kInf);            // atanh(1)
  EXPECT_EQ(out[4].getDoubleLinear(6), kInf);            // lgamma(0)
  EXPECT_TRUE(std::isnan(out[2].getDoubleLinear(3)));    // erfinv(nan)
}

TEST_F(ElementwiseOps, FloatingBinaryMatchReference) {
  const std::vector<std::pair<std::string, Binary>> fns = {
      LOOM_OP2("atan2", atan2), LOOM_OP2("remainder", remainder), LOOM_OP2("mod", mod),
      LOOM_OP2("fmod", fmod),   LOOM_OP2("nextafter", nextafter), LOOM_OP2("div", cDiv),
      LOOM_OP2("truediv", div)};
  const std::vector<double> v = {0.0, -0.0, kInf, -kInf, kNaN,  1.0, -1.0,
                                 3.0, -3.0, 5.5,  -7.25, 1e-40, 1e30};
  for (DataType dt : {DataType::Float32, DataType::Float64}) {
    SCOPED_TRACE(dataTypeName(dt));
    runBinary(dt, v, fns);
  }
  std::vector<Tensor> out =
      runBinary(DataType::Float32, {-1.0, 3.0, -0.0, 1.0, 2.0},
                {LOOM_OP2("remainder", remainder), LOOM_OP2("nextafter", nextafter)});
  // remainder takes the divisor's sign: remainder(-1, 3) = 2; nextafter(1, 2) is 1 + 2^-23.
  EXPECT_EQ(out[0].getDoubleLinear(0 * 5 + 1), 2.0);
  EXPECT_EQ(out[1].getDoubleLinear(3 * 5 + 4), 1.0 + 0x1p-23);
}

// Integer math is exact and total: division and remainders by 0 and of the most negative value
// by -1, gcd of negatives, shifts by counts past the width, wrapping + - * neg abs.
TEST_F(ElementwiseOps, IntegerOpsMatchReference) {
  const std::vector<std::pair<std::string, Binary>> fns = {
      LOOM_OP2("div", cDiv),
      LOOM_OP2("mod", mod),
      LOOM_OP2("fmod", fmod),
      LOOM_OP2("remainder", remainder),
      LOOM_OP2("gcd", gcd),
      LOOM_OP2("bitwise_and", bitwiseAnd),
      LOOM_OP2("bitwise_or", bitwiseOr),
      LOOM_OP2("bitwise_xor", bitwiseXor),
      LOOM_OP2("bitwise_left_shift", bitwiseLeftShift),
      LOOM_OP2("bitwise_right_shift", bitwiseRightShift),
      LOOM_OP2("logical_right_shift", logicalRightShift),
      LOOM_OP2("add", add),
      LOOM_OP2("sub", sub),
      LOOM_OP2("mul", mul),
      LOOM_OP2("pow", pow)};
  const std::vector<std::pair<std::string, Unary>> unary = {LOOM_OP("neg", neg),
                                                            LOOM_OP("abs", abs),
                                                            LOOM_OP("bitwise_not", bitwiseNot),
                                                            LOOM_OP("trunc", trunc),
                                                            LOOM_OP("frac", frac),
                                                            LOOM_OP("signbit", signbit),
                                                            LOOM_OP("isfinite", isFinite),
                                                            LOOM_OP("isneginf", isNegInf)};
  for (DataType dt : {DataType::Int32, DataType::Int64}) {
    SCOPED_TRACE(dataTypeName(dt));
    runBinary(dt, intValues(dt), fns);
    runUnary(dt, intValues(dt), unary);
  }
  // Int32 at its limits, against the values torch gives.
  std::vector<Tensor> out =
      runBinary(DataType::Int32, {kI32Min, -1.0, 0.0, 7.0, 33.0},
                {LOOM_OP2("div", cDiv), LOOM_OP2("remainder", remainder), LOOM_OP2("gcd", gcd),
                 LOOM_OP2("bitwise_right_shift", bitwiseRightShift), LOOM_OP2("mul", mul)});
  EXPECT_EQ(out[0].getDoubleLinear(0 * 5 + 1), kI32Min);  // INT_MIN / -1 wraps
  EXPECT_EQ(out[0].getDoubleLinear(3 * 5 + 2), 0.0);      // 7 / 0 is 0 (defined, docs/ops.md)
  EXPECT_EQ(out[1].getDoubleLinear(1 * 5 + 3), 6.0);      // remainder(-1, 7)
  EXPECT_EQ(out[2].getDoubleLinear(0 * 5 + 2), kI32Min);  // gcd(INT_MIN, 0)
  EXPECT_EQ(out[3].getDoubleLinear(1 * 5 + 4), -1.0);     // -1 >> 33 fills with the sign
  EXPECT_EQ(out[4].getDoubleLinear(0 * 5 + 1), kI32Min);  // INT_MIN * -1 wraps
}

// Int64 at its limits (past 2^53, where the reference's doubles round): the kernel's exact values.
TEST_F(ElementwiseOps, Int64LimitsWrapExactly) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().rank(1).dtype(DataType::Int64).build();
    f->addInput(x);
    f->addOutput(ops::add(x, int64_t(1)));
    f->addOutput(ops::neg(x));
    f->addOutput(ops::abs(x));
    f->addOutput(ops::cDiv(x, int64_t(-1)));
    f->addOutput(ops::bitwiseLeftShift(x, int64_t(63)));
    f->addOutput(ops::logicalRightShift(x, int64_t(60)));
    f->addOutput(ops::gcd(x, int64_t(6)));
  }
  Tensor in = Tensor::empty({3}, DataType::Int64);
  in.dataAs<int64_t>()[0] = kMax;
  in.dataAs<int64_t>()[1] = kMin;
  in.dataAs<int64_t>()[2] = -3;
  FusionExecutorCache cache(std::move(f), options());
  std::vector<eval::Argument> args = {in};
  std::vector<Tensor> out = cache.run(args);
  ASSERT_EQ(out.size(), 7u);
  auto at = [&](size_t o, int i) { return out[o].dataAs<int64_t>()[i]; };
  EXPECT_EQ(at(0, 0), kMin);  // MAX + 1 wraps
  EXPECT_EQ(at(1, 1), kMin);  // -MIN wraps
  EXPECT_EQ(at(2, 1), kMin);  // abs(MIN) is MIN, as torch
  EXPECT_EQ(at(3, 1), kMin);  // MIN / -1
  EXPECT_EQ(at(4, 2), kMin);  // -3 << 63
  EXPECT_EQ(at(5, 1), 8);     // MIN >>> 60
  EXPECT_EQ(at(6, 1), -2);    // gcd(MIN, 6), as torch
  EXPECT_EQ(at(6, 2), 3);
}

// Bool takes the bitwise ops as logical ones, and the tests.
TEST_F(ElementwiseOps, BoolBitwiseMatchReference) {
  runBinary(DataType::Bool, {0.0, 1.0},
            {LOOM_OP2("bitwise_and", bitwiseAnd), LOOM_OP2("bitwise_or", bitwiseOr),
             LOOM_OP2("bitwise_xor", bitwiseXor)});
  runUnary(DataType::Bool, {0.0, 1.0},
           {LOOM_OP("bitwise_not", bitwiseNot), LOOM_OP("signbit", signbit),
            LOOM_OP("isfinite", isFinite)});
}

// The composites: addcmul, threshold, triu (also on a batch and with negative diagonals).
TEST_F(ElementwiseOps, CompositesMatchReference) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().rank(3).build();
    TensorView* y = ops::TensorBuilder().rank(3).build();
    f->addInput(x);
    f->addInput(y);
    f->addOutput(ops::addcmul(x, y, x, 0.5));
    f->addOutput(ops::threshold(x, 0.1, -7.0));
    f->addOutput(ops::triu(x));
    f->addOutput(ops::triu(x, -1));
    f->addOutput(ops::triu(y, 2));
  }
  std::vector<double> a = floatValues(-2.0, 2.0, 60 - 22);
  std::vector<double> b(a.rbegin(), a.rend());
  Tensor x = values(DataType::Float32, a);
  Tensor y = values(DataType::Float32, b);
  std::vector<int64_t> shape = {3, 4, 5};
  Tensor x3 = Tensor::empty(shape, DataType::Float32);
  Tensor y3 = Tensor::empty(shape, DataType::Float32);
  for (int64_t i = 0; i < 60; ++i) {
    x3.setDoubleLinear(i, x.getDoubleLinear(i));
    y3.setDoubleLinear(i, y.getDoubleLinear(i));
  }
  std::vector<Tensor> out =
      runAndCheck(std::move(f), {x3, y3}, {"addcmul", "threshold", "triu", "triu-1", "triu2"});
  // triu zeroes (i, j) with j < i: element (0, 1, 0) of a finite input.
  EXPECT_EQ(out[2].getDoubleLinear(5), 0.0);
  EXPECT_EQ(out[2].getDoubleLinear(1), x3.getDoubleLinear(1));
}

// Every op of the lists in ir/op_types.h, reached by its type (ops::unaryOp / ops::binaryOp, as
// the Python bindings reach them) on the dtypes its kind takes: an op added to a list with its
// reference math and kernel function is checked here with no line of this test naming it.
std::vector<DataType> unaryDtypes(ir::UnaryKind kind) {
  using K = ir::UnaryKind;
  switch (kind) {
    case K::Floating: return {DataType::Float32, DataType::Float64, DataType::Int32};
    case K::SameType: return {DataType::Float32, DataType::Int32};
    case K::Test: return {DataType::Float32, DataType::Int32, DataType::Bool};
    case K::Logical: return {DataType::Bool};
    case K::Bitwise: return {DataType::Int32, DataType::Bool};
    case K::ComplexPart:      // complex values: complex_test.cpp
    case K::Cast: return {};  // needs a dtype: ops::cast
  }
  return {};
}

std::vector<DataType> binaryDtypes(ir::BinaryKind kind) {
  using K = ir::BinaryKind;
  switch (kind) {
    case K::Arithmetic:
    case K::NotBool:
    case K::Floating: return {DataType::Float32, DataType::Int32};
    case K::FloatOnly: return {DataType::Float32, DataType::Float64};
    case K::Comparison: return {DataType::Float32, DataType::Int32, DataType::Bool};
    case K::Logical: return {DataType::Bool};
    case K::Bitwise: return {DataType::Int32, DataType::Bool};
    case K::Integer: return {DataType::Int32};
    case K::Index: return {};  // no tensor op (below)
  }
  return {};
}

std::vector<double> listValues(DataType dt) {
  if (dt == DataType::Bool) return {0.0, 1.0};
  if (isIntegralType(dt)) return intValues(dt);
  std::vector<double> v = floatValues(-3.0, 3.0, 24);
  // Where erfc underflows and exp(x^2) overflows, and digamma's poles and reflection.
  for (double x : {12.0, -12.0, 27.0, -26.0, 30.0, -30.0, -4.0, -4.5, 0.25, 1e-300}) v.push_back(x);
  return v;
}

TEST_F(ElementwiseOps, EveryListedUnaryOpMatchesReference) {
  for (DataType dt : {DataType::Float32, DataType::Float64, DataType::Int32, DataType::Bool}) {
    SCOPED_TRACE(dataTypeName(dt));
    std::vector<std::pair<std::string, Unary>> fns;
    for (ir::UnaryOpType t : ir::kUnaryOpTypes) {
      std::vector<DataType> dts = unaryDtypes(ir::unaryKind(t));
      if (std::find(dts.begin(), dts.end(), dt) == dts.end()) continue;
      fns.emplace_back(std::string(ir::opTypeName(t)),
                       [t](TensorView* x) { return ops::unaryOp(t, x); });
    }
    ASSERT_FALSE(fns.empty());
    runUnary(dt, listValues(dt), fns);
  }
}

TEST_F(ElementwiseOps, EveryListedBinaryOpMatchesReference) {
  for (DataType dt : {DataType::Float32, DataType::Float64, DataType::Int32, DataType::Bool}) {
    SCOPED_TRACE(dataTypeName(dt));
    std::vector<std::pair<std::string, Binary>> fns;
    for (ir::BinaryOpType t : ir::kBinaryOpTypes) {
      std::vector<DataType> dts = binaryDtypes(ir::binaryKind(t));
      if (std::find(dts.begin(), dts.end(), dt) == dts.end()) continue;
      fns.emplace_back(std::string(ir::opTypeName(t)),
                       [t](TensorView* x, TensorView* y) { return ops::binaryOp(t, x, y); });
    }
    ASSERT_FALSE(fns.empty());
    std::vector<double> v = dt == DataType::Float32 || dt == DataType::Float64
                                ? std::vector<double>{0.0, -0.0, kInf, -kInf, kNaN,  1.0, -1.0,
                                                      3.0, -3.0, 5.5,  -7.25, 1e-40, 1e30}
                                : listValues(dt);
    runBinary(dt, v, fns);
  }
}

// erfcx and digamma at their edges, against the values torch.special gives (f32 and f64).
TEST_F(ElementwiseOps, ErfcxAndDigammaEdgeValuesAreTorchs) {
  const std::vector<double> v = {0.0, -0.0, kInf, -kInf, kNaN, -1.0, -2.0, 30.0, -30.0, 1.0, -1e30};
  for (DataType dt : {DataType::Float32, DataType::Float64}) {
    SCOPED_TRACE(dataTypeName(dt));
    std::vector<Tensor> out = runUnary(
        dt, v,
        {{"erfcx", [](TensorView* x) { return ops::unaryOp(ir::UnaryOpType::Erfcx, x); }},
         {"digamma", [](TensorView* x) { return ops::unaryOp(ir::UnaryOpType::Digamma, x); }}});
    auto at = [&](size_t o, int i) { return out[o].getDoubleLinear(i); };
    EXPECT_EQ(at(0, 0), 1.0);                           // erfcx(0)
    EXPECT_EQ(at(0, 2), 0.0);                           // erfcx(inf)
    EXPECT_EQ(at(0, 3), kInf);                          // erfcx(-inf)
    EXPECT_TRUE(std::isnan(at(0, 4)));                  // erfcx(nan)
    EXPECT_EQ(at(0, 8), kInf);                          // erfcx(-30): 2 e^900 overflows
    EXPECT_NEAR(at(0, 7), 0.018795888861416751, 1e-7);  // erfcx(30), past erfc's underflow
    EXPECT_EQ(at(0, 10), kInf);                         // erfcx(-1e30), where x^2 is inexact
    EXPECT_EQ(at(1, 0), -kInf);                         // digamma(+0)
    EXPECT_EQ(at(1, 1), kInf);                          // digamma(-0)
    EXPECT_EQ(at(1, 2), kInf);                          // digamma(inf)
    EXPECT_TRUE(std::isnan(at(1, 3)));                  // digamma(-inf)
    EXPECT_TRUE(std::isnan(at(1, 5)));                  // digamma(-1): a pole
    EXPECT_TRUE(std::isnan(at(1, 6)));                  // digamma(-2)
    EXPECT_NEAR(at(1, 9), -0.57721566490153286, 1e-7);  // digamma(1) = -Euler's gamma
  }
}

// The ops of the lists without a tensor form by type name what to use instead.
TEST_F(ElementwiseOps, ListedOpsWithoutTensorFormAreUserErrors) {
  Fusion f;
  FusionGuard g(&f);
  TensorView* x = ops::TensorBuilder().rank(1).build();
  auto message = [](auto&& fn) -> std::string {
    try {
      fn();
    } catch (const UserError& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_NE(message([&] {
              ops::unaryOp(ir::UnaryOpType::Cast, x);
            }).find("cast: unaryOp has no dtype to convert T0 to; use ops::cast(x, dtype)"),
            std::string::npos);
  EXPECT_NE(message([&] {
              ops::binaryOp(ir::BinaryOpType::CeilDiv, x, x);
            }).find("ceil_div is index math; the ops build no tensor op of it"),
            std::string::npos);
}

// Wrong dtypes are user errors naming the op and the operands.
TEST_F(ElementwiseOps, WrongDtypesAreUserErrors) {
  Fusion f;
  FusionGuard g(&f);
  TensorView* x = ops::TensorBuilder().rank(1).build();
  TensorView* i = ops::TensorBuilder().rank(1).dtype(DataType::Int32).build();
  auto message = [](auto&& fn) -> std::string {
    try {
      fn();
    } catch (const UserError& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_NE(message([&] { ops::gcd(x, i); }).find("gcd: takes integers"), std::string::npos);
  EXPECT_NE(message([&] { ops::bitwiseAnd(x, x); }).find("bitwise_and: takes integers or Bool"),
            std::string::npos);
  EXPECT_NE(message([&] { ops::bitwiseLeftShift(i, 1.5); }).find("bitwise_left_shift"),
            std::string::npos);
  EXPECT_NE(message([&] { ops::nextafter(i, i); }).find("nextafter: takes Float32 or Float64"),
            std::string::npos);
  EXPECT_NE(message([&] { ops::bitwiseNot(x); }).find("bitwise_not"), std::string::npos);
  EXPECT_NE(message([&] { ops::triu(ops::sum(x, {0})); }).find("triu: "), std::string::npos);
  // The text form checks the same dtypes (ir::verify).
  auto text = [](const char* dt, const char* op) {
    return std::string("inputs: T0\noutputs: T1\nT0 : ") + dt + " global [i0{4}]\nT1 : " + dt +
           " global [i1{4}]\nT1 = " + op + "(T0, T0)\n";
  };
  EXPECT_NE(message([&] { ir::parseFusion(text("f32", "bitwise_and"), "t.fus"); })
                .find("bitwise_and takes integers or Bool, not f32"),
            std::string::npos);
  EXPECT_NE(message([&] { ir::parseFusion(text("bool", "gcd"), "t.fus"); })
                .find("gcd is not defined for Bool"),
            std::string::npos);
  EXPECT_NE(message([&] { ir::parseFusion(text("i32", "atan2"), "t.fus"); })
                .find("atan2 computes in a floating dtype, not i32"),
            std::string::npos);
  EXPECT_NE(message([&] { ir::parseFusion(text("f16", "nextafter"), "t.fus"); })
                .find("nextafter computes in f32 or f64, not f16"),
            std::string::npos);
}

}  // namespace
}  // namespace loom::runtime
