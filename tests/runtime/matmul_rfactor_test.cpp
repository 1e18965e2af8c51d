// SPDX-License-Identifier: Apache-2.0
// rFactor of a matmul or linear output (ops::rFactorContraction) end to end: r{k} split, one piece
// rfactored, run through the cache (a batched matmul segment, then the sum's kernel) with the
// outputs poisoned and compared with the reference evaluator (double precision) of the fusion
// before the rFactor, so the rewrite itself is checked, not only its execution. Built twice: host
// backend (emu) and CUDA (gpu).
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>

#include "loom/eval/compare.h"
#include "loom/eval/reference_evaluator.h"
#include "loom/ir/ir.h"
#include "loom/ops/contraction_rfactor.h"
#include "loom/ops/ops.h"
#include "loom/runtime/fusion_executor_cache.h"
#include "runtime/runtime_test_backend.h"
#include "runtime/runtime_test_util.h"
#include "user_error_of.h"

namespace loom::runtime {
namespace {

using ir::Fusion;
using ir::FusionGuard;
using ir::TensorView;

class MatmulRFactor : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = loom::test::backendUnavailable(testBackend())) GTEST_SKIP() << *why;
  }

  static TensorView* input(Fusion& f, const std::vector<int64_t>& shape, DataType dtype) {
    TensorView* tv = ops::TensorBuilder().shape(shape).dtype(dtype).build();
    f.addInput(tv);
    return tv;
  }

  // Evaluates `fusion` before `schedule` (the reference), applies it, then checks the reference
  // evaluator and the cache's run of the rewritten fusion against that reference.
  static std::vector<std::string> check(std::unique_ptr<Fusion> fusion,
                                        const std::vector<eval::Argument>& args, int64_t k,
                                        const std::function<void(Fusion&)>& schedule) {
    std::vector<Tensor> expected = eval::evaluateFusion(*fusion, args);
    schedule(*fusion);
    std::vector<Tensor> evaluated = eval::evaluateFusion(*fusion, args);
    FusionExecutorCache cache(std::move(fusion), poisonedOptions());
    std::vector<Tensor> got = cache.run(args);
    EXPECT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size() && i < expected.size(); ++i) {
      EXPECT_EQ(got[i].sizes(), expected[i].sizes()) << "output " << i;
      const auto tol = eval::defaultTolerance(expected[i].dtype(), k);
      auto problem = eval::expectClose(got[i], expected[i], tol, "run output " + std::to_string(i));
      EXPECT_FALSE(problem.has_value()) << *problem;
      problem = eval::expectClose(evaluated[i], expected[i], tol,
                                  "evaluated output " + std::to_string(i));
      EXPECT_FALSE(problem.has_value()) << *problem;
    }
    std::vector<std::string> kinds;
    for (const SegmentRecord& r : cache.lastRuntime()->lastRun()) kinds.push_back(r.kind);
    return kinds;
  }

  // matmul [a_shape] x [b_shape], out.split(-1, factor, inner_split), rfactor of loop axis `axis`.
  static void checkMatmul(std::vector<int64_t> a_shape, std::vector<int64_t> b_shape,
                          int64_t factor, bool inner_split, int64_t axis, DataType dtype,
                          uint64_t seed) {
    SCOPED_TRACE("matmul [" + join(a_shape) + "] x [" + join(b_shape) + "] split " +
                 std::to_string(factor) + (inner_split ? " inner" : " outer") + ", rfactor " +
                 std::to_string(axis) + " " + std::string(dataTypeName(dtype)));
    auto fusion = std::make_unique<Fusion>();
    {
      FusionGuard g(fusion.get());
      TensorView* a = input(*fusion, a_shape, dtype);
      TensorView* b = input(*fusion, b_shape, dtype);
      fusion->addOutput(ops::matmul(a, b));
    }
    std::vector<eval::Argument> args{test::randomTensor(a_shape, dtype, seed),
                                     test::randomTensor(b_shape, dtype, seed + 1)};
    auto kinds = check(std::move(fusion), args, a_shape.back(), [&](Fusion& f) {
      auto* out = f.outputs()[0]->as<TensorView>();
      out->split(-1, factor, inner_split);
      TensorView* partial = ops::rFactorContraction(out, {axis});
      // nvFuser's loop order: [out.., kept piece, r{rfactored piece}].
      EXPECT_TRUE(partial->axis(-1)->isReduction());
      EXPECT_FALSE(partial->axis(-2)->isReduction());
      EXPECT_TRUE(partial->definition()->isA<ir::MatmulOp>());
      EXPECT_TRUE(out->definition()->isA<ir::ReductionOp>() ||
                  out->definition()->isA<ir::UnaryOp>());
    });
    // The operand views are read by the matmul in place or copied by a kernel; then the partial
    // product (one batched matmul segment) and the sum's kernel.
    std::string all = join(kinds);
    EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "matmul"), 1) << all;
    EXPECT_EQ(kinds.back(), "kernel") << all;
  }
};

