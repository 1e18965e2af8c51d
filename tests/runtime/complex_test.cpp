// SPDX-License-Identifier: Apache-2.0
// Complex numbers end to end (issue 36, docs/ops.md "Complex numbers"): every op defined on
// complex values runs through FusionExecutorCache on random and edge values, outputs poisoned, and
// must match the reference evaluator (std::complex<double>); sums over each reduction shape
// (serial, block, grid), a mean, a fusion that mixes real and complex tensors, and the text form
// round trip. Built twice: host backend (emu) and CUDA (gpu).
#include <gtest/gtest.h>

#include <complex>
#include <limits>
#include <random>
#include <string>

#include "loom/eval/compare.h"
#include "loom/ir/ir.h"
#include "loom/ops/ops.h"
#include "loom/runtime/fusion_executor_cache.h"
#include "runtime/runtime_test_backend.h"
#include "runtime/runtime_test_util.h"

namespace loom::runtime {
namespace {

using ir::Fusion;
using ir::FusionGuard;
using ir::TensorView;
using C = std::complex<double>;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Tensor complexValues(DataType dt, const std::vector<C>& v) {
  Tensor t = Tensor::empty({int64_t(v.size())}, dt);
  for (size_t i = 0; i < v.size(); ++i) t.setComplexLinear(int64_t(i), v[i]);
  return t;
}

// Edge values (zeros of both signs, the axes, infinities and NaN in either part), then `n` random
// values with parts in [-4, 4].
std::vector<C> edgeAndRandom(int n = 96) {
  std::vector<C> v = {{0.0, 0.0},    {-0.0, 0.0}, {0.0, -0.0}, {1.0, 0.0},  {-1.0, 0.0},
                      {0.0, 1.0},    {0.0, -1.0}, {3.0, -4.0}, {-2.5, 0.5}, {1e-20, 1e-20},
                      {1e10, -1e10}, {kInf, 0.0}, {0.0, kInf}, {kNaN, 1.0}, {1.0, kNaN}};
  std::mt19937_64 rng(36);
  std::uniform_real_distribution<double> d(-4.0, 4.0);
  for (int i = 0; i < n; ++i) {
    const double re = d(rng);
    v.push_back({re, d(rng)});
  }
  return v;
}

class ComplexNumbers : public ::testing::TestWithParam<DataType> {
 protected:
  void SetUp() override {
    if (auto why = loom::test::backendUnavailable(testBackend())) GTEST_SKIP() << *why;
  }

  // The kernels' math functions (exp, log, atan2, hypot, ...) are a few ulps of the part type
  // from the reference's correctly rounded double result.
  static eval::Tolerance tolerance(DataType dt, int64_t reduction_size = 1) {
    if (dt == DataType::Bool) return {0.0, 0.0};
    if (dt == DataType::Float64 || dt == DataType::ComplexDouble) {
      return {1e-12 * double(reduction_size), 1e-12 * double(reduction_size)};
    }
    return {2e-6 * double(reduction_size), 2e-6 * double(reduction_size)};
  }

