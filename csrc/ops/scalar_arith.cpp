// SPDX-License-Identifier: Apache-2.0
// Arithmetic on Scalars alone (see the header for the type rules).
#include "loom/ops/scalar_arith.h"

#include <array>
#include <initializer_list>

#include "loom/ir/builder.h"
#include "loom/ir/complex_ops.h"
#include "loom/ir/exprs.h"
#include "loom/ops/type_promotion.h"
#include "loom/support/error.h"

namespace loom::ops {
namespace {

using ir::BinaryOpType;
using ir::IrBuilder;
using ir::UnaryOpType;

enum class Category : uint8_t { Bool, Integer, Floating, Complex };

Category categoryOf(DataType t) {
  if (t == DataType::Bool) return Category::Bool;
  if (isComplexType(t)) return Category::Complex;
  return isFloatingType(t) ? Category::Floating : Category::Integer;
}

// Complex values take only the ops defined on them (complex_ops.h).
template <typename OpType>
void checkComplex(std::string_view name, OpType op, DataType compute) {
  LOOM_CHECK(!isComplexType(compute) || ir::isComplexOp(op), name,
             " is not defined for complex values (got ", compute, ")");
}

Scalar* scalarOf(const Operand& o, std::string_view op) {
  LOOM_CHECK(o.isScalar(), op, ": ", o.val()->toString(),
             " is a tensor; scalar arithmetic takes Scalars and numbers only (the tensor ops take "
             "a tensor with a Scalar)");
  return o.val()->as<Scalar>();
}

// The widest type of the operands within the highest category.
DataType promoted(std::initializer_list<Scalar*> operands) {
  DataType best = DataType::Bool;
  for (Scalar* s : operands) {
    const DataType t = s->dtype();
    const Category c = categoryOf(t);
    const Category b = categoryOf(best);
    if (c == b && c == Category::Integer) {
      best = promoteTypes(best, t);  // u8 with i8 is i16, as for tensors
    } else if (c > b || (c == b && dataTypeSize(t) > dataTypeSize(best))) {
      best = t;
    }
  }
  return best;
}

Scalar* castTo(Scalar* s, DataType dtype) {
  if (s->dtype() == dtype) return s;
  Scalar* out = IrBuilder::symbolic(dtype);
  IrBuilder::create<ir::UnaryOp>(UnaryOpType::Cast, out, s);
  return out;
}

// scalarBinary's Div is true division (scalarCDiv builds C's); atan2 and the floating functions
// are floating by their kind.
bool givesFloat(BinaryOpType op) {
  return op == BinaryOpType::Div || ir::binaryKind(op) == ir::BinaryKind::Floating;
}

bool givesFloat(UnaryOpType op) { return ir::isFloatOnlyOp(op); }

// The dtypes an op takes (its kind, op_types.h), as its tensor form checks them.
void checkOperandTypes(std::string_view name, BinaryOpType op, DataType compute) {
  switch (ir::binaryKind(op)) {
    case ir::BinaryKind::Integer:
      LOOM_CHECK(isIntegralType(compute), name, ": takes integers, got ", compute);
      break;
    case ir::BinaryKind::Bitwise:
      LOOM_CHECK(!isFloatingType(compute), name, ": takes integers or Bool, got ", compute);
      break;
    case ir::BinaryKind::FloatOnly:
      LOOM_CHECK(compute == DataType::Float32 || compute == DataType::Float64, name,
                 ": takes Float32 or Float64, got ", compute);
      break;
    case ir::BinaryKind::NotBool:
      LOOM_CHECK(compute != DataType::Bool, name, ": takes numbers, not Bool");
      break;
    default:
      // fmod has no Bool meaning either (the verifier refuses it); its tensor form leaves that
      // to the verifier, scalar arithmetic says it here.
      LOOM_CHECK(op != BinaryOpType::Fmod || compute != DataType::Bool, name,
                 ": takes numbers, not Bool");
      break;
  }
}

Scalar* buildBinary(BinaryOpType op, Scalar* x, Scalar* y, DataType compute) {
  checkOperandTypes(ir::opTypeName(op), op, compute);
  checkComplex(ir::opTypeName(op), op, compute);
  const DataType out = ir::isPredicateOp(op) ? DataType::Bool : compute;
  Scalar* result = IrBuilder::symbolic(out);
  IrBuilder::create<ir::BinaryOp>(op, result, castTo(x, compute), castTo(y, compute));
  return result;
}

}  // namespace

Scalar* scalarBinary(BinaryOpType op, Operand a, Operand b) {
  const std::string_view name = ir::opTypeName(op);
  LOOM_CHECK(op != BinaryOpType::CeilDiv, name,
             " is index math; scalar arithmetic offers the user-level ops");
  Scalar* x = scalarOf(a, name);
  Scalar* y = scalarOf(b, name);
  const bool logical = op == BinaryOpType::LogicalAnd || op == BinaryOpType::LogicalOr;
  DataType compute = logical ? DataType::Bool : promoted({x, y});
  if (givesFloat(op) && categoryOf(compute) < Category::Floating) compute = DataType::Float64;
  return buildBinary(op, x, y, compute);
}

Scalar* scalarCDiv(Operand a, Operand b) {
  Scalar* x = scalarOf(a, "div");
  Scalar* y = scalarOf(b, "div");
  return buildBinary(BinaryOpType::Div, x, y, promoted({x, y}));
}

Scalar* scalarCeilDiv(Operand a, Operand b) {
  Scalar* x = scalarOf(a, "ceilDiv");
  Scalar* y = scalarOf(b, "ceilDiv");
  const DataType compute = promoted({x, y});
  LOOM_CHECK(compute != DataType::Bool && !isComplexType(compute),
             "ceilDiv: takes integers or floating values, not ", compute);
  return buildBinary(BinaryOpType::CeilDiv, x, y, compute);
}

Scalar* scalarUnary(UnaryOpType op, Operand a) {
  const std::string_view name = ir::opTypeName(op);
  LOOM_CHECK(op != UnaryOpType::Cast, "cast: use scalarCast, which names the type");
  Scalar* x = scalarOf(a, name);
  DataType compute = op == UnaryOpType::LogicalNot ? DataType::Bool : x->dtype();
  if (givesFloat(op) && categoryOf(compute) < Category::Floating) compute = DataType::Float64;
  LOOM_CHECK(!ir::isBitwiseOp(op) || !isFloatingType(compute), name,
             ": takes integers or Bool, got ", compute);
  checkComplex(name, op, compute);
  LOOM_CHECK(isComplexType(compute) ||
                 (op != UnaryOpType::Real && op != UnaryOpType::Imag && op != UnaryOpType::Conj),
             name, ": takes a complex value, got ", compute);
  const DataType out = ir::isPredicateOp(op) ? DataType::Bool
                       : isComplexType(compute) && ir::isComplexToRealOp(op)
                           ? complexPartType(compute)
                           : compute;
  Scalar* result = IrBuilder::symbolic(out);
  IrBuilder::create<ir::UnaryOp>(op, result, castTo(x, compute));
  return result;
}

Scalar* scalarCast(Operand a, DataType dtype) {
  Scalar* x = scalarOf(a, "cast");
  if (x->dtype() == dtype) return x;
  LOOM_CHECK(!isComplexType(x->dtype()) || isComplexType(dtype), "cast: ", x->toString(), " is ",
             x->dtype(), ", and a complex value does not convert to ", dtype,
             " (take real, imag or abs of it first)");
  Scalar* result = IrBuilder::symbolic(dtype);
  IrBuilder::create<ir::UnaryOp>(UnaryOpType::Cast, result, x);
  return result;
}

}  // namespace loom::ops
