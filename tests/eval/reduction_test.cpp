// SPDX-License-Identifier: Apache-2.0
// Reference evaluator: reductions, Welford, dimension-changing ops (broadcast, squeeze, reshape,
// permute) and identities of the composite ops.
#include <cmath>
#include <limits>

#include "eval/eval_test_utils.h"

namespace loom::eval::testing {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

using ReductionTest = EvalTest;

Tensor iota23() { return makeTensor({2, 3}, {1, 2, 3, 4, 5, 6}); }

// sum over each axis, over both (empty axis list) and with keepdim.
TEST_F(ReductionTest, SumEachAxis) {
  auto* x = input({2, 3});
  auto res = run({ops::sum(x, {0}), ops::sum(x, {1}), ops::sum(x, {}), ops::sum(x, {-1}, true)},
                 {iota23()});
  expectValues(valuesOf(res[0]), {5, 7, 9});
  expectValues(valuesOf(res[1]), {6, 15});
  EXPECT_EQ(res[2].dim(), 0);
  expectValues(valuesOf(res[2]), {21});
  EXPECT_EQ(res[3].sizes(), (std::vector<int64_t>{2, 1}));
  expectValues(valuesOf(res[3]), {6, 15});
}

// Reducing two of three axes keeps the middle one.
TEST_F(ReductionTest, MultipleAxes) {
  auto* x = input({2, 2, 2});
  auto got = eval1(ops::sum(x, {0, 2}), {makeTensor({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8})});
  expectValues(got, {1 + 2 + 5 + 6, 3 + 4 + 7 + 8});
}

// prod, max and min; max/min propagate NaN.
TEST_F(ReductionTest, ProdMaxMinNaN) {
  auto* x = input({2, 3});
  auto res = run({ops::prod(x, {1}), ops::max(x, {1}), ops::min(x, {1})},
                 {makeTensor({2, 3}, {1, kNaN, 3, 4, -5, 6})});
  expectValues(valuesOf(res[0]), {kNaN, -120});
  expectValues(valuesOf(res[1]), {kNaN, 6});
  expectValues(valuesOf(res[2]), {kNaN, -5});
}

// An empty reduction gives the init value: 0 for sum, 1 for prod.
TEST_F(ReductionTest, EmptyReductionGivesInit) {
  auto* x = input({-1, 3});
  auto res = run({ops::sum(x, {0}), ops::prod(x, {0})}, {Tensor::empty({0, 3}, DataType::Float32)});
  expectValues(valuesOf(res[0]), {0, 0, 0});
  expectValues(valuesOf(res[1]), {1, 1, 1});
}

// Integer sums are exact and Int64.
TEST_F(ReductionTest, IntegerSum) {
  auto* x = input({3}, DataType::Int32);
  auto res = run({ops::sum(x, {0})},
                 {makeTensor({3}, {2147483647, 2147483647, 2}, DataType::Int32)});
  EXPECT_EQ(res[0].dtype(), DataType::Int64);
  EXPECT_EQ(res[0].dataAs<int64_t>()[0], int64_t(2147483647) * 2 + 2);
}

// welford of a raw input gives mean, sum of squared deviations and count.
TEST_F(ReductionTest, WelfordRaw) {
  auto* x = input({2, 4});
  auto w = ops::welford(x, {1});
  auto res = run({w.avg, w.m2, w.n}, {makeTensor({2, 4}, {1, 2, 3, 4, 2, 2, 2, 2})});
  expectValues(valuesOf(res[0]), {2.5, 2});
  expectValues(valuesOf(res[1]), {5, 0});
  EXPECT_EQ(res[2].dtype(), DataType::Int64);
  expectValues(valuesOf(res[2]), {4, 4});
}

// A WelfordOp over partial (avg, m2, n) inputs combines them with Chan's formula.
TEST_F(ReductionTest, WelfordCombinesPartials) {
  auto* avg = input({1, 2});
  auto* m2 = input({1, 2});
  auto* n = input({1, 2}, DataType::Int64);
  auto reduced = [&](DataType dt) {
    auto ids = avg->logical();
    std::vector<ir::IterDomain*> out{ids[0]->cloneWithoutDefinition(),
                                     ids[1]->cloneWithIterType(ir::IterType::Reduction)};
    return ir::IrBuilder::create<TensorView>(ir::IrBuilder::create<ir::TensorDomain>(out), dt);
  };
  auto* o_avg = reduced(DataType::Float32);
  auto* o_m2 = reduced(DataType::Float32);
  auto* o_n = reduced(DataType::Int64);
  auto* zero = ir::IrBuilder::constant(0.0);
  ir::IrBuilder::create<ir::WelfordOp>(o_avg, o_m2, o_n, avg, m2, n, zero, zero,
                                       ir::IrBuilder::constant(int64_t(0)));
  // Partials of {1, 2} and {3, 4, 5, 6}; together {1..6}: mean 3.5, m2 17.5, n 6.
  auto res = run({o_avg, o_m2, o_n}, {makeTensor({1, 2}, {1.5, 4.5}), makeTensor({1, 2}, {0.5, 5}),
                                      makeTensor({1, 2}, {2, 4}, DataType::Int64)});
  expectValues(valuesOf(res[0]), {3.5});
  expectValues(valuesOf(res[1]), {17.5});
  expectValues(valuesOf(res[2]), {6});
}

// var_mean is stable on data with a large offset: it matches a two-pass variance.
TEST_F(ReductionTest, VarMeanStableOnOffsetData) {
  auto* x = input({2, 1000}, DataType::Float64);
  auto vm = ops::varMean(x, {1});
  std::vector<double> data;
  for (int i = 0; i < 2000; ++i) data.push_back(1e6 + 1e-3 * std::sin(0.37 * i));
  auto res = run({vm.var, vm.mean}, {makeTensor({2, 1000}, data, DataType::Float64)});
  for (int r = 0; r < 2; ++r) {
    double mean = 0;
    for (int i = 0; i < 1000; ++i) mean += data[size_t(r * 1000 + i)];
    mean /= 1000;
    double m2 = 0;
    for (int i = 0; i < 1000; ++i) {
      double d = data[size_t(r * 1000 + i)] - mean;
      m2 += d * d;
    }
    double var = m2 / 999;
    EXPECT_NEAR(valuesOf(res[0])[size_t(r)], var, 1e-6 * var) << "row " << r;
    EXPECT_NEAR(valuesOf(res[1])[size_t(r)], mean, 1e-9);
  }
}

// The mean of a constant is the constant.
TEST_F(ReductionTest, MeanOfConstant) {
  auto* x = input({3, 5});
  Tensor t = Tensor::empty({3, 5}, DataType::Float32);
  t.fill(0.75);
  expectValues(eval1(ops::mean(x, {1}), {t}), {0.75, 0.75, 0.75});
}

// Shifting data by a constant does not change its variance.
TEST_F(ReductionTest, VarianceShiftInvariant) {
  auto* x = input({2, 16}, DataType::Float64);
  auto res = run({ops::variance(x, {1}), ops::variance(ops::add(x, 100.0), {1})},
                 {[] {
                   Tensor t = Tensor::empty({2, 16}, DataType::Float64);
                   fillRandom(t, 7);
                   return t;
                 }()});
  auto a = valuesOf(res[0]);
  auto b = valuesOf(res[1]);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-12);
  EXPECT_GT(a[0], 0.0);
}

