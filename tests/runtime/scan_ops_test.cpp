// SPDX-License-Identifier: Apache-2.0
// argmax / argmin and the scans (issue 30): fusions run through FusionExecutorCache with outputs
// poisoned, compared with the reference evaluator and with an independent host computation of
// torch's rule (first index of the extreme value, NaN the extreme; prefix sums, products, maxima
// and minima), along inner and outer dims, rows shorter and longer than a block.
// Built twice: host backend (emu) and CUDA (gpu).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
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

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A [rows, cols] input of `dt`: values from a small set (many ties), some NaN (floats) when
// `nan_every` > 0 (every nan_every-th row gets one or two NaNs at random places).
Tensor tiesInput(DataType dt, int64_t rows, int64_t cols, int64_t nan_every, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> v(-3, 3);
  Tensor t = Tensor::empty({rows, cols}, dt);
  for (int64_t i = 0; i < rows * cols; ++i) t.setDoubleLinear(i, double(v(rng)));
  if (nan_every > 0) {
    std::uniform_int_distribution<int64_t> col(0, cols - 1);
    for (int64_t r = 0; r < rows; r += nan_every) {
      t.setDoubleLinear(r * cols + col(rng), kNaN);
      if (r % 2 == 0) t.setDoubleLinear(r * cols + col(rng), kNaN);
    }
  }
  return t;
}

// torch's argmax/argmin of a [rows, cols] tensor along `dim`, computed directly.
std::vector<int64_t> hostArgExtreme(const Tensor& x, int64_t dim, bool largest) {
  const int64_t rows = x.size(0), cols = x.size(1);
  const int64_t outer = dim == 1 ? rows : cols, len = dim == 1 ? cols : rows;
  std::vector<int64_t> out;
  for (int64_t o = 0; o < outer; ++o) {
    int64_t best = 0;
    auto at = [&](int64_t k) { return x.getDoubleLinear(dim == 1 ? o * cols + k : k * cols + o); };
    for (int64_t k = 1; k < len; ++k) {
      double b = at(best), c = at(k);
      if (std::isnan(b)) break;
      if (std::isnan(c) || (largest ? c > b : c < b)) best = k;
    }
    out.push_back(best);
  }
  return out;
}

// Runs `f` (outputs poisoned) on `args`, checks every output against the reference within `tol`
// and the text form round trip; returns the outputs and each kernel's "scheduler: params".
std::pair<std::vector<Tensor>, std::vector<std::string>> runChecked(
    std::unique_ptr<Fusion> f, const std::vector<eval::Argument>& args, eval::Tolerance tol) {
  test::expectTextRoundTrip(*f, "scan_ops.fus");
  test::CheckedRun run = test::runAndCheck(std::move(f), args, tol);
  return {std::move(run.outputs), run.kernels()};
}

class ArgReduce : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = loom::test::backendUnavailable(testBackend())) GTEST_SKIP() << *why;
  }

  static std::vector<Tensor> run(std::unique_ptr<Fusion> f,
                                 const std::vector<eval::Argument>& args) {
    return runChecked(std::move(f), args, {0.0, 0.0}).first;
  }

  // argmax and argmin of a [rows, cols] input along `dim`, against the host rule.
  static void check(DataType dt, int64_t rows, int64_t cols, int64_t dim, int64_t nan_every) {
    SCOPED_TRACE(std::string(dataTypeName(dt)) + " [" + std::to_string(rows) + ", " +
                 std::to_string(cols) + "] dim " + std::to_string(dim));
    auto f = std::make_unique<Fusion>();
    {
      FusionGuard g(f.get());
      TensorView* x = ops::TensorBuilder().rank(2).dtype(dt).build();
      f->addInput(x);
      f->addOutput(ops::argmax(x, dim));
      f->addOutput(ops::argmin(x, dim));
    }
    Tensor x = tiesInput(dt, rows, cols, nan_every, uint64_t(rows * 31 + cols + dim));
    std::vector<Tensor> got = run(std::move(f), {x});
    ASSERT_EQ(got.size(), 2u);
    for (int k = 0; k < 2; ++k) {
      EXPECT_EQ(got[size_t(k)].dtype(), DataType::Int64);
      std::vector<int64_t> want = hostArgExtreme(x, dim, k == 0);
      ASSERT_EQ(got[size_t(k)].numel(), int64_t(want.size()));
      for (size_t i = 0; i < want.size(); ++i) {
        ASSERT_EQ(int64_t(got[size_t(k)].getDoubleLinear(int64_t(i))), want[i])
            << (k == 0 ? "argmax" : "argmin") << " of row " << i;
      }
    }
  }
};