  // Runs `f` on `args` (outputs poisoned), compares each output with the reference, checks the
  // text form round trip, and returns the kernel's outputs.
  static std::vector<Tensor> runAndCheck(std::unique_ptr<Fusion> f,
                                         const std::vector<eval::Argument>& args,
                                         int64_t reduction_size = 1) {
    const std::string text = test::expectTextRoundTrip(*f, "complex.fus");
    SCOPED_TRACE(text);
    return test::runAndCheck(std::move(f), args,
                             test::Tolerances::byOutput([&](size_t, DataType dt) {
                               return tolerance(dt, reduction_size);
                             }))
        .outputs;
  }
};

// Each unary op defined on complex values, the tests and the parts included.
TEST_P(ComplexNumbers, UnaryOpsMatchReference) {
  const DataType dt = GetParam();
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().rank(1).dtype(dt).build();
    f->addInput(x);
    for (TensorView* out : {ops::neg(x), ops::conj(x), ops::exp(x), ops::log(x), ops::sqrt(x),
                            ops::reciprocal(x), ops::abs(x), ops::real(x), ops::imag(x),
                            ops::isNan(x), ops::isInf(x), ops::isFinite(x), ops::isReal(x)}) {
      f->addOutput(out);
    }
  }
  std::vector<Tensor> got = runAndCheck(std::move(f), {complexValues(dt, edgeAndRandom())});
  ASSERT_EQ(got.size(), 13u);
  // abs, real and imag give the part type; the tests Bool.
  EXPECT_EQ(got[6].dtype(), complexPartType(dt));
  EXPECT_EQ(got[8].dtype(), complexPartType(dt));
  EXPECT_EQ(got[9].dtype(), DataType::Bool);
  // Known values: |3 - 4i| = 5, conj(3 - 4i) = 3 + 4i, imag(3 - 4i) = -4, isreal(1) is true.
  EXPECT_EQ(got[6].getDoubleLinear(7), 5.0);
  EXPECT_EQ(got[1].getComplexLinear(7), C(3.0, 4.0));
  EXPECT_EQ(got[8].getDoubleLinear(7), -4.0);
  EXPECT_EQ(got[12].getDoubleLinear(3), 1.0);
  EXPECT_EQ(got[12].getDoubleLinear(7), 0.0);
}

// The circular and hyperbolic functions, their inverses, log2, log10 and sigmoid (issue 36): on
// every pairing of signed zeros, finite values, infinities and NaN (C's Annex G, which the
// reference's std::complex follows), points by the branch cuts and large values, and random ones.
TEST_P(ComplexNumbers, TranscendentalOpsMatchReference) {
  const DataType dt = GetParam();
  std::vector<C> values = edgeAndRandom();
  const size_t grid = values.size();
  for (double re : {0.0, -0.0, 0.5, -2.0, kInf, -kInf, kNaN}) {
    for (double im : {0.0, -0.0, 0.5, -2.0, kInf, -kInf, kNaN}) values.push_back({re, im});
  }
  const size_t extra = values.size();
  for (C v : {C(1.0, 1e-3), C(-1.0, -1e-3), C(1e-3, 1.0), C(2.0, 0.0), C(2.0, -0.0), C(-3.0, 0.0),
              C(-3.0, -0.0), C(0.0, 2.0), C(-0.0, -2.0), C(1e5, 1e5), C(-1e9, 3.0), C(30.0, 1.0),
              C(-30.0, 100.0), C(5e3, -2.0)}) {
    values.push_back(v);
  }
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().rank(1).dtype(dt).build();
    f->addInput(x);
    for (TensorView* out :
         {ops::sin(x), ops::cos(x), ops::tan(x), ops::sinh(x), ops::cosh(x), ops::tanh(x),
          ops::asin(x), ops::acos(x), ops::atan(x), ops::asinh(x), ops::acosh(x), ops::atanh(x),
          ops::log2(x), ops::log10(x), ops::sigmoid(x)}) {
      f->addOutput(out);
    }
  }
  std::vector<Tensor> got = runAndCheck(std::move(f), {complexValues(dt, values)});
  ASSERT_EQ(got.size(), 15u);
  for (const Tensor& t : got) EXPECT_EQ(t.dtype(), dt);
  // Known values: sin(i) = i sinh 1, acos(2 + 0i) = -i log(2 + sqrt 3) on the cut's upper side,
  // atanh(inf + 0.5i) = i pi/2, sigmoid(-inf + inf i) is NaN (as torch).
  const auto at = [&](size_t op, size_t i) { return got[op].getComplexLinear(int64_t(i)); };
  EXPECT_NEAR(at(0, 5).imag(), std::sinh(1.0), 1e-6);  // values[5] is i
  EXPECT_NEAR(at(7, extra + 3).imag(), -std::log(2.0 + std::sqrt(3.0)), 1e-6);
  EXPECT_EQ(at(11, grid + 4 * 7 + 2).real(), 0.0);
  EXPECT_NEAR(at(11, grid + 4 * 7 + 2).imag(), std::acos(0.0), 1e-6);
  EXPECT_TRUE(std::isnan(at(14, grid + 5 * 7 + 4).real()));
}

// add, sub, mul, div, eq, ne over every pair of a small set, plus a complex constant operand.
TEST_P(ComplexNumbers, BinaryOpsMatchReference) {
  const DataType dt = GetParam();
  std::vector<C> base = {{0.0, 0.0},  {1.0, 0.0},  {0.0, 1.0}, {3.0, -4.0}, {-2.5, 0.5},
                         {1e-3, 7.0}, {kInf, 1.0}, {2.0, 2.0}, {-1.0, -1.0}};
  std::vector<C> a, b;
  for (C x : base) {
    for (C y : base) {
      a.push_back(x);
      b.push_back(y);
    }
  }
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().rank(1).dtype(dt).build();
    TensorView* y = ops::TensorBuilder().rank(1).dtype(dt).build();
    f->addInput(x);
    f->addInput(y);
    for (TensorView* out :
         {ops::add(x, y), ops::sub(x, y), ops::mul(x, y), ops::div(x, y), ops::eq(x, y),
          ops::ne(x, y), ops::mul(x, C(0.5, -2.0)), ops::add(x, 1.5)}) {
      f->addOutput(out);
    }
  }
  std::vector<Tensor> got = runAndCheck(std::move(f), {complexValues(dt, a), complexValues(dt, b)});
  ASSERT_EQ(got.size(), 8u);
  // (3 - 4i)(3 - 4i) = -7 - 24i: element 3 * 9 + 3.
  EXPECT_EQ(got[2].getComplexLinear(30), C(-7.0, -24.0));
  // A complex constant keeps a c64 tensor c64 (torch: c64 * 1j stays c64).
  EXPECT_EQ(got[6].dtype(), dt);
  EXPECT_EQ(got[4].dtype(), DataType::Bool);
}