// nvFuser's row-parallel form without devices: out.split(-1, d, inner_split=False), rfactor the
// inner piece: d matmuls over blocks of k, summed.
TEST_F(MatmulRFactor, OuterSplitInnerPieceMatchesTheProduct) {
  checkMatmul({6, 12}, {12, 5}, 3, /*inner_split=*/false, -1, DataType::Float32, 1);
  checkMatmul({2, 4, 8}, {8, 3}, 2, false, -1, DataType::Float32, 3);        // batched a
  checkMatmul({4, 8}, {3, 8, 5}, 4, false, -1, DataType::Float32, 5);        // batched b
  checkMatmul({2, 1, 4, 6}, {3, 6, 2}, 3, false, -1, DataType::Float32, 7);  // broadcast batch
}

// Either piece of either split: the rfactored piece is contracted, the other summed.
TEST_F(MatmulRFactor, EitherPieceOfEitherSplit) {
  checkMatmul({5, 12}, {12, 7}, 4, /*inner_split=*/true, -1, DataType::Float32, 11);
  checkMatmul({5, 12}, {12, 7}, 4, true, -2, DataType::Float32, 13);
  checkMatmul({5, 12}, {12, 7}, 3, false, -2, DataType::Float32, 15);
}

// bf16 / f16: the partials keep the operands' dtype, the sum is in f32, rounded once.
TEST_F(MatmulRFactor, HalfTypes) {
  for (DataType d : {DataType::BFloat16, DataType::Float16}) {
    checkMatmul({4, 16}, {16, 8}, 2, false, -1, d, 21);
  }
}

// linear with and without a bias: x [.., m, k] against w [n, k], the bias added once.
TEST_F(MatmulRFactor, LinearWithAndWithoutBias) {
  for (bool with_bias : {false, true}) {
    SCOPED_TRACE(with_bias ? "bias" : "no bias");
    auto fusion = std::make_unique<Fusion>();
    {
      FusionGuard g(fusion.get());
      TensorView* x = input(*fusion, {2, 3, 10}, DataType::Float32);
      TensorView* w = input(*fusion, {4, 10}, DataType::Float32);
      TensorView* bias = with_bias ? input(*fusion, {4}, DataType::Float32) : nullptr;
      fusion->addOutput(ops::linear(x, w, bias));
    }
    std::vector<eval::Argument> args{test::randomTensor({2, 3, 10}, DataType::Float32, 31),
                                     test::randomTensor({4, 10}, DataType::Float32, 32)};
    if (with_bias) args.push_back(test::randomTensor({4}, DataType::Float32, 33));
    check(std::move(fusion), args, 10, [](Fusion& f) {
      auto* out = f.outputs()[0]->as<TensorView>();
      out->split(-1, 2, /*inner_split=*/false);
      ops::rFactorContraction(out, {-1});
    });
  }
}

bool has(const std::string& message, const std::string& part) {
  if (message.find(part) != std::string::npos) return true;
  ADD_FAILURE() << "'" << part << "' not in: " << message;
  return false;
}

// The forms rFactorContraction does not build are UserErrors naming the tensor and the form.
TEST(MatmulRFactorErrors, FormsOtherThanOneSplitOfK) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  auto* a = ops::TensorBuilder().shape({4, 8}).build();
  auto* b = ops::TensorBuilder().shape({8, 3}).build();
  auto* v = ops::TensorBuilder().shape({8}).build();
  fusion.addInput(a);
  fusion.addInput(b);
  fusion.addInput(v);
  auto* unsplit = ops::matmul(a, b);
  EXPECT_TRUE(has(loom::test::userErrorOf([&] { ops::rFactorContraction(unsplit, {-1}); }),
                  "with the contracted r{k} split once"));
  auto* m_split = ops::matmul(a, b);
  m_split->split(0, 2);
  m_split->split(-1, 2);
  EXPECT_TRUE(has(loom::test::userErrorOf([&] { ops::rFactorContraction(m_split, {-1}); }),
                  "schedule the other dims after rfactor"));
  auto* odd = ops::matmul(a, b);
  odd->split(-1, 3);  // 8 % 3 != 0
  EXPECT_TRUE(has(loom::test::userErrorOf([&] { ops::rFactorContraction(odd, {-1}); }),
                  "needs a constant k that the factor divides"));
  auto* two = ops::matmul(a, b);
  two->split(-1, 2);
  EXPECT_TRUE(has(loom::test::userErrorOf([&] {
                    ops::rFactorContraction(two, {-1, -2});
                  }),
                  "give one axis"));
  EXPECT_TRUE(has(loom::test::userErrorOf([&] { ops::rFactorContraction(two, {0}); }),
                  "is not a piece of the split contracted r{k}"));
  auto* vec = ops::matmul(v, b);
  vec->split(-1, 2);
  EXPECT_TRUE(
      has(loom::test::userErrorOf([&] { ops::rFactorContraction(vec, {-1}); }), "has 1 dims"));
  auto* plain = ops::add(a, a);
  EXPECT_TRUE(has(loom::test::userErrorOf([&] { ops::rFactorContraction(plain, {-1}); }),
                  "not the output of a matmul or linear"));
}

}  // namespace
}  // namespace loom::runtime