TEST_F(ArgReduce, InnerDimShortRowsTiesAndNaN) { check(DataType::Float32, 37, 7, 1, 3); }
TEST_F(ArgReduce, InnerDimRowsLongerThanABlock) { check(DataType::Float32, 5, 3000, 1, 2); }
TEST_F(ArgReduce, OuterDim) { check(DataType::Float32, 300, 19, 0, 0); }
TEST_F(ArgReduce, OuterDimWithNaN) {
  // NaNs along dim 0: every third row holds some, so most columns have one somewhere.
  check(DataType::Float32, 40, 33, 0, 3);
}
TEST_F(ArgReduce, HalfAndDouble) {
  check(DataType::Float16, 9, 130, 1, 4);
  check(DataType::Float64, 9, 130, 1, 4);
}
TEST_F(ArgReduce, Integers) {
  check(DataType::Int32, 17, 515, 1, 0);
  check(DataType::Int64, 64, 5, 0, 0);
}

// dim=None flattens (the index is row-major over the whole tensor); keepdim keeps rank.
TEST_F(ArgReduce, FlattenedAndKeepdim) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().rank(3).dtype(DataType::Float32).build();
    f->addInput(x);
    f->addOutput(ops::argmax(x, std::nullopt));
    f->addOutput(ops::argmin(x, std::nullopt, /*keepdim=*/true));
    f->addOutput(ops::argmax(x, 1, /*keepdim=*/true));
  }
  Tensor x = Tensor::empty({3, 4, 5}, DataType::Float32);
  for (int64_t i = 0; i < 60; ++i) x.setDoubleLinear(i, double((i * 7) % 11));
  x.setDoubleLinear(41, -5.0);  // the one minimum
  std::vector<Tensor> got = run(std::move(f), {x});
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].dim(), 0);
  EXPECT_EQ(got[0].getDoubleLinear(0), 3.0);  // (3 * 7) % 11 = 10 first at i = 3
  EXPECT_EQ(got[1].sizes(), (std::vector<int64_t>{1, 1, 1}));
  EXPECT_EQ(got[1].getDoubleLinear(0), 41.0);
  EXPECT_EQ(got[2].sizes(), (std::vector<int64_t>{3, 1, 5}));
}

TEST_F(ArgReduce, BoolAndBadDimAreUserErrors) {
  Fusion f;
  FusionGuard g(&f);
  TensorView* b = ops::TensorBuilder().rank(2).dtype(DataType::Bool).build();
  TensorView* x = ops::TensorBuilder().rank(2).dtype(DataType::Float32).build();
  try {
    ops::argmax(b, 0);
    FAIL() << "argmax of Bool accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("is Bool"), std::string::npos) << e.what();
  }
  try {
    ops::argmin(x, 2);
    FAIL() << "argmin along dim 2 of a 2-D tensor accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("argmin: dimension 2 is out of range"), std::string::npos)
        << e.what();
  }
}

// ---- Scans --------------------------------------------------------------------------------

// Uniform values in [lo, hi].
Tensor uniformInput(DataType dt, std::vector<int64_t> sizes, double lo, double hi, uint64_t seed) {
  Tensor t = Tensor::empty(std::move(sizes), dt);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.setDoubleLinear(i, d(rng));
  return t;
}

