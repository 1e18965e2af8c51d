// SPDX-License-Identifier: Apache-2.0
// scaled_mm (nvFuser's fd.ops.scaled_mm with per-tensor scales) end to end: e4m3fn and e5m2
// operands, bf16 / f16 / f32 outputs, alpha, bias and beta, run through the cache with outputs
// poisoned and compared with a double-precision loop written here (independent of the
// composition) and with the reference evaluator; argument errors. Built twice: host backend
// (emu) and CUDA (gpu: the f32 GEMM is cuBLASLt's).
#include "loom/ops/scaled_mm.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "loom/eval/compare.h"
#include "loom/eval/reference_evaluator.h"
#include "loom/ir/ir.h"
#include "loom/ops/ops.h"
#include "loom/runtime/fusion_executor_cache.h"
#include "loom/tensor/float8.h"
#include "runtime/runtime_test_backend.h"
#include "user_error_of.h"

namespace loom::runtime {
namespace {

using ir::Fusion;
using ir::FusionGuard;
using ir::TensorView;

Tensor randomFloat8(std::vector<int64_t> sizes, DataType dt, std::mt19937& rng) {
  Tensor t = Tensor::empty(sizes, dt);
  std::uniform_real_distribution<double> u(-3.0, 3.0);
  for (int64_t i = 0; i < t.numel(); ++i) t.setDoubleLinear(i, u(rng));
  return t;
}

Tensor scalarTensor(double v, std::vector<int64_t> sizes = {}) {
  Tensor t = Tensor::empty(sizes, DataType::Float32);
  t.setDoubleLinear(0, v);
  return t;
}

class ScaledMm : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = loom::test::backendUnavailable(testBackend())) GTEST_SKIP() << *why;
  }
};

struct Case {
  DataType a_dt, b_dt, out_dt;
  int64_t m, k, n;
  bool alpha, bias, beta;
};

// out = cast(alpha * ((a * sa) @ (b * sb)) + beta * bias, dtype), against the exact double sum
// (each scaled operand rounded to f32 first, as the composition does) rounded once to dtype.
TEST_F(ScaledMm, MatchesDoubleLoopAndReference) {
  const std::vector<Case> cases{
      {DataType::Float8_e4m3fn, DataType::Float8_e4m3fn, DataType::BFloat16, 16, 32, 24, false,
       false, false},
      {DataType::Float8_e4m3fn, DataType::Float8_e5m2, DataType::Float32, 7, 40, 9, true, true,
       true},
      {DataType::Float8_e5m2, DataType::Float8_e4m3fn, DataType::Float16, 33, 16, 48, false, true,
       false},
      {DataType::Float8_e4m3fn, DataType::Float8_e4m3fn, DataType::Float8_e4m3fn, 8, 16, 8, true,
       false, false},
  };
  std::mt19937 rng(5);
  for (const Case& c : cases) {
    Tensor a = randomFloat8({c.m, c.k}, c.a_dt, rng);
    Tensor b = randomFloat8({c.k, c.n}, c.b_dt, rng);
    Tensor sa = scalarTensor(0.375), sb = scalarTensor(1.75, {1, 1});
    Tensor alpha = scalarTensor(0.5), beta = scalarTensor(-2.0);
    Tensor bias = Tensor::empty({c.n}, DataType::BFloat16);
    for (int64_t j = 0; j < c.n; ++j) bias.setDoubleLinear(j, 0.25 * double(j % 7) - 0.5);
    auto fusion = std::make_unique<Fusion>();
    {
      FusionGuard g(fusion.get());
      TensorView* ta = ops::TensorBuilder().rank(2).dtype(c.a_dt).build();
      TensorView* tb = ops::TensorBuilder().rank(2).dtype(c.b_dt).build();
      TensorView* tsa = ops::TensorBuilder().rank(0).dtype(DataType::Float32).build();
      TensorView* tsb = ops::TensorBuilder().shape({1, 1}).dtype(DataType::Float32).build();
      for (TensorView* t : {ta, tb, tsa, tsb}) fusion->addInput(t);
      TensorView* talpha = nullptr;
      TensorView* tbias = nullptr;
      TensorView* tbeta = nullptr;
      if (c.alpha) {
        talpha = ops::TensorBuilder().rank(0).dtype(DataType::Float32).build();
        fusion->addInput(talpha);
      }
      if (c.bias) {
        tbias = ops::TensorBuilder().rank(1).dtype(DataType::BFloat16).build();
        fusion->addInput(tbias);
      }
      if (c.beta) {
        tbeta = ops::TensorBuilder().rank(0).dtype(DataType::Float32).build();
        fusion->addInput(tbeta);
      }
      TensorView* out = ops::scaledMm(ta, tb, tsa, tsb, talpha, tbias, tbeta, c.out_dt);
      EXPECT_EQ(out->dtype(), c.out_dt);
      fusion->addOutput(out);
    }
    std::vector<eval::Argument> args{a, b, sa, sb};
    if (c.alpha) args.emplace_back(alpha);
    if (c.bias) args.emplace_back(bias);
    if (c.beta) args.emplace_back(beta);
    Tensor want = Tensor::empty({c.m, c.n}, c.out_dt);
    for (int64_t i = 0; i < c.m; ++i) {
      for (int64_t j = 0; j < c.n; ++j) {
        double acc = 0.0;
        for (int64_t p = 0; p < c.k; ++p) {
          const double x = double(float(a.getDoubleLinear(i * c.k + p) * 0.375));
          const double y = double(float(b.getDoubleLinear(p * c.n + j) * 1.75));
          acc += x * y;
        }
        if (c.alpha) acc *= 0.5;
        if (c.bias) acc += bias.getDoubleLinear(j) * (c.beta ? -2.0 : 1.0);
        want.setDoubleLinear(i * c.n + j, acc);
      }
    }
    std::vector<Tensor> evaluated = eval::evaluateFusion(*fusion, args);
    FusionExecutorCache cache(std::move(fusion), poisonedOptions());
    std::vector<Tensor> got = cache.run(args);
    ASSERT_EQ(got.size(), 1u);
    ASSERT_EQ(got[0].dtype(), c.out_dt);
    eval::Tolerance tol = eval::defaultTolerance(c.out_dt, c.k);
    if (isFloat8Type(c.out_dt)) tol = {0x1p-3, 1e-6};  // one unit of e4m3fn's last place
    for (const auto& [what, t] : {std::pair<const char*, const Tensor*>{"kernels", &got[0]},
                                  {"reference", &evaluated[0]}}) {
      if (auto err = eval::expectClose(*t, want, tol, what)) {
        ADD_FAILURE() << c.a_dt << " x " << c.b_dt << " -> " << c.out_dt << ": " << *err;
      }
    }
  }
}

