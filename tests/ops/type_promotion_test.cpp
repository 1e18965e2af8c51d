// SPDX-License-Identifier: Apache-2.0
// Type promotion: PyTorch's result_type over tensors and numbers, and Loom's compute type.
#include "ops_test_utils.h"

namespace loom::ops::testing {
namespace {

using DT = DataType;

class TypePromotionTest : public OpsTest {
 protected:
  DataType result(std::vector<Operand> ops) { return resultType(ops); }
  DataType compute(std::vector<Operand> ops, PromotionKind k) { return computeType(ops, k); }
  TensorView* t(DataType dtype) { return input({4}, dtype); }
};

// 0-dim tensors are a tier of their own between tensors with dims and numbers, as in torch and
// nvFuser: they count only when their category is above the dimensioned tensors', and numbers
// count against them as against any tensor.
TEST_F(TypePromotionTest, ZeroDimTensors) {
  TensorView* d64 = input({}, DT::Float64);
  TensorView* i64 = input({}, DT::Int64);
  TensorView* c64 = input({}, DT::ComplexFloat);
  EXPECT_EQ(result({t(DT::Float32), d64}), DT::Float32);
  EXPECT_EQ(result({t(DT::Float16), d64}), DT::Float16);
  EXPECT_EQ(result({t(DT::Int32), i64}), DT::Int32);
  EXPECT_EQ(result({t(DT::Int32), d64}), DT::Float64);  // a higher category: its own type
  EXPECT_EQ(result({t(DT::Bool), i64}), DT::Int64);
  EXPECT_EQ(result({t(DT::Float64), c64}), DT::ComplexDouble);
  EXPECT_EQ(result({t(DT::Int64), c64}), DT::ComplexFloat);
  EXPECT_EQ(result({d64, input({}, DT::Float32)}), DT::Float64);  // 0-dim alone: promote_types
  EXPECT_EQ(result({i64, 2.5}), DT::Float32);   // a float number above a 0-dim int tensor
  EXPECT_EQ(result({d64, 2.5}), DT::Float64);
  EXPECT_EQ(result({t(DT::Int32), i64, 2.5}), DT::Float32);
  // A size-1 dim is a dim: [1] tensors are not 0-dim.
  EXPECT_EQ(result({t(DT::Float32), input({1}, DT::Float64)}), DT::Float64);
}

// Tensor dtypes promote like torch.promote_types.
TEST_F(TypePromotionTest, TensorTensorTable) {
  EXPECT_EQ(result({t(DT::Bool), t(DT::Int32)}), DT::Int32);
  EXPECT_EQ(result({t(DT::Bool), t(DT::Bool)}), DT::Bool);
  EXPECT_EQ(result({t(DT::Int32), t(DT::Int64)}), DT::Int64);
  EXPECT_EQ(result({t(DT::Int64), t(DT::Float16)}), DT::Float16);
  EXPECT_EQ(result({t(DT::BFloat16), t(DT::Float32)}), DT::Float32);
  EXPECT_EQ(result({t(DT::Float16), t(DT::BFloat16)}), DT::Float32);
  EXPECT_EQ(result({t(DT::Float32), t(DT::Float64)}), DT::Float64);
  EXPECT_EQ(result({t(DT::BFloat16), t(DT::Float64)}), DT::Float64);
}

// The narrow and unsigned integers promote as torch.promote_types: signed ones to the wider, u8
// with a signed type to the narrowest signed type holding both (u8 with i8 is i16); every
// integer with a floating type is the floating type; bool gives way to each.
TEST_F(TypePromotionTest, NarrowAndUnsignedIntegers) {
  EXPECT_EQ(result({t(DT::UInt8), t(DT::Int8)}), DT::Int16);
  EXPECT_EQ(result({t(DT::Int8), t(DT::UInt8)}), DT::Int16);
  EXPECT_EQ(result({t(DT::UInt8), t(DT::Int16)}), DT::Int16);
  EXPECT_EQ(result({t(DT::UInt8), t(DT::Int32)}), DT::Int32);
  EXPECT_EQ(result({t(DT::UInt8), t(DT::Int64)}), DT::Int64);
  EXPECT_EQ(result({t(DT::Int8), t(DT::Int16)}), DT::Int16);
  EXPECT_EQ(result({t(DT::Int16), t(DT::Int32)}), DT::Int32);
  EXPECT_EQ(result({t(DT::Int8), t(DT::Int64)}), DT::Int64);
  EXPECT_EQ(result({t(DT::Bool), t(DT::UInt8)}), DT::UInt8);
  EXPECT_EQ(result({t(DT::Bool), t(DT::Int8)}), DT::Int8);
  EXPECT_EQ(result({t(DT::UInt64), t(DT::UInt64)}), DT::UInt64);
  for (DT i : {DT::Int8, DT::Int16, DT::UInt8, DT::UInt16, DT::UInt32, DT::UInt64}) {
    EXPECT_EQ(result({t(i), t(DT::Float16)}), DT::Float16) << i;
    EXPECT_EQ(result({t(i), t(DT::BFloat16)}), DT::BFloat16) << i;
    EXPECT_EQ(result({t(i), t(DT::Float32)}), DT::Float32) << i;
    EXPECT_EQ(result({t(i), 2}), i) << i;  // a number keeps the tensor's integer type
    EXPECT_EQ(result({t(i), 2.5}), DT::Float32) << i;
    EXPECT_EQ(result({t(i), input({}, DT::Int64)}), i) << i;  // 0-dim: the same category
    EXPECT_EQ(div(t(i), t(i))->dtype(), DT::Float32) << i;   // true division
    EXPECT_EQ(add(t(i), t(i))->dtype(), i) << i;
    EXPECT_EQ(lt(t(i), 2)->dtype(), DT::Bool) << i;
  }
}

// torch defines no promotion of u16, u32 or u64 with another integer type: a UserError naming
// both types and what to do.
TEST_F(TypePromotionTest, WideUnsignedWithOtherIntegersIsError) {
  for (auto [a, b] : {std::pair{DT::UInt16, DT::Int32}, std::pair{DT::UInt32, DT::Int64},
                      std::pair{DT::UInt64, DT::Int64}, std::pair{DT::UInt8, DT::UInt16},
                      std::pair{DT::Int8, DT::UInt64}}) {
    std::string msg = userError([&] { add(t(a), t(b)); });
    EXPECT_HAS(msg, std::string("type promotion of ") + std::string(dataTypeName(a)) + " with " +
                        std::string(dataTypeName(b)) + " is not defined");
    EXPECT_HAS(msg, "cast one operand first");
  }
}

// Numbers only count when their category is higher than every tensor's, with default types.
TEST_F(TypePromotionTest, WrappedNumbers) {
  EXPECT_EQ(result({t(DT::Int32), 2.5}), DT::Float32);
  EXPECT_EQ(result({t(DT::Int32), 2}), DT::Int32);
  EXPECT_EQ(result({t(DT::Bool), 3}), DT::Int64);
  EXPECT_EQ(result({t(DT::Bool), true}), DT::Bool);
  EXPECT_EQ(result({t(DT::Float16), 2.5}), DT::Float16);
  EXPECT_EQ(result({t(DT::Float64), 2.5}), DT::Float64);
  // A Float64 Scalar node is a wrapped number too: it does not widen a Float32 tensor.
  EXPECT_EQ(result({t(DT::Float32), ir::IrBuilder::symbolic(DT::Float64)}), DT::Float32);
  EXPECT_EQ(result({2, 2.5}), DT::Float32);
  EXPECT_EQ(result({2, 3}), DT::Int64);
}

// Compute type: IntToFloat lifts integers and bools to Float32; half types widen to Float32.
TEST_F(TypePromotionTest, ComputeType) {
  EXPECT_EQ(compute({t(DT::Int32)}, PromotionKind::IntToFloat), DT::Float32);
  EXPECT_EQ(compute({t(DT::Bool)}, PromotionKind::IntToFloat), DT::Float32);
  EXPECT_EQ(compute({t(DT::Int32)}, PromotionKind::Default), DT::Int32);
  EXPECT_EQ(compute({t(DT::Float64)}, PromotionKind::IntToFloat), DT::Float64);
  EXPECT_EQ(compute({t(DT::BFloat16)}, PromotionKind::Default), DT::Float32);
  EXPECT_EQ(compute({t(DT::Float16), 1.0}, PromotionKind::Comparison), DT::Float32);
}

// Op outputs follow the promotion table; half inputs return Float32 from primitive ops.
TEST_F(TypePromotionTest, OpResultDtypes) {
  EXPECT_EQ(add(t(DT::Bool), t(DT::Int32))->dtype(), DT::Int32);
  EXPECT_EQ(add(t(DT::Int32), 2.5)->dtype(), DT::Float32);
  EXPECT_EQ(mul(t(DT::Int64), 2)->dtype(), DT::Int64);
  EXPECT_EQ(add(t(DT::BFloat16), t(DT::Float32))->dtype(), DT::Float32);
  EXPECT_EQ(add(t(DT::Float16), t(DT::BFloat16))->dtype(), DT::Float32);
  EXPECT_EQ(add(t(DT::Float16), t(DT::Float16))->dtype(), DT::Float32);
  EXPECT_EQ(div(t(DT::Int32), t(DT::Int32))->dtype(), DT::Float32);
  EXPECT_EQ(div(t(DT::Int64), 2)->dtype(), DT::Float32);
  EXPECT_EQ(lt(t(DT::Int32), 2.5)->dtype(), DT::Bool);
  EXPECT_EQ(eq(t(DT::Float16), t(DT::Float16))->dtype(), DT::Bool);
  EXPECT_EQ(pow(t(DT::Int32), 2)->dtype(), DT::Int32);
}

// Operands whose dtype differs from the compute type are cast: tensors through a Cast op,
// constants by becoming constants of the compute type (no Cast expr).
TEST_F(TypePromotionTest, OperandCasts) {
  auto* a = t(DT::Int32);
  auto* out = add(a, 2.5);
  auto* op = out->definition()->as<ir::BinaryOp>();
  auto* lhs = op->lhs()->as<TensorView>();
  ASSERT_NE(lhs->definition(), nullptr);
  EXPECT_EQ(lhs->definition()->as<ir::UnaryOp>()->opType(), ir::UnaryOpType::Cast);
  EXPECT_EQ(lhs->dtype(), DT::Float32);
  auto* rhs = op->rhs()->as<Scalar>();
  EXPECT_TRUE(rhs->isConst());
  EXPECT_EQ(rhs->dtype(), DT::Float32);
  EXPECT_EQ(rhs->constDouble(), 2.5);

  // Comparisons cast both sides to the compute type and produce Bool.
  auto* c = lt(t(DT::Float16), t(DT::Float32));
  auto* cmp = c->definition()->as<ir::BinaryOp>();
  EXPECT_EQ(cmp->lhs()->dtype(), DT::Float32);
  EXPECT_EQ(cmp->rhs()->dtype(), DT::Float32);
  verifyOutputs({out, c});
}

// A symbolic Scalar operand of another type is converted with a scalar Cast.
TEST_F(TypePromotionTest, SymbolicScalarCast) {
  Scalar* s = ir::IrBuilder::symbolic(DT::Int64);
  fusion_.addInput(s);
  auto* out = mul(t(DT::Float32), s);
  auto* rhs = out->definition()->as<ir::BinaryOp>()->rhs();
  EXPECT_EQ(rhs->dtype(), DT::Float32);
  ASSERT_NE(rhs->definition(), nullptr);
  EXPECT_EQ(rhs->definition()->as<ir::UnaryOp>()->opType(), ir::UnaryOpType::Cast);
  verifyOutputs({out});
}

// Operand(Val*) accepts only tensors and scalars.
TEST_F(TypePromotionTest, OperandRejectsOtherVals) {
  auto* x = t(DT::Float32);
  std::string msg = userError([&] { Operand o(static_cast<Val*>(x->logical()[0])); });
  EXPECT_HAS(msg, "must be a TensorView or a Scalar");
}

}  // namespace
}  // namespace loom::ops::testing