// The inclusive prefix of `op` along `dim` of a [rows, cols] tensor, in double.
std::vector<double> hostScan(const Tensor& x, int64_t dim,
                             const std::function<double(double, double)>& op) {
  const int64_t rows = x.size(0), cols = x.size(1);
  std::vector<double> out(size_t(rows * cols));
  const int64_t outer = dim == 1 ? rows : cols, len = dim == 1 ? cols : rows;
  for (int64_t o = 0; o < outer; ++o) {
    double acc = 0.0;
    for (int64_t k = 0; k < len; ++k) {
      const int64_t at = dim == 1 ? o * cols + k : k * cols + o;
      acc = k == 0 ? x.getDoubleLinear(at) : op(acc, x.getDoubleLinear(at));
      out[size_t(at)] = acc;
    }
  }
  return out;
}

class Scan : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = loom::test::backendUnavailable(testBackend())) GTEST_SKIP() << *why;
  }

  // cumsum, cummax and cummin of one [rows, cols] f32 input and cumprod of another along `dim`,
  // in scan kernels, against the reference and the host prefix.
  static void checkAll(int64_t rows, int64_t cols, int64_t dim) {
    SCOPED_TRACE("[" + std::to_string(rows) + ", " + std::to_string(cols) + "] dim " +
                 std::to_string(dim));
    auto f = std::make_unique<Fusion>();
    {
      FusionGuard g(f.get());
      TensorView* x = ops::TensorBuilder().rank(2).dtype(DataType::Float32).build();
      TensorView* p = ops::TensorBuilder().rank(2).dtype(DataType::Float32).build();
      f->addInput(x);
      f->addInput(p);
      f->addOutput(ops::cumsum(x, dim));
      f->addOutput(ops::cumprod(p, dim));
      f->addOutput(ops::cummax(x, dim));
      f->addOutput(ops::cummin(x, dim - 2));  // negative dims count from the end
    }
    Tensor x = uniformInput(DataType::Float32, {rows, cols}, -1.0, 1.0, uint64_t(rows + cols));
    x.setDoubleLinear(rows * cols / 2, kNaN);  // NaN from there on in its row's max and min
    // Factors near 1 keep long products finite.
    Tensor p = uniformInput(DataType::Float32, {rows, cols}, 0.999, 1.001, 7);
    auto [got, kernels] = runChecked(std::move(f), {x, p}, {1e-4, 1e-3});
    // x's three scans are one kernel, p's another (they share no tensor).
    ASSERT_EQ(kernels.size(), 2u);
    for (const std::string& k : kernels) EXPECT_EQ(k.rfind("scan", 0), 0u) << k;
    ASSERT_EQ(got.size(), 4u);
    // torch's rules; the NaN makes the rest of its row NaN in all three of x's scans.
    const std::vector<std::function<double(double, double)>> fns = {
        [](double a, double b) { return a + b; }, [](double a, double b) { return a * b; },
        [](double a, double b) { return std::isnan(a) || std::isnan(b) ? kNaN : std::max(a, b); },
        [](double a, double b) { return std::isnan(a) || std::isnan(b) ? kNaN : std::min(a, b); }};
    for (size_t k = 0; k < 4; ++k) {
      std::vector<double> want = hostScan(k == 1 ? p : x, dim, fns[k]);
      for (size_t i = 0; i < want.size(); ++i) {
        const double g = got[k].getDoubleLinear(int64_t(i));
        if (std::isnan(want[i])) {
          ASSERT_TRUE(std::isnan(g)) << "output " << k << " element " << i;
          continue;
        }
        ASSERT_NEAR(g, want[i], 1e-3 + 1e-4 * std::abs(want[i]))
            << "output " << k << " element " << i;
      }
    }
  }
};

TEST_F(Scan, InnerDimShortRows) { checkAll(37, 7, 1); }
TEST_F(Scan, InnerDimRowsLongerThanABlock) { checkAll(5, 3000, 1); }
TEST_F(Scan, OuterDim) { checkAll(300, 19, 0); }
TEST_F(Scan, OuterDimManyColumns) { checkAll(9, 1000, 0); }