// Errors name the operand: a non-8-bit matrix, a block (non-one-element) scale, a scale that is
// not f32, an unsupported output dtype, a bias of the wrong rank and beta without a bias.
TEST_F(ScaledMm, ArgumentErrorsNameTheOperand) {
  Fusion fusion;
  FusionGuard g(&fusion);
  TensorView* a = ops::TensorBuilder().shape({4, 8}).dtype(DataType::Float8_e4m3fn).build();
  TensorView* b = ops::TensorBuilder().shape({8, 4}).dtype(DataType::Float8_e5m2).build();
  TensorView* f32 = ops::TensorBuilder().shape({8, 4}).dtype(DataType::Float32).build();
  TensorView* s = ops::TensorBuilder().rank(0).dtype(DataType::Float32).build();
  TensorView* rows = ops::TensorBuilder().shape({4, 1}).dtype(DataType::Float32).build();
  TensorView* s16 = ops::TensorBuilder().rank(0).dtype(DataType::BFloat16).build();
  TensorView* bias2 = ops::TensorBuilder().shape({4, 4}).dtype(DataType::BFloat16).build();
  using test::userErrorOf;
  EXPECT_NE(userErrorOf([&] {
              ops::scaledMm(a, f32, s, s);
            }).find("scaled_mm: mat2 T2 [8, 4] is f32; scaled_mm multiplies 8-bit float"),
            std::string::npos);
  EXPECT_NE(userErrorOf([&] { ops::scaledMm(a, b, rows, s); })
                .find("scale1 T4 [4, 1] is not one element; only per-tensor scales are "
                      "supported (block-scaled forms"),
            std::string::npos)
      << userErrorOf([&] { ops::scaledMm(a, b, rows, s); });
  EXPECT_NE(userErrorOf([&] {
              ops::scaledMm(a, b, s, s16);
            }).find("scale2 T5 [] is bf16; it must be an f32 tensor of one element"),
            std::string::npos)
      << userErrorOf([&] { ops::scaledMm(a, b, s, s16); });
  EXPECT_NE(userErrorOf([&] {
              ops::scaledMm(a, b, s, s, nullptr, nullptr, nullptr, DataType::Int32);
            }).find("the output dtype i32 is not supported"),
            std::string::npos);
  EXPECT_NE(userErrorOf([&] {
              ops::scaledMm(a, b, s, s, nullptr, bias2);
            }).find("bias T6 [4, 4] must be [n] or 0-D"),
            std::string::npos)
      << userErrorOf([&] { ops::scaledMm(a, b, s, s, nullptr, bias2); });
  EXPECT_NE(userErrorOf([&] {
              ops::scaledMm(a, b, s, s, nullptr, nullptr, s);
            }).find("beta is given without a bias"),
            std::string::npos);
  EXPECT_NE(userErrorOf([&] { ops::scaledMm(a, a, s, s); }).find("the contracted sizes differ"),
            std::string::npos);
}

}  // namespace
}  // namespace loom::runtime
