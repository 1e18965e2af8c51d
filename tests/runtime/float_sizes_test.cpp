// SPDX-License-Identifier: Apache-2.0
// A floating Scalar as a size (issue 36, ops/size.h): nvFuser's reshape to `192 * reciprocal(n)`.
// An integral value is the size (6.0 is 6), on the automatic path and in the reference evaluator;
// one that is not (6.5, inf) is a UserError naming the Scalar and its value, never a truncated
// size; a floating constant that is not an integer is refused when the op is built. Results are
// compared with the reference evaluator, outputs poisoned. Built twice: host backend (emu) and
// CUDA (gpu).
#include <gtest/gtest.h>

#include <string>

#include "loom/eval/compare.h"
#include "loom/eval/reference_evaluator.h"
#include "loom/ir/ir.h"
#include "loom/ops/ops.h"
#include "loom/runtime/fusion_executor_cache.h"
#include "runtime/runtime_test_backend.h"
#include "user_error_of.h"

namespace loom::runtime {
namespace {

using ir::Fusion;
using ir::FusionGuard;
using ir::IrBuilder;
using ir::TensorView;
using Args = std::vector<eval::Argument>;

Tensor random(std::vector<int64_t> sizes, uint64_t seed) {
  Tensor t = Tensor::empty(std::move(sizes), DataType::Float32);
  fillRandom(t, seed);
  return t;
}

class FloatSizes : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = loom::test::backendUnavailable(testBackend())) GTEST_SKIP() << *why;
  }
};

// x [4, 8, 6] reshaped to [n, 192 / n] with the second size a Double: 192 * reciprocal(n). Also
// full and iota sized by the same Double.
std::unique_ptr<Fusion> reshapeByDouble() {
  auto f = std::make_unique<Fusion>();
  FusionGuard g(f.get());
  ir::Scalar* n = IrBuilder::symbolic(DataType::Int64);
  f->addInput(n);
  TensorView* x = ops::TensorBuilder().shape({-1, -1, -1}).build();
  f->addInput(x);
  ir::Scalar* cols = ops::scalarBinary(
      ir::BinaryOpType::Mul, IrBuilder::constant(192.0),
      ops::scalarUnary(ir::UnaryOpType::Reciprocal, ops::scalarCast(n, DataType::Float64)));
  EXPECT_EQ(cols->dtype(), DataType::Float64);
  f->addOutput(ops::reshape(x, {n, cols}));
  f->addOutput(ops::full({cols}, 2.5, DataType::Float32));
  f->addOutput(ops::iota(ops::Size(cols), int64_t{3}, int64_t{2}, DataType::Int64));
  return f;
}

TEST_F(FloatSizes, AnIntegralDoubleIsTheSize) {
  FusionExecutorCache cache(reshapeByDouble(), poisonedOptions());
  for (int64_t n : {32, 48, 192}) {
    const Args args{n, random({4, 8, 6}, uint64_t(n))};
    const std::vector<Tensor> expected = eval::evaluateFusion(cache.fusion(), args);
    ASSERT_EQ(expected[0].sizes(), (std::vector<int64_t>{n, 192 / n}));
    const std::vector<Tensor> outs = cache.run(args);
    ASSERT_EQ(outs.size(), 3u);
    EXPECT_EQ(outs[0].sizes(), (std::vector<int64_t>{n, 192 / n}));
    EXPECT_EQ(outs[1].sizes(), (std::vector<int64_t>{192 / n}));
    EXPECT_EQ(outs[2].sizes(), (std::vector<int64_t>{192 / n}));
    for (size_t o = 0; o < outs.size(); ++o) {
      auto msg =
          eval::expectClose(outs[o], expected[o], eval::defaultTolerance(expected[o].dtype()),
                            "output " + std::to_string(o));
      EXPECT_FALSE(msg.has_value()) << *msg;
    }
  }
}

// 192 / 128 = 1.5: the run refuses it, naming the Double and its value, on the automatic path
// and in the reference evaluator alike.
TEST_F(FloatSizes, AFractionalDoubleIsAUserError) {
  FusionExecutorCache cache(reshapeByDouble(), poisonedOptions());
  const Args args{int64_t{128}, random({4, 8, 6}, 1)};
  for (const std::string& msg :
       {test::userErrorOf([&] { cache.run(args); }),
        test::userErrorOf([&] { (void)eval::evaluateFusion(cache.fusion(), args); })}) {
    EXPECT_NE(msg.find("; the arguments make s"), std::string::npos) << msg;
    EXPECT_NE(msg.find(" = 1.5"), std::string::npos) << msg;
    EXPECT_NE(msg.find("a floating size, bound or width must have an integral value"),
              std::string::npos)
        << msg;
  }
  // A size that is infinite (n = 0: 192 * inf).
  const std::string msg = test::userErrorOf([&] {
    cache.run(Args{int64_t{0}, random({0, 8, 6}, 2)});
  });
  EXPECT_NE(msg.find(" = inf"), std::string::npos) << msg;
}

// An explicit cast to an integer is the caller's truncation, as in nvFuser (its
// test_pad_dynamic pads by cast(2.5 * 7) = 17): not refused.
TEST_F(FloatSizes, AnExplicitCastTruncatesOnPurpose) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    ir::Scalar* p = IrBuilder::symbolic(DataType::Float64);
    f->addInput(p);
    TensorView* x = ops::TensorBuilder().shape({-1, -1}).build();
    f->addInput(x);
    f->addOutput(ops::pad(x, {ops::scalarCast(p, DataType::Int64), int64_t{1}}));
  }
  FusionExecutorCache cache(std::move(f), poisonedOptions());
  const Args args{17.5, random({2, 3}, 3)};
  const std::vector<Tensor> expected = eval::evaluateFusion(cache.fusion(), args);
  ASSERT_EQ(expected[0].sizes(), (std::vector<int64_t>{2, 21}));
  const std::vector<Tensor> outs = cache.run(args);
  auto msg = eval::expectClose(outs[0], expected[0], eval::defaultTolerance(DataType::Float32),
                               "output 0");
  EXPECT_FALSE(msg.has_value()) << *msg;
}

// A floating constant: 4.0 is the size 4, 4.5 is refused when the op is built.
TEST_F(FloatSizes, FloatingConstants) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    f->addOutput(ops::full({IrBuilder::constant(4.0), int64_t{3}}, 1.0, DataType::Float32));
  }
  FusionExecutorCache cache(std::move(f), poisonedOptions());
  const std::vector<Tensor> outs = cache.run(Args{});
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_EQ(outs[0].sizes(), (std::vector<int64_t>{4, 3}));
  Fusion g;
  FusionGuard guard(&g);
  const std::string msg = test::userErrorOf(
      [&] { (void)ops::full({IrBuilder::constant(4.5)}, 1.0, DataType::Float32); });
  EXPECT_NE(msg.find("the size 4.5 is not an integer"), std::string::npos) << msg;
}

}  // namespace
}  // namespace loom::runtime