// Producers and consumers fuse into the scan kernel; a scan of a scan along the same dim too; a
// middle dim of a 3-D tensor; 16-bit and integer inputs.
TEST_F(Scan, FusedWithPointwiseAndChained) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().rank(3).dtype(DataType::Float32).build();
    TensorView* bias = ops::TensorBuilder().rank(1).dtype(DataType::Float32).build();
    f->addInput(x);
    f->addInput(bias);
    TensorView* c = ops::cumsum(ops::mul(ops::exp(x), 0.5), 1);
    f->addOutput(ops::add(c, bias));
    f->addOutput(ops::cumsum(c, 1));
  }
  Tensor x = uniformInput(DataType::Float32, {3, 200, 6}, -1.0, 1.0, 3);
  Tensor bias = uniformInput(DataType::Float32, {6}, -1.0, 1.0, 4);
  auto [got, kernels] = runChecked(std::move(f), {x, bias}, {1e-4, 1e-2});
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_EQ(kernels[0].rfind("scan", 0), 0u) << kernels[0];
}

TEST_F(Scan, HalfAndIntegers) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* h = ops::TensorBuilder().rank(2).dtype(DataType::Float16).build();
    TensorView* i = ops::TensorBuilder().rank(2).dtype(DataType::Int32).build();
    f->addInput(h);
    f->addInput(i);
    f->addOutput(ops::cumsum(h, 1));
    f->addOutput(ops::cumsum(i, 0));
    f->addOutput(ops::cummax(i, 0));
  }
  Tensor h = uniformInput(DataType::Float16, {4, 300}, -1.0, 1.0, 5);
  Tensor i = Tensor::empty({50, 3}, DataType::Int32);
  for (int64_t k = 0; k < 150; ++k) i.setDoubleLinear(k, double((k * 7919) % 2001) - 1000.0);
  auto [got, kernels] = runChecked(std::move(f), {h, i}, {1e-2, 5e-2});
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].dtype(), DataType::Float16);
  EXPECT_EQ(got[1].dtype(), DataType::Int64);  // as torch.cumsum of an int32 tensor
  EXPECT_EQ(got[2].dtype(), DataType::Int32);
  std::vector<double> want = hostScan(i, 0, [](double a, double b) { return a + b; });
  for (size_t k = 0; k < want.size(); ++k) ASSERT_EQ(got[1].getDoubleLinear(int64_t(k)), want[k]);
}

// A reduction of a scan is two kernels: the scan, then the reduction of its result.
TEST_F(Scan, ReductionOfAScanSegments) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().rank(2).dtype(DataType::Float32).build();
    f->addInput(x);
    f->addOutput(ops::sum(ops::cumsum(x, 1), {1}));
  }
  Tensor x = uniformInput(DataType::Float32, {16, 100}, -1.0, 1.0, 6);
  auto [got, kernels] = runChecked(std::move(f), {x}, {1e-4, 1e-2});
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels[0].rfind("scan", 0), 0u) << kernels[0];
  EXPECT_EQ(kernels[1].rfind("reduction", 0), 0u) << kernels[1];
}

TEST_F(Scan, ZeroDimAndSizeOneDims) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* s = ops::TensorBuilder().rank(0).dtype(DataType::Float32).build();
    TensorView* b = ops::TensorBuilder().shape({4, 1}).dtype(DataType::Float32).build();
    f->addInput(s);
    f->addInput(b);
    f->addOutput(ops::cumsum(s, -1));
    f->addOutput(ops::cumprod(b, 1));
  }
  Tensor s = Tensor::empty({}, DataType::Float32);
  s.fill(2.5);
  Tensor b = uniformInput(DataType::Float32, {4, 1}, -1.0, 1.0, 8);
  auto [got, kernels] = runChecked(std::move(f), {s, b}, {0.0, 0.0});
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].getDoubleLinear(0), 2.5);
  for (int64_t k = 0; k < 4; ++k) EXPECT_EQ(got[1].getDoubleLinear(k), b.getDoubleLinear(k));
}

TEST_F(Scan, BadDimIsAUserError) {
  Fusion f;
  FusionGuard g(&f);
  TensorView* x = ops::TensorBuilder().rank(2).dtype(DataType::Float32).build();
  try {
    ops::cumsum(x, 2);
    FAIL() << "cumsum along dim 2 of a 2-D tensor accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("cumsum: dimension 2 is out of range"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace loom::runtime