// softmax rows sum to 1 and log_softmax equals log(softmax).
TEST_F(ReductionTest, SoftmaxIdentities) {
  auto* x = input({3, 5}, DataType::Float64);
  Tensor t = Tensor::empty({3, 5}, DataType::Float64);
  fillRandom(t, 3);
  auto res = run({ops::softmax(x, 1), ops::logSoftmax(x, 1)}, {t});
  auto sm = valuesOf(res[0]);
  auto lsm = valuesOf(res[1]);
  for (int r = 0; r < 3; ++r) {
    double s = 0;
    for (int c = 0; c < 5; ++c) s += sm[size_t(r * 5 + c)];
    EXPECT_NEAR(s, 1.0, 1e-12);
  }
  for (size_t i = 0; i < sm.size(); ++i) EXPECT_NEAR(lsm[i], std::log(sm[i]), 1e-12);
}

// layer_norm output has per-row mean 0 and (biased) variance 1.
TEST_F(ReductionTest, LayerNormNormalizes) {
  auto* x = input({4, 8}, DataType::Float64);
  Tensor t = Tensor::empty({4, 8}, DataType::Float64);
  fillRandom(t, 11);
  auto y = valuesOf(run({ops::layerNorm(x, 1, nullptr, nullptr, 0.0).y}, {t})[0]);
  for (int r = 0; r < 4; ++r) {
    double mean = 0, var = 0;
    for (int c = 0; c < 8; ++c) mean += y[size_t(r * 8 + c)] / 8;
    for (int c = 0; c < 8; ++c) var += std::pow(y[size_t(r * 8 + c)] - mean, 2) / 8;
    EXPECT_NEAR(mean, 0.0, 1e-12);
    EXPECT_NEAR(var, 1.0, 1e-10);
  }
}