// Sums over the inner dim (serial and block reductions), the outer dim, everything (a grid-sized
// reduction), and a mean; the sizes make the schedulers take each path.
TEST_P(ComplexNumbers, SumsAndMeanMatchReference) {
  const DataType dt = GetParam();
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{3, 5}, {16, 1000}, {2, 70000}}) {
    auto f = std::make_unique<Fusion>();
    {
      FusionGuard g(f.get());
      TensorView* x = ops::TensorBuilder().rank(2).dtype(dt).build();
      f->addInput(x);
      f->addOutput(ops::sum(x, {1}));
      f->addOutput(ops::sum(x, {0}));
      f->addOutput(ops::sum(x, {0, 1}));
      f->addOutput(ops::mean(x, {1}));
    }
    Tensor x = Tensor::empty({rows, cols}, dt);
    fillRandom(x, uint64_t(rows * cols));
    SCOPED_TRACE("[" + std::to_string(rows) + ", " + std::to_string(cols) + "]");
    std::vector<Tensor> got = runAndCheck(std::move(f), {x}, rows * cols);
    ASSERT_EQ(got.size(), 4u);
    EXPECT_EQ(got[0].dtype(), dt);  // torch: the sum of c64 is c64
    EXPECT_EQ(got[3].dtype(), dt);
  }
}

// Real and complex tensors in one fusion: promotion (f32 with c64 is c64, f64 with c64 c128),
// casts of real values to complex, the parts back to real math, complex() and where.
TEST_P(ComplexNumbers, MixedRealAndComplexFusion) {
  const DataType dt = GetParam();
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* z = ops::TensorBuilder().rank(2).dtype(dt).build();
    TensorView* r = ops::TensorBuilder().rank(2).dtype(DataType::Float32).build();
    TensorView* d = ops::TensorBuilder().rank(1).dtype(DataType::Float64).build();
    f->addInput(z);
    f->addInput(r);
    f->addInput(d);
    TensorView* zr = ops::mul(z, r);                         // c64 * f32 -> c64 (c128 stays)
    TensorView* zd = ops::add(z, d);                         // broadcast, -> c128
    TensorView* mag = ops::add(ops::abs(zr), ops::real(z));  // back to real math
    TensorView* built = ops::complex(r, ops::neg(r));        // r - r i
    TensorView* picked = ops::where(ops::gt(r, 0.0), z, ops::cast(r, dt));
    TensorView* summed = ops::sum(ops::mul(zd, ops::conj(zd)), {1});  // |zd|^2 as complex
    for (TensorView* out : {zr, zd, mag, built, picked, summed}) f->addOutput(out);
  }
  Tensor z = Tensor::empty({6, 33}, dt);
  Tensor r = Tensor::empty({6, 33}, DataType::Float32);
  Tensor d = Tensor::empty({33}, DataType::Float64);
  fillRandom(z, 1);
  fillRandom(r, 2);
  fillRandom(d, 3);
  std::vector<Tensor> got = runAndCheck(std::move(f), {z, r, d}, 33);
  ASSERT_EQ(got.size(), 6u);
  EXPECT_EQ(got[0].dtype(), dt);
  EXPECT_EQ(got[1].dtype(), DataType::ComplexDouble);
  EXPECT_EQ(got[2].dtype(), complexPartType(dt));
  EXPECT_EQ(got[3].dtype(), DataType::ComplexFloat);
  // complex(r, -r): element 0 is r0 - r0 i exactly.
  const double r0 = r.getDoubleLinear(0);
  EXPECT_EQ(got[3].getComplexLinear(0), C(r0, -r0));
}

INSTANTIATE_TEST_SUITE_P(Types, ComplexNumbers,
                         ::testing::Values(DataType::ComplexFloat, DataType::ComplexDouble),
                         [](const auto& info) { return std::string(dataTypeName(info.param)); });

}  // namespace
}  // namespace loom::runtime
