// SPDX-License-Identifier: Apache-2.0
// Backward and loss composites (issue 30): each gradient fusion runs through FusionExecutorCache
// (outputs poisoned) against the reference evaluator, and its result is checked independently of
// the gradient formula: for random directions v, sum(grad_x * v) must equal the derivative of
// L(x) = sum(grad_out * forward(x)) along v, taken by central differences of the forward
// composite on the reference evaluator in double. Built twice: host backend (emu) and CUDA (gpu).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>

#include "loom/eval/compare.h"
#include "loom/eval/reference_evaluator.h"
#include "loom/ir/ir.h"
#include "loom/ops/ops.h"
#include "loom/runtime/fusion_executor_cache.h"
#include "runtime/runtime_test_backend.h"

namespace loom::runtime {
namespace {

using ir::Fusion;
using ir::FusionGuard;
using ir::TensorView;
using Build = std::function<std::vector<TensorView*>(const std::vector<TensorView*>&)>;

Tensor randn(std::vector<int64_t> sizes, uint64_t seed, double scale = 1.0) {
  Tensor t = Tensor::empty(std::move(sizes), DataType::Float64);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> d(0.0, scale);
  for (int64_t i = 0; i < t.numel(); ++i) t.setDoubleLinear(i, d(rng));
  return t;
}

Tensor axpy(const Tensor& x, double h, const Tensor& v) {
  Tensor out = Tensor::empty(x.sizes(), x.dtype());
  for (int64_t i = 0; i < x.numel(); ++i) {
    out.setDoubleLinear(i, x.getDoubleLinear(i) + h * v.getDoubleLinear(i));
  }
  return out;
}

double dot(const Tensor& a, const Tensor& b) {
  double s = 0.0;
  for (int64_t i = 0; i < a.numel(); ++i) s += a.getDoubleLinear(i) * b.getDoubleLinear(i);
  return s;
}

// A fusion whose inputs have the dtypes and ranks of `args`, outputs from `build`.
std::unique_ptr<Fusion> makeFusion(const Build& build, const std::vector<Tensor>& args) {
  auto f = std::make_unique<Fusion>();
  FusionGuard g(f.get());
  std::vector<TensorView*> ins;
  for (const Tensor& t : args) {
    ins.push_back(ops::TensorBuilder().rank(t.dim()).dtype(t.dtype()).build());
    f->addInput(ins.back());
  }
  for (TensorView* out : build(ins)) f->addOutput(out);
  return f;
}

std::vector<Tensor> reference(const Build& build, const std::vector<Tensor>& args) {
  std::vector<eval::Argument> a(args.begin(), args.end());
  return eval::evaluateFusion(*makeFusion(build, args), a);
}

class CompositeBackward : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = loom::test::backendUnavailable(testBackend())) GTEST_SKIP() << *why;
  }

  // Runs the gradient fusion on kernels (checked against the reference), then checks output k
  // (the gradient of forward input k, for k in `wrt`) against central differences of
  // L = sum(grad_out * forward(inputs)). `args` are the backward's inputs: grad_out first, then
  // the forward's inputs in order.
  static std::vector<Tensor> check(const Build& forward, const Build& backward,
                                   const std::vector<Tensor>& args,
                                   const std::vector<size_t>& wrt) {
    std::vector<eval::Argument> a(args.begin(), args.end());
    FusionExecutorCache cache(makeFusion(backward, args), poisonedOptions());
    std::vector<Tensor> got = cache.run(a);
    std::vector<Tensor> expected = eval::evaluateFusion(cache.fusion(), a);
    EXPECT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size() && i < expected.size(); ++i) {
      auto err =
          eval::expectClose(got[i], expected[i], {1e-9, 1e-11}, "gradient " + std::to_string(i));
      EXPECT_FALSE(err.has_value()) << *err;
    }
    const Tensor& grad_out = args[0];
    std::vector<Tensor> fwd_args(args.begin() + 1, args.end());
    auto loss = [&](const std::vector<Tensor>& in) {
      return dot(reference(forward, in)[0], grad_out);
    };
    for (size_t k : wrt) {
      const Tensor v = randn(fwd_args[k].sizes(), 100 + k);
      const double h = 1e-5;
      std::vector<Tensor> plus = fwd_args, minus = fwd_args;
      plus[k] = axpy(fwd_args[k], h, v);
      minus[k] = axpy(fwd_args[k], -h, v);
      const double numeric = (loss(plus) - loss(minus)) / (2 * h);
      const double analytic = dot(got.at(k), v);
      EXPECT_NEAR(analytic, numeric, 1e-6 * (1.0 + std::abs(numeric)))
          << "the gradient of forward input " << k;
    }
    return got;
  }
};