// rms_norm = x * rsqrt(mean(x^2) + eps) * weight.
TEST_F(ReductionTest, RmsNormFormula) {
  auto* x = input({2, 4}, DataType::Float64);
  auto* w = input({4}, DataType::Float64);
  std::vector<double> xs = {1, -2, 3, 0.5, 0.1, 0.2, -0.3, 0.4};
  std::vector<double> ws = {1, 0.5, 2, -1};
  auto got = eval1(ops::rmsNorm(x, 1, w, 1e-6),
                   {makeTensor({2, 4}, xs, DataType::Float64), makeTensor({4}, ws, DataType::Float64)});
  for (int r = 0; r < 2; ++r) {
    double ms = 0;
    for (int c = 0; c < 4; ++c) ms += xs[size_t(r * 4 + c)] * xs[size_t(r * 4 + c)] / 4;
    for (int c = 0; c < 4; ++c) {
      double want = xs[size_t(r * 4 + c)] / std::sqrt(ms + 1e-6) * ws[size_t(c)];
      EXPECT_NEAR(got[size_t(r * 4 + c)], want, 1e-12);
    }
  }
}

// reshape reinterprets the row-major order; permute reorders dims.
TEST_F(ReductionTest, ReshapeAndPermute) {
  auto* x = input({2, 3});
  auto res = run({ops::reshape(x, {3, 2}), ops::reshape(x, {6}), ops::permute(x, {1, 0})},
                 {iota23()});
  EXPECT_EQ(res[0].sizes(), (std::vector<int64_t>{3, 2}));
  expectValues(valuesOf(res[0]), {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(res[1].sizes(), (std::vector<int64_t>{6}));
  EXPECT_EQ(res[2].sizes(), (std::vector<int64_t>{3, 2}));
  expectValues(valuesOf(res[2]), {1, 4, 2, 5, 3, 6});
}

// A 3-D permute moves every element to its permuted index.
TEST_F(ReductionTest, Permute3d) {
  auto* x = input({2, 3, 4});
  std::vector<double> data(24);
  for (int i = 0; i < 24; ++i) data[size_t(i)] = i;
  auto outs = run({ops::permute(x, {2, 0, 1})}, {makeTensor({2, 3, 4}, data)});
  ASSERT_EQ(outs[0].sizes(), (std::vector<int64_t>{4, 2, 3}));
  for (int64_t k = 0; k < 4; ++k) {
    for (int64_t i = 0; i < 2; ++i) {
      for (int64_t j = 0; j < 3; ++j) {
        std::vector<int64_t> idx = {k, i, j};
        EXPECT_EQ(outs[0].getDouble(idx), double(i * 12 + j * 4 + k));
      }
    }
  }
}

// squeeze and unsqueeze remove and insert size-1 dims without moving data.
TEST_F(ReductionTest, SqueezeUnsqueeze) {
  auto* x = input({2, 1, 3});
  auto res = run({ops::squeeze(x, {1}), ops::unsqueeze(ops::squeeze(x, {1}), 0)},
                 {makeTensor({2, 1, 3}, {1, 2, 3, 4, 5, 6})});
  EXPECT_EQ(res[0].sizes(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(res[1].sizes(), (std::vector<int64_t>{1, 2, 3}));
  expectValues(valuesOf(res[1]), {1, 2, 3, 4, 5, 6});
}

// A fusion output that is also an input is returned as a copy.
TEST_F(ReductionTest, InputAsOutputIsCopied) {
  auto* x = input({2});
  Tensor t = makeTensor({2}, {1, 2});
  auto outs = run({x}, {t});
  expectValues(valuesOf(outs[0]), {1, 2});
  EXPECT_NE(outs[0].data(), t.data());
}

}  // namespace
}  // namespace loom::eval::testing
