// SPDX-License-Identifier: Apache-2.0
// Tolerances and the tensor comparison used by end-to-end tests.
#include "loom/eval/compare.h"

#include <limits>

#include "eval/eval_test_utils.h"

namespace loom::eval::testing {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Integers compare exactly; float tolerances grow with the reduction size and with lower precision.
TEST(CompareTest, DefaultTolerances) {
  EXPECT_EQ(defaultTolerance(DataType::Int32).rtol, 0.0);
  EXPECT_EQ(defaultTolerance(DataType::Bool).atol, 0.0);
  Tolerance f32 = defaultTolerance(DataType::Float32);
  EXPECT_GT(f32.rtol, 0.0);
  EXPECT_LT(f32.rtol, 1e-5);
  EXPECT_GT(defaultTolerance(DataType::Float32, 4096).rtol, f32.rtol);
  EXPECT_GT(defaultTolerance(DataType::BFloat16).rtol, defaultTolerance(DataType::Float16).rtol);
  EXPECT_GT(defaultTolerance(DataType::Float16).rtol, f32.rtol);
  EXPECT_LT(defaultTolerance(DataType::Float64).rtol, f32.rtol);
}

// Close tensors match; NaN matches NaN and inf the same inf.
TEST(CompareTest, CloseTensorsMatch) {
  Tensor a = makeTensor({2, 2}, {1.0, kNaN, kInf, -2.0});
  Tensor b = makeTensor({2, 2}, {1.0 + 1e-7, kNaN, kInf, -2.0});
  EXPECT_EQ(expectClose(a, b, defaultTolerance(DataType::Float32), "out"), std::nullopt);
}

// A mismatch names the first index, both values and the count.
TEST(CompareTest, MismatchMessage) {
  Tensor a = makeTensor({2, 2}, {1, 2, 3, 4});
  Tensor b = makeTensor({2, 2}, {1, 2, 3.5, 4.5});
  auto msg = expectClose(a, b, {1e-3, 1e-3}, "T7");
  ASSERT_TRUE(msg.has_value());
  EXPECT_HAS(*msg, "T7");
  EXPECT_HAS(*msg, "2 of 4 elements differ");
  EXPECT_HAS(*msg, "[1, 0]");
  EXPECT_HAS(*msg, "got 3, expected 3.5");
}

// Values and tolerances print in their shortest exact form: 0.1, not 0.10000000000000001.
TEST(CompareTest, MismatchMessagePrintsShortestExactValues) {
  Tensor a = makeTensor({3}, {0.1, 1.0 / 3.0, 1e-30}, DataType::Float64);
  Tensor b = makeTensor({3}, {0.2, 0.2, 0.2}, DataType::Float64);
  auto msg = expectClose(a, b, {1e-5, 1e-8}, "T3");
  ASSERT_TRUE(msg.has_value());
  EXPECT_HAS(*msg, "3 of 3 elements differ");
  EXPECT_HAS(*msg, "got 0.1, expected 0.2");
  EXPECT_HAS(*msg, "(rtol 1e-05, atol 1e-08)");
}

// A NaN (poisoned) actual where a finite value is expected always fails; so does inf vs -inf.
TEST(CompareTest, PoisonedActualFails) {
  Tensor a = makeTensor({2}, {kNaN, kInf});
  Tensor b = makeTensor({2}, {1.0, -kInf});
  auto msg = expectClose(a, b, {1e9, 1e9}, "out");
  ASSERT_TRUE(msg.has_value());
  EXPECT_HAS(*msg, "2 of 2");
  EXPECT_HAS(*msg, "poisoned");
  EXPECT_TRUE(expectClose(b, a, {1e9, 1e9}, "out").has_value());
}

// Shapes and dtypes must match.
TEST(CompareTest, ShapeAndDtypeMismatch) {
  EXPECT_TRUE(expectClose(makeTensor({2}, {1, 2}), makeTensor({1, 2}, {1, 2}), {}, "x"));
  EXPECT_TRUE(expectClose(makeTensor({2}, {1, 2}), makeTensor({2}, {1, 2}, DataType::Float64), {},
                          "x"));
}

// The bound is atol + rtol * |expected|.
TEST(CompareTest, ToleranceBoundary) {
  Tensor e = makeTensor({1}, {100.0}, DataType::Float64);
  EXPECT_FALSE(expectClose(makeTensor({1}, {100.5}, DataType::Float64), e, {0.004, 0.1}, "x"));
  EXPECT_TRUE(expectClose(makeTensor({1}, {100.6}, DataType::Float64), e, {0.004, 0.1}, "x"));
}

}  // namespace
}  // namespace loom::eval::testing
