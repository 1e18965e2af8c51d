// SPDX-License-Identifier: Apache-2.0
// ops::scalarBinary / scalarUnary / scalarCast: result types and the errors for tensors and index
// math.
#include "loom/ops/scalar_arith.h"

#include <gtest/gtest.h>

#include "loom/ir/builder.h"
#include "loom/ir/fusion.h"
#include "loom/ops/tensor_builder.h"
#include "user_error_of.h"

namespace loom::ops {
namespace {

using ir::BinaryOpType;
using ir::IrBuilder;
using ir::UnaryOpType;

TEST(ScalarArith, ResultTypes) {
  ir::Fusion f;
  ir::FusionGuard g(&f);
  Scalar* f32 = IrBuilder::symbolic(DataType::Float32);
  Scalar* i32 = IrBuilder::symbolic(DataType::Int32);
  Scalar* i64 = IrBuilder::symbolic(DataType::Int64);
  Scalar* b = IrBuilder::symbolic(DataType::Bool);
  EXPECT_EQ(scalarBinary(BinaryOpType::Add, i32, i64)->dtype(), DataType::Int64);
  EXPECT_EQ(scalarBinary(BinaryOpType::Add, i32, int64_t(2))->dtype(), DataType::Int64);
  EXPECT_EQ(scalarBinary(BinaryOpType::Mul, f32, 2.0)->dtype(), DataType::Float64);
  EXPECT_EQ(scalarBinary(BinaryOpType::Mul, f32, i64)->dtype(), DataType::Float32);
  EXPECT_EQ(scalarBinary(BinaryOpType::Div, i64, i64)->dtype(), DataType::Float64);
  EXPECT_EQ(scalarBinary(BinaryOpType::Lt, f32, i64)->dtype(), DataType::Bool);
  EXPECT_EQ(scalarBinary(BinaryOpType::LogicalAnd, b, i64)->dtype(), DataType::Bool);
  EXPECT_EQ(scalarUnary(UnaryOpType::Sqrt, i64)->dtype(), DataType::Float64);
  EXPECT_EQ(scalarUnary(UnaryOpType::Neg, i32)->dtype(), DataType::Int32);
  EXPECT_EQ(scalarUnary(UnaryOpType::IsNan, f32)->dtype(), DataType::Bool);
  EXPECT_EQ(scalarCast(f32, DataType::Int64)->dtype(), DataType::Int64);
  EXPECT_EQ(scalarCast(f32, DataType::Float32), f32);
}

TEST(ScalarArith, TensorsAndIndexMathAreRefused) {
  ir::Fusion f;
  ir::FusionGuard g(&f);
  TensorView* x = TensorBuilder().rank(1).build();
  Scalar* s = IrBuilder::symbolic(DataType::Float64);
  EXPECT_NE(test::userErrorOf([&] {
              scalarBinary(BinaryOpType::Add, x, s);
            }).find("scalar arithmetic takes Scalars and numbers only"),
            std::string::npos);
  EXPECT_NE(test::userErrorOf([&] {
              scalarBinary(BinaryOpType::CeilDiv, s, s);
            }).find("ceil_div is index math"),
            std::string::npos);
  EXPECT_NE(test::userErrorOf([&] { scalarUnary(UnaryOpType::Cast, s); }).find("scalarCast"),
            std::string::npos);
}

}  // namespace
}  // namespace loom::ops