TEST_F(CompositeBackward, SoftmaxAndLogSoftmax) {
  for (int64_t dim : {1, 0}) {
    SCOPED_TRACE("dim " + std::to_string(dim));
    Tensor x = randn({6, 37}, 1, 2.0);
    Tensor go = randn({6, 37}, 2);
    check([&](auto in) { return std::vector{ops::softmax(in[0], dim)}; },
          [&](auto in) {
            return std::vector{ops::softmaxBackward(in[0], ops::softmax(in[1], dim), dim)};
          },
          {go, x}, {0});
    check([&](auto in) { return std::vector{ops::logSoftmax(in[0], dim)}; },
          [&](auto in) {
            return std::vector{ops::logSoftmaxBackward(in[0], ops::logSoftmax(in[1], dim), dim)};
          },
          {go, x}, {0});
  }
}

TEST_F(CompositeBackward, LayerNorm) {
  Tensor x = randn({8, 300}, 3, 3.0);
  Tensor w = randn({300}, 4);
  Tensor b = randn({300}, 5);
  Tensor go = randn({8, 300}, 6);
  std::vector<Tensor> got =
      check([](auto in) { return std::vector{ops::layerNorm(in[0], 1, in[1], in[2]).y}; },
            [](auto in) {
              ops::LayerNormResult r = ops::layerNorm(in[1], 1, in[2], in[3]);
              ops::NormBackwardResult g =
                  ops::layerNormBackward(in[0], in[1], 1, r.mean, r.rstd, in[2], /*has_bias=*/true);
              return std::vector{g.grad_input, g.grad_weight, g.grad_bias};
            },
            {go, x, w, b}, {0, 1, 2});
  ASSERT_EQ(got.size(), 3u);
}

TEST_F(CompositeBackward, RmsNorm) {
  Tensor x = randn({5, 2, 64}, 7);
  Tensor w = randn({2, 64}, 8);
  Tensor go = randn({5, 2, 64}, 9);
  check([](auto in) { return std::vector{ops::rmsNorm(in[0], 2, in[1], 1e-6)}; },
        [](auto in) {
          ops::NormBackwardResult g = ops::rmsNormBackward(in[0], in[1], 2, in[2], 1e-6);
          return std::vector{g.grad_input, g.grad_weight};
        },
        {go, x, w}, {0, 1});
}

TEST_F(CompositeBackward, GeluAndSilu) {
  Tensor x = randn({4, 129}, 10, 2.0);
  Tensor go = randn({4, 129}, 11);
  for (auto approx : {ops::GeluApproximation::None, ops::GeluApproximation::Tanh}) {
    check([&](auto in) { return std::vector{ops::gelu(in[0], approx)}; },
          [&](auto in) { return std::vector{ops::geluBackward(in[0], in[1], approx)}; }, {go, x},
          {0});
  }
  check([](auto in) { return std::vector{ops::mul(in[0], ops::sigmoid(in[0]))}; },
        [](auto in) { return std::vector{ops::siluBackward(in[0], in[1])}; }, {go, x}, {0});
}

