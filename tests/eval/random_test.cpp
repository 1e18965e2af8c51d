// SPDX-License-Identifier: Apache-2.0
// Random numbers in the reference evaluator (the oracle of the kernels): Philox4x32-10 against
// its published known answers, the sample rules (a function of seed, offset and linear index),
// statistical tests of every distribution (mean, variance, Kolmogorov-Smirnov) and the errors of
// the ops.
#include <algorithm>
#include <cmath>
#include <limits>

#include "eval/eval_test_utils.h"
#include "loom/eval/philox.h"

namespace loom::eval::testing {
namespace {

using RandomEvalTest = EvalTest;

// Random123's known-answer vectors for philox4x32-10.
TEST(Philox, KnownAnswers) {
  using W = std::array<uint32_t, 4>;
  EXPECT_EQ(philox4x32_10({0, 0, 0, 0}, {0, 0}),
            (W{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
  EXPECT_EQ(philox4x32_10({~0u, ~0u, ~0u, ~0u}, {~0u, ~0u}),
            (W{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}));
  EXPECT_EQ(philox4x32_10({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
                          {0xa4093822u, 0x299f31d0u}),
            (W{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}));
}

// The sample rule: f32 uniform is the top 24 bits of word 0 of the block (index, offset) under
// the seed; f64 takes 53 bits of words 0 and 1; the parameters apply as one fma.
TEST(Philox, SampleRules) {
  const uint64_t seed = 0x0123456789abcdefull, offset = 0xfedcba9876543210ull, i = 0x100000003ull;
  const auto w = philox4x32_10({3u, 1u, 0x76543210u, 0xfedcba98u}, {0x89abcdefu, 0x01234567u});
  EXPECT_EQ(rngSample(ir::RngOpType::Uniform, DataType::Float32, seed, offset, i, 0.0, 1.0),
            std::ldexp(double(w[0] >> 8), -24));
  EXPECT_EQ(rngSample(ir::RngOpType::Uniform, DataType::BFloat16, seed, offset, i, 0.0, 1.0),
            std::ldexp(double(w[0] >> 24), -8));
  const double u53 = std::ldexp(double(((uint64_t(w[0]) << 32) | w[1]) >> 11), -53);
  EXPECT_EQ(rngSample(ir::RngOpType::Uniform, DataType::Float64, seed, offset, i, -2.0, 6.0),
            std::fma(8.0, u53, -2.0));
  const double u1 = (double(w[0]) + 1.0) / 4294967296.0, u2 = double(w[1]) / 4294967296.0;
  const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  EXPECT_EQ(rngSample(ir::RngOpType::Normal, DataType::Float32, seed, offset, i, 1.5, 2.0),
            std::fma(2.0, z, 1.5));
}

// Element i of a fusion's rand is rngSample at its row-major linear index, whatever the shape:
// [6, 7] and [42] hold the same numbers; another offset or seed gives other numbers.
TEST_F(RandomEvalTest, ValuesFollowTheLinearIndex) {
  auto* seed = ir::IrBuilder::symbolic(DataType::Int64);
  auto* offset = ir::IrBuilder::symbolic(DataType::Int64);
  fusion_.addInput(seed);
  fusion_.addInput(offset);
  auto outs = run({ops::rand({6, 7}, seed, offset), ops::rand({42}, seed, offset),
                   ops::rand({42}, seed, 5), ops::rand({42}, 9, offset)},
                  {int64_t{-3}, int64_t{4}});
  std::vector<double> a = valuesOf(outs[0]);
  EXPECT_EQ(a, valuesOf(outs[1]));
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i], rngSample(ir::RngOpType::Uniform, DataType::Float32, uint64_t(-3), 4, i, 0, 1));
  }
  std::vector<double> b = valuesOf(outs[2]), c = valuesOf(outs[3]);
  size_t same_offset = 0, same_seed = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    same_offset += a[i] == b[i];
    same_seed += a[i] == c[i];
  }
  EXPECT_EQ(same_offset, 0u);
  EXPECT_EQ(same_seed, 0u);
}

// Mean, variance and the Kolmogorov-Smirnov distance of `v` against `cdf`. The bounds hold with
// probability > 0.999 for a correct generator (5 standard errors; the KS critical value 1.95 /
// sqrt(n) at alpha = 0.001); the seeds are fixed, so the tests are deterministic.
void expectDistribution(std::vector<double> v, double mean, double var,
                        const std::function<double(double)>& cdf, const std::string& what) {
  const double n = double(v.size());
  double m = 0.0;
  for (double x : v) m += x;
  m /= n;
  double s2 = 0.0, m4 = 0.0;
  for (double x : v) {
    s2 += (x - m) * (x - m);
    m4 += std::pow(x - mean, 4);
  }
  s2 /= n - 1;
  m4 /= n;
  EXPECT_NEAR(m, mean, 5.0 * std::sqrt(var / n)) << what << ": mean";
  // The variance's standard error: sqrt((mu4 - var^2) / n).
  EXPECT_NEAR(s2, var, 5.0 * std::sqrt(std::max(m4 - var * var, 0.0) / n)) << what << ": variance";
  std::sort(v.begin(), v.end());
  double d = 0.0;
  for (size_t i = 0; i < v.size(); ++i) {
    const double f = cdf(v[i]);
    d = std::max({d, std::abs(f - double(i) / n), std::abs(double(i + 1) / n - f)});
  }
  EXPECT_LT(d, 1.95 / std::sqrt(n)) << what << ": Kolmogorov-Smirnov distance";
}

double normalCdf(double x, double mean, double std) {
  return 0.5 * std::erfc(-(x - mean) / (std * std::sqrt(2.0)));
}

// rand, uniform, randn and normal in f32 and f64 follow their distributions; rand stays in
// [0, 1) in every dtype (16-bit ones included).
TEST_F(RandomEvalTest, Distributions) {
  constexpr int64_t n = 1 << 16;
  for (DataType dt : {DataType::Float32, DataType::Float64}) {
    const std::string name(dataTypeName(dt));
    auto outs = run({ops::rand({n}, 11, 0, dt), ops::uniform({256, 256}, -3.0, 5.0, 12, 1, dt),
                     ops::randn({n}, 13, 2, dt), ops::normal({64, 1024}, 2.0, 0.5, 14, 3, dt)},
                    {});
    expectDistribution(
        valuesOf(outs[0]), 0.5, 1.0 / 12, [](double x) { return x; }, name + " rand");
    expectDistribution(
        valuesOf(outs[1]), 1.0, 64.0 / 12, [](double x) { return (x + 3.0) / 8.0; },
        name + " uniform(-3, 5)");
    expectDistribution(
        valuesOf(outs[2]), 0.0, 1.0, [](double x) { return normalCdf(x, 0.0, 1.0); },
        name + " randn");
    expectDistribution(
        valuesOf(outs[3]), 2.0, 0.25, [](double x) { return normalCdf(x, 2.0, 0.5); },
        name + " normal(2, 0.5)");
  }
  for (DataType dt : {DataType::Float16, DataType::BFloat16, DataType::Float32}) {
    std::vector<double> v = valuesOf(run({ops::rand({n}, 21, 0, dt)}, {}).back());
    EXPECT_GE(*std::min_element(v.begin(), v.end()), 0.0) << dt;
    EXPECT_LT(*std::max_element(v.begin(), v.end()), 1.0) << dt;
    double m = 0.0;
    for (double x : v) m += x;
    EXPECT_NEAR(m / double(n), 0.5, 0.01) << dt;
  }
}

// bernoulli(p) is 1 with probability p per element; dropout keeps 1 - p of the elements, scales
// them by 1 / (1 - p) and zeroes the others; its mask says which.
TEST_F(RandomEvalTest, BernoulliAndDropout) {
  TensorView* x = input({256, 256});
  TensorView* p = input({256, 256});
  auto [y, mask] = ops::dropout(x, 0.25, 5, 6);
  auto outs = run({ops::bernoulli(p, 7, 8), y, mask},
                  {makeTensor({256, 256}, std::vector<double>(65536, 1.5)),
                   makeTensor({256, 256}, std::vector<double>(65536, 0.3))});
  std::vector<double> b = valuesOf(outs[0]), out = valuesOf(outs[1]), m = valuesOf(outs[2]);
  double ones = 0.0, kept = 0.0;
  for (size_t i = 0; i < b.size(); ++i) {
    ASSERT_TRUE(b[i] == 0.0 || b[i] == 1.0) << b[i];
    ones += b[i];
    kept += m[i];
    ASSERT_EQ(out[i], m[i] != 0.0 ? double(1.5f / 0.75f) : 0.0) << i;
  }
  const double n = 65536.0;
  EXPECT_NEAR(ones / n, 0.3, 5.0 * std::sqrt(0.3 * 0.7 / n));
  EXPECT_NEAR(kept / n, 0.75, 5.0 * std::sqrt(0.25 * 0.75 / n));
  EXPECT_EQ(outs[2].dtype(), DataType::Bool);
}

// Bad arguments are UserErrors naming the op and the argument.
TEST_F(RandomEvalTest, Errors) {
  TensorView* x = input({4});
  TensorView* xi = input({4}, DataType::Int32);
  auto* f = ir::IrBuilder::symbolic(DataType::Float64);
  EXPECT_HAS(userErrorOf([&] { ops::rand({4}, 0, 0, DataType::Int32); }),
             "uniform: dtype i32 is not supported (a floating type is");
  EXPECT_HAS(userErrorOf([&] { ops::rand({4}, 1.5, 0); }),
             "uniform: seed must be an integer or an integer Scalar");
  EXPECT_HAS(userErrorOf([&] { ops::randn({4}, 0, f); }),
             "normal: offset must be an integer or an integer Scalar");
  EXPECT_HAS(userErrorOf([&] { ops::randn({4}, x, 0); }),
             "normal: seed must be an integer or an integer Scalar");
  EXPECT_HAS(userErrorOf([&] { ops::normal({4}, 0.0, -1.0, 0, 0); }),
             "normal: std must be >= 0, got -1");
  EXPECT_HAS(userErrorOf([&] { ops::uniform({4}, 2.0, 1.0, 0, 0); }),
             "uniform: low must be <= high, got low=2 and high=1");
  EXPECT_HAS(userErrorOf([&] {
               ops::rand({4, -2}, 0, 0);
             }),
             "uniform: size -2 at dimension 1 of [4, -2] is negative");
  EXPECT_HAS(userErrorOf([&] { ops::dropout(x, 1.5, 0, 0); }), "dropout: p must be in [0, 1]");
  EXPECT_HAS(userErrorOf([&] { ops::dropout(xi, 0.5, 0, 0); }), "a floating tensor is needed");
  EXPECT_HAS(userErrorOf([&] { ops::randLike(xi, 0, 0); }), "rand_like: ");
  EXPECT_HAS(userErrorOf([&] { ops::bernoulli(xi, 0, 0); }), "bernoulli: the probabilities");
}

}  // namespace
}  // namespace loom::eval::testing