// Cross entropy: the loss against a host computation, and its gradient for every reduction,
// with ignored rows (the default -100 and another ignore_index).
TEST_F(CompositeBackward, CrossEntropy) {
  const int64_t n = 9, c = 37;
  Tensor x = randn({n, c}, 12, 3.0);
  for (auto [reduction, ignore] :
       std::vector<std::pair<ops::LossReduction, int64_t>>{{ops::LossReduction::Mean, -100},
                                                           {ops::LossReduction::Sum, -100},
                                                           {ops::LossReduction::None, -100},
                                                           {ops::LossReduction::Mean, 11}}) {
    SCOPED_TRACE("reduction " + std::to_string(int(reduction)) + " ignore " +
                 std::to_string(ignore));
    // Rows 2 and 5 are ignored; with ignore_index 11, row 1 (target 11) too.
    Tensor t = Tensor::empty({n}, DataType::Int64);
    for (int64_t i = 0; i < n; ++i) t.setDoubleLinear(i, double((i * 11) % c));
    t.setDoubleLinear(2, double(ignore));
    t.setDoubleLinear(5, double(ignore));
    // The forward loss on kernels against torch's rule computed here.
    std::vector<Tensor> loss = [&] {
      std::vector<eval::Argument> a{x, t};
      FusionExecutorCache cache(
          makeFusion(
              [&](auto in) {
                return std::vector{ops::crossEntropy(in[0], in[1], ignore, reduction)};
              },
              {x, t}),
          poisonedOptions());
      return cache.run(a);
    }();
    double total = 0.0, count = 0.0;
    std::vector<double> rows;
    for (int64_t i = 0; i < n; ++i) {
      const auto target = int64_t(t.getDoubleLinear(i));
      double m = -HUGE_VAL, s = 0.0;
      for (int64_t j = 0; j < c; ++j) m = std::max(m, x.getDoubleLinear(i * c + j));
      for (int64_t j = 0; j < c; ++j) s += std::exp(x.getDoubleLinear(i * c + j) - m);
      const double l = target == ignore ? 0.0 : m + std::log(s) - x.getDoubleLinear(i * c + target);
      rows.push_back(l);
      total += l;
      count += target == ignore ? 0.0 : 1.0;
    }
    if (reduction == ops::LossReduction::None) {
      for (int64_t i = 0; i < n; ++i)
        EXPECT_NEAR(loss[0].getDoubleLinear(i), rows[size_t(i)], 1e-12);
    } else {
      const double want = reduction == ops::LossReduction::Sum ? total : total / count;
      EXPECT_NEAR(loss[0].getDoubleLinear(0), want, 1e-12);
    }
    Tensor go = reduction == ops::LossReduction::None ? randn({n}, 13) : randn({}, 14);
    std::vector<Tensor> grad = check(
        [&](auto in) { return std::vector{ops::crossEntropy(in[0], in[1], ignore, reduction)}; },
        [&](auto in) {
          return std::vector{ops::crossEntropyBackward(in[0], in[1], in[2], ignore, reduction)};
        },
        {go, x, t}, {0});
    // Ignored rows get no gradient.
    for (int64_t i = 0; i < n; ++i) {
      if (int64_t(t.getDoubleLinear(i)) != ignore) continue;
      for (int64_t j = 0; j < c; ++j) ASSERT_EQ(grad[0].getDoubleLinear(i * c + j), 0.0);
    }
  }
}

TEST_F(CompositeBackward, BadArgumentsAreUserErrors) {
  Fusion f;
  FusionGuard g(&f);
  TensorView* x = ops::TensorBuilder().rank(2).dtype(DataType::Float32).build();
  TensorView* tf = ops::TensorBuilder().rank(1).dtype(DataType::Float32).build();
  TensorView* t3 = ops::TensorBuilder().rank(1).dtype(DataType::Int64).build();
  auto expectError = [](const std::function<void()>& fn, const std::string& text) {
    try {
      fn();
      ADD_FAILURE() << "accepted; expected an error containing: " << text;
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  };
  expectError([&] { ops::crossEntropy(x, tf); }, "must be an integer tensor");
  expectError([&] { ops::crossEntropy(tf, t3); }, "must be [N, C] (rank 2)");
  expectError([&] { ops::crossEntropyBackward(x, x, t3); }, "must have rank 0");
  expectError([&] { ops::softmaxBackward(tf, x, 1); }, "must have the rank of y");
}

}  // namespace
}  // namespace loom::runtime
