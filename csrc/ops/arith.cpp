// SPDX-License-Identifier: Apache-2.0
// Pointwise ops: promotion, casts to the compute type, explicit rank broadcasting, then one
// UnaryOp/BinaryOp/TernaryOp whose output gets fresh IterDomains.
#include "loom/ops/arith.h"

#include <array>
#include <cmath>
#include <numbers>

#include "loom/ir/builder.h"
#include "loom/ir/complex_ops.h"
#include "loom/ir/exprs.h"
#include "loom/ops/factory.h"
#include "loom/ops/scalar_arith.h"
#include "loom/ops/shape.h"
#include "ops/utils.h"

namespace loom::ops {
namespace {

using ir::BinaryOpType;
using ir::IrBuilder;
using ir::TernaryOpType;
using ir::UnaryOpType;

// Converts an operand to `dtype`: tensors through a Cast op, constants by making a constant of the
// new type, symbolic Scalars through a scalar Cast.
Val* castTo(Val* v, DataType dtype) {
  if (v->dtype() == dtype) return v;
  if (auto* tv = v->dynCast<TensorView>()) return cast(tv, dtype);
  auto* s = v->as<Scalar>();
  if (s->isConst()) return IrBuilder::constant(s->value(), dtype);
  Scalar* out = IrBuilder::symbolic(dtype);
  IrBuilder::create<ir::UnaryOp>(UnaryOpType::Cast, out, s);
  return out;
}

// The shared body of every pointwise op: checks shapes, casts operand i to types[i], broadcasts
// lower-rank tensors to the output rank, then lets `build` create the expr for the new output.
template <typename Build>
TensorView* pointwise(std::string_view op, std::span<const Operand> operands,
                      std::span<const DataType> types, DataType out_dtype, Build build) {
  std::vector<TensorView*> tensors;
  for (const Operand& o : operands) {
    if (o.isTensor()) tensors.push_back(o.tensor());
  }
  LOOM_CHECK(!tensors.empty(), op, ": at least one operand must be a tensor");
  auto out_ids = detail::broadcastOutputIds(tensors, op);
  const auto rank = int64_t(out_ids.size());
  std::vector<Val*> ins;
  for (size_t i = 0; i < operands.size(); ++i) {
    Val* v = castTo(operands[i].val(), types[i]);
    if (auto* tv = v->dynCast<TensorView>(); tv != nullptr && tv->rank() < rank) {
      std::vector<bool> flags(size_t(rank), false);
      for (int64_t d = 0; d < rank - tv->rank(); ++d) flags[size_t(d)] = true;
      v = broadcast(tv, flags);
    }
    ins.push_back(v);
  }
  TensorView* out = detail::newTensor(std::move(out_ids), out_dtype);
  build(out, ins);
  return out;
}

// An op on a complex value must be one of those defined for complex numbers (complex_ops.h).
template <typename OpType>
void checkComplexOp(OpType t, const Operand& x, DataType compute) {
  LOOM_CHECK(!isComplexType(compute) || ir::isComplexOp(t), ir::opTypeName(t), ": ",
             x.val()->toString(), " is ", x.val()->dtype(), ", and ", ir::opTypeName(t),
             " is not defined for complex values (docs/ops.md, \"Complex numbers\", lists the "
             "ops that are)");
}

TensorView* unary(UnaryOpType t, TensorView* x, DataType compute, DataType out_dtype) {
  checkComplexOp(t, x, compute);
  std::array<Operand, 1> ops{x};
  std::array<DataType, 1> types{compute};
  return pointwise(ir::opTypeName(t), ops, types, out_dtype, [&](TensorView* out, auto& ins) {
    IrBuilder::create<ir::UnaryOp>(t, out, ins[0]);
  });
}

// exp, log, sqrt, ...: integers and bools compute in Float32.
TensorView* floatingUnary(UnaryOpType t, TensorView* x) {
  std::array<Operand, 1> ops{x};
  DataType ct = computeType(ops, PromotionKind::IntToFloat);
  return unary(t, x, ct, ct);
}

// neg, abs, floor, ...: keep integer types.
TensorView* sameTypeUnary(UnaryOpType t, TensorView* x) {
  std::array<Operand, 1> ops{x};
  DataType ct = computeType(ops, PromotionKind::Default);
  return unary(t, x, ct, ct);
}

TensorView* binary(BinaryOpType t, const Operand& a, const Operand& b, PromotionKind kind) {
  std::array<Operand, 2> ops{a, b};
  DataType ct = computeType(ops, kind);
  checkComplexOp(t, isComplexType(a.val()->dtype()) ? a : b, ct);
  std::array<DataType, 2> types{ct, ct};
  DataType out_dtype = kind == PromotionKind::Comparison ? DataType::Bool : ct;
  return pointwise(ir::opTypeName(t), ops, types, out_dtype, [&](TensorView* out, auto& ins) {
    IrBuilder::create<ir::BinaryOp>(t, out, ins[0], ins[1]);
  });
}

TensorView* logicalBinary(BinaryOpType t, const Operand& a, const Operand& b) {
  std::array<Operand, 2> ops{a, b};
  std::array<DataType, 2> types{DataType::Bool, DataType::Bool};
  return pointwise(ir::opTypeName(t), ops, types, DataType::Bool, [&](TensorView* out, auto& ins) {
    IrBuilder::create<ir::BinaryOp>(t, out, ins[0], ins[1]);
  });
}

TensorView* ternary(TernaryOpType t, std::array<Operand, 3> ops, std::array<DataType, 3> types,
                    DataType out_dtype) {
  for (const Operand& o : ops) {
    if (isComplexType(o.val()->dtype())) checkComplexOp(t, o, o.val()->dtype());
  }
  return pointwise(ir::opTypeName(t), ops, types, out_dtype, [&](TensorView* out, auto& ins) {
    IrBuilder::create<ir::TernaryOp>(t, out, ins[0], ins[1], ins[2]);
  });
}

bool integralOrBool(DataType t) { return isIntegralType(t) || t == DataType::Bool; }

// The promoted type of a binary op's operands (before half widening), checked against what the
// op accepts; `what` says which dtypes those are.
DataType checkedResult(std::string_view op, const Operand& a, const Operand& b,
                       bool (*ok)(DataType), std::string_view what) {
  std::array<Operand, 2> ops{a, b};
  const DataType t = resultType(ops);
  LOOM_CHECK(ok(t), op, ": takes ", what, ", got ", a.val()->toString(), " (", a.val()->dtype(),
             ") and ", b.val()->toString(), " (", b.val()->dtype(), ")");
  return t;
}

TensorView* testUnary(UnaryOpType t, TensorView* x) {
  std::array<Operand, 1> ops{x};
  return unary(t, x, computeType(ops, PromotionKind::Default), DataType::Bool);
}

void checkNotBool(std::string_view op, const Operand& a, const Operand& b) {
  checkedResult(
      op, a, b, [](DataType t) { return t != DataType::Bool; }, "numbers (not Bool)");
}

// The parts of a complex number; real and conj of a real tensor are the tensor (torch's rules).
TensorView* complexPart(UnaryOpType t, TensorView* x) {
  const DataType dt = x->dtype();
  if (t == UnaryOpType::Imag) {
    LOOM_CHECK(isComplexType(dt), "imag: ", x->toString(), " is ", dt,
               "; imag is defined for complex tensors only");
  }
  if (!isComplexType(dt)) return x;
  return unary(t, x, dt, t == UnaryOpType::Conj ? dt : complexPartType(dt));
}

}  // namespace

TensorView* cast(TensorView* x, DataType dtype) {
  if (x->dtype() == dtype) return x;
  LOOM_CHECK(!isComplexType(x->dtype()) || isComplexType(dtype), "cast: ", x->toString(), " is ",
             x->dtype(), ", and a complex value does not convert to ", dtype,
             " (take real(x), imag(x) or abs(x) first)");
  TensorView* out = detail::newTensor(detail::freshIds(detail::dims(x)), dtype);
  IrBuilder::create<ir::UnaryOp>(UnaryOpType::Cast, out, x);
  return out;
}

TensorView* unaryOp(UnaryOpType t, TensorView* x) {
  const std::string_view name = ir::opTypeName(t);
  const DataType dt = x->dtype();
  switch (t) {  // the rules beyond the op's kind
    case UnaryOpType::Neg:
      LOOM_CHECK(dt != DataType::Bool, "neg: ", x->toString(),
                 " is Bool; negation is not defined for Bool (use logicalNot)");
      break;
    case UnaryOpType::Frac:
      LOOM_CHECK(dt != DataType::Bool, "frac: ", x->toString(), " is Bool; frac takes numbers");
      break;
    case UnaryOpType::Abs:  // the magnitude of a complex value, of the part type
      if (isComplexType(dt)) return unary(t, x, dt, complexPartType(dt));
      break;
    default: break;
  }
  switch (ir::unaryKind(t)) {
    case ir::UnaryKind::Floating: return floatingUnary(t, x);
    case ir::UnaryKind::SameType: return sameTypeUnary(t, x);
    case ir::UnaryKind::Test: return testUnary(t, x);
    case ir::UnaryKind::Logical: return unary(t, x, DataType::Bool, DataType::Bool);
    case ir::UnaryKind::Bitwise:
      LOOM_CHECK(integralOrBool(dt), name, ": ", x->toString(), " is ", dt, "; ", name,
                 " takes integers or Bool");
      return sameTypeUnary(t, x);
    case ir::UnaryKind::ComplexPart: return complexPart(t, x);
    case ir::UnaryKind::Cast: break;
  }
  LOOM_CHECK(false, "cast: unaryOp has no dtype to convert ", x->toString(),
             " to; use ops::cast(x, dtype)");
  LOOM_UNREACHABLE();
}

TensorView* binaryOp(BinaryOpType t, Operand a, Operand b) {
  const std::string_view name = ir::opTypeName(t);
  switch (ir::binaryKind(t)) {
    case ir::BinaryKind::Arithmetic: return binary(t, a, b, PromotionKind::Default);
    case ir::BinaryKind::NotBool:
      checkNotBool(name, a, b);
      return binary(t, a, b, PromotionKind::Default);
    case ir::BinaryKind::Floating: return binary(t, a, b, PromotionKind::IntToFloat);
    case ir::BinaryKind::FloatOnly:
      checkedResult(
          name, a, b, [](DataType d) { return d == DataType::Float32 || d == DataType::Float64; },
          "Float32 or Float64 operands");
      return binary(t, a, b, PromotionKind::Default);
    case ir::BinaryKind::Comparison: return binary(t, a, b, PromotionKind::Comparison);
    case ir::BinaryKind::Logical: return logicalBinary(t, a, b);
    case ir::BinaryKind::Bitwise:
      checkedResult(name, a, b, integralOrBool, "integers or Bool");
      return binary(t, a, b, PromotionKind::Default);
    case ir::BinaryKind::Integer:
      checkedResult(name, a, b, isIntegralType, "integers");
      return binary(t, a, b, PromotionKind::Default);
    case ir::BinaryKind::Index: break;
  }
  LOOM_CHECK(false, name, " is index math; the ops build no tensor op of it");
  LOOM_UNREACHABLE();
}

TensorView* neg(TensorView* x) { return unaryOp(UnaryOpType::Neg, x); }
TensorView* abs(TensorView* x) { return unaryOp(UnaryOpType::Abs, x); }
TensorView* real(TensorView* x) { return unaryOp(UnaryOpType::Real, x); }
TensorView* imag(TensorView* x) { return unaryOp(UnaryOpType::Imag, x); }
TensorView* conj(TensorView* x) { return unaryOp(UnaryOpType::Conj, x); }

TensorView* complex(Operand real_part, Operand imag_part) {
  for (const Operand* o : {&real_part, &imag_part}) {
    const DataType t = o->val()->dtype();
    LOOM_CHECK(t == DataType::Float32 || t == DataType::Float64 || !o->isTensor(),
               "complex: ", o->val()->toString(), " is ", t,
               "; complex takes f32 or f64 parts (as torch.complex)");
    LOOM_CHECK(!isComplexType(t), "complex: ", o->val()->toString(), " is already complex");
  }
  std::array<Operand, 2> parts{real_part, imag_part};
  const DataType part = computeType(parts, PromotionKind::IntToFloat);
  const DataType ct = complexTypeOf(part);
  // real + imag * i, built from the primitive ops so that every layer already knows its meaning.
  Scalar* i_unit = IrBuilder::constant(std::complex<double>(0.0, 1.0), ct);
  return add(castTo(real_part.val(), ct), mul(castTo(imag_part.val(), ct), i_unit));
}
// CeilDiv is index math to binaryOp (the IR's own extents use it); nvFuser exposes it as an op.
TensorView* ceilDiv(Operand a, Operand b) {
  checkNotBool("ceilDiv", a, b);
  return binary(BinaryOpType::CeilDiv, a, b, PromotionKind::Default);
}
TensorView* exp(TensorView* x) { return unaryOp(UnaryOpType::Exp, x); }
TensorView* exp2(TensorView* x) { return unaryOp(UnaryOpType::Exp2, x); }
TensorView* log(TensorView* x) { return unaryOp(UnaryOpType::Log, x); }
TensorView* log2(TensorView* x) { return unaryOp(UnaryOpType::Log2, x); }
TensorView* sqrt(TensorView* x) { return unaryOp(UnaryOpType::Sqrt, x); }
TensorView* rsqrt(TensorView* x) { return unaryOp(UnaryOpType::Rsqrt, x); }
TensorView* reciprocal(TensorView* x) { return unaryOp(UnaryOpType::Reciprocal, x); }
TensorView* sin(TensorView* x) { return unaryOp(UnaryOpType::Sin, x); }
TensorView* cos(TensorView* x) { return unaryOp(UnaryOpType::Cos, x); }
TensorView* tanh(TensorView* x) { return unaryOp(UnaryOpType::Tanh, x); }
TensorView* sigmoid(TensorView* x) { return unaryOp(UnaryOpType::Sigmoid, x); }
TensorView* relu(TensorView* x) { return unaryOp(UnaryOpType::Relu, x); }
TensorView* silu(TensorView* x) { return unaryOp(UnaryOpType::Silu, x); }
TensorView* erf(TensorView* x) { return unaryOp(UnaryOpType::Erf, x); }
TensorView* floor(TensorView* x) { return unaryOp(UnaryOpType::Floor, x); }
TensorView* ceil(TensorView* x) { return unaryOp(UnaryOpType::Ceil, x); }
TensorView* round(TensorView* x) { return unaryOp(UnaryOpType::Round, x); }
TensorView* sign(TensorView* x) { return unaryOp(UnaryOpType::Sign, x); }

TensorView* isNan(TensorView* x) { return unaryOp(UnaryOpType::IsNan, x); }
TensorView* isInf(TensorView* x) { return unaryOp(UnaryOpType::IsInf, x); }
TensorView* logicalNot(TensorView* x) { return unaryOp(UnaryOpType::LogicalNot, x); }

TensorView* gelu(TensorView* x, GeluApproximation approximation) {
  std::array<Operand, 1> ops{x};
  TensorView* xc = cast(x, computeType(ops, PromotionKind::IntToFloat));
  TensorView* half_x = mul(xc, 0.5);
  if (approximation == GeluApproximation::None) {
    // 0.5 * x * (1 + erf(x / sqrt(2)))
    return mul(half_x, add(erf(mul(xc, std::numbers::sqrt2 / 2.0)), 1.0));
  }
  // 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))
  const double k = std::sqrt(2.0 / std::numbers::pi);
  TensorView* cube = mul(xc, mul(xc, xc));
  TensorView* inner = mul(add(xc, mul(cube, 0.044715)), k);
  return mul(half_x, add(tanh(inner), 1.0));
}

TensorView* add(Operand a, Operand b) { return binaryOp(BinaryOpType::Add, a, b); }
TensorView* sub(Operand a, Operand b) { return binaryOp(BinaryOpType::Sub, a, b); }
TensorView* mul(Operand a, Operand b) { return binaryOp(BinaryOpType::Mul, a, b); }
TensorView* div(Operand a, Operand b) {
  return binary(BinaryOpType::Div, a, b, PromotionKind::IntToFloat);
}
TensorView* pow(Operand a, Operand b) { return binaryOp(BinaryOpType::Pow, a, b); }
TensorView* fmod(Operand a, Operand b) { return binaryOp(BinaryOpType::Fmod, a, b); }
TensorView* maximum(Operand a, Operand b) { return binaryOp(BinaryOpType::Max, a, b); }
TensorView* minimum(Operand a, Operand b) { return binaryOp(BinaryOpType::Min, a, b); }
TensorView* eq(Operand a, Operand b) { return binaryOp(BinaryOpType::Eq, a, b); }
TensorView* ne(Operand a, Operand b) { return binaryOp(BinaryOpType::Ne, a, b); }
TensorView* lt(Operand a, Operand b) { return binaryOp(BinaryOpType::Lt, a, b); }
TensorView* le(Operand a, Operand b) { return binaryOp(BinaryOpType::Le, a, b); }
TensorView* gt(Operand a, Operand b) { return binaryOp(BinaryOpType::Gt, a, b); }
TensorView* ge(Operand a, Operand b) { return binaryOp(BinaryOpType::Ge, a, b); }
TensorView* logicalAnd(Operand a, Operand b) { return binaryOp(BinaryOpType::LogicalAnd, a, b); }
TensorView* logicalOr(Operand a, Operand b) { return binaryOp(BinaryOpType::LogicalOr, a, b); }

TensorView* where(Operand cond, Operand a, Operand b) {
  LOOM_CHECK(cond.val()->dtype() == DataType::Bool, "where: condition ", cond.val()->toString(),
             " must be Bool, got ", cond.val()->dtype(), " (Condition should be of DataType Bool)");
  // A selection does no arithmetic, so half stays half (torch and nvFuser agree).
  std::array<Operand, 2> values{a, b};
  DataType ct = selectionType(values);
  return ternary(TernaryOpType::Where, {cond, a, b}, {DataType::Bool, ct, ct}, ct);
}

TensorView* clamp(Operand x, Operand lo, Operand hi) {
  std::array<Operand, 3> ops{x, lo, hi};
  DataType ct = computeType(ops, PromotionKind::Default);
  return ternary(TernaryOpType::Clamp, ops, {ct, ct, ct}, ct);
}

TensorView* lerp(Operand start, Operand end, Operand weight) {
  std::array<Operand, 3> ops{start, end, weight};
  DataType ct = computeType(ops, PromotionKind::IntToFloat);
  return ternary(TernaryOpType::Lerp, ops, {ct, ct, ct}, ct);
}

// nvFuser's further elementwise ops (issue 36).
TensorView* acos(TensorView* x) { return unaryOp(UnaryOpType::Acos, x); }
TensorView* acosh(TensorView* x) { return unaryOp(UnaryOpType::Acosh, x); }
TensorView* asin(TensorView* x) { return unaryOp(UnaryOpType::Asin, x); }
TensorView* asinh(TensorView* x) { return unaryOp(UnaryOpType::Asinh, x); }
TensorView* atan(TensorView* x) { return unaryOp(UnaryOpType::Atan, x); }
TensorView* atanh(TensorView* x) { return unaryOp(UnaryOpType::Atanh, x); }
TensorView* cosh(TensorView* x) { return unaryOp(UnaryOpType::Cosh, x); }
TensorView* sinh(TensorView* x) { return unaryOp(UnaryOpType::Sinh, x); }
TensorView* tan(TensorView* x) { return unaryOp(UnaryOpType::Tan, x); }
TensorView* erfc(TensorView* x) { return unaryOp(UnaryOpType::Erfc, x); }
TensorView* erfinv(TensorView* x) { return unaryOp(UnaryOpType::Erfinv, x); }
TensorView* erfcinv(TensorView* x) { return unaryOp(UnaryOpType::Erfcinv, x); }
TensorView* expm1(TensorView* x) { return unaryOp(UnaryOpType::Expm1, x); }
TensorView* log10(TensorView* x) { return unaryOp(UnaryOpType::Log10, x); }
TensorView* log1p(TensorView* x) { return unaryOp(UnaryOpType::Log1p, x); }
TensorView* lgamma(TensorView* x) { return unaryOp(UnaryOpType::Lgamma, x); }
TensorView* trunc(TensorView* x) { return unaryOp(UnaryOpType::Trunc, x); }
TensorView* frac(TensorView* x) { return unaryOp(UnaryOpType::Frac, x); }
TensorView* signbit(TensorView* x) { return unaryOp(UnaryOpType::Signbit, x); }
TensorView* isFinite(TensorView* x) { return unaryOp(UnaryOpType::IsFinite, x); }
TensorView* isNegInf(TensorView* x) { return unaryOp(UnaryOpType::IsNegInf, x); }
TensorView* isPosInf(TensorView* x) { return unaryOp(UnaryOpType::IsPosInf, x); }
TensorView* isReal(TensorView* x) { return unaryOp(UnaryOpType::IsReal, x); }
TensorView* bitwiseNot(TensorView* x) { return unaryOp(UnaryOpType::BitwiseNot, x); }

TensorView* cDiv(Operand a, Operand b) { return binaryOp(BinaryOpType::Div, a, b); }
TensorView* mod(Operand a, Operand b) { return binaryOp(BinaryOpType::Mod, a, b); }
TensorView* remainder(Operand a, Operand b) { return binaryOp(BinaryOpType::Remainder, a, b); }
TensorView* atan2(Operand a, Operand b) { return binaryOp(BinaryOpType::Atan2, a, b); }
TensorView* nextafter(Operand a, Operand b) { return binaryOp(BinaryOpType::Nextafter, a, b); }
TensorView* gcd(Operand a, Operand b) { return binaryOp(BinaryOpType::Gcd, a, b); }
TensorView* bitwiseAnd(Operand a, Operand b) { return binaryOp(BinaryOpType::BitwiseAnd, a, b); }
TensorView* bitwiseOr(Operand a, Operand b) { return binaryOp(BinaryOpType::BitwiseOr, a, b); }
TensorView* bitwiseXor(Operand a, Operand b) { return binaryOp(BinaryOpType::BitwiseXor, a, b); }
TensorView* bitwiseLeftShift(Operand a, Operand b) { return binaryOp(BinaryOpType::Lshift, a, b); }
TensorView* bitwiseRightShift(Operand a, Operand b) { return binaryOp(BinaryOpType::Rshift, a, b); }
TensorView* logicalRightShift(Operand a, Operand b) {
  return binaryOp(BinaryOpType::LogicalRshift, a, b);
}

TensorView* addcmul(Operand a, Operand b, Operand c, Operand value) {
  LOOM_CHECK(a.isTensor() || b.isTensor() || c.isTensor(),
             "addcmul: at least one of the first three operands must be a tensor");
  // Promote all four together first, so that value * b * c rounds in the result's dtype.
  std::array<Operand, 4> ops{a, b, c, value};
  const DataType ct = computeType(ops, PromotionKind::Default);
  auto as = [&](const Operand& o) -> Operand { return castTo(o.val(), ct); };
  if (!b.isTensor() && !c.isTensor()) {
    Scalar* bcv =
        scalarBinary(BinaryOpType::Mul, scalarBinary(BinaryOpType::Mul, as(b), as(c)), as(value));
    return add(as(a), castTo(bcv, ct));
  }
  return add(as(a), mul(mul(as(b), as(c)), as(value)));
}

TensorView* threshold(TensorView* x, Operand threshold_value, Operand value) {
  // torch: x <= threshold ? value : x, so a NaN x stays NaN.
  TensorView* y = where(le(x, threshold_value), value, x);
  return cast(y, x->dtype());
}

TensorView* triu(TensorView* x, int64_t diagonal) {
  LOOM_CHECK(x->rank() >= 2, "triu: ", x->toString(), " has rank ", x->rank(),
             "; triu takes a tensor of rank 2 or more (input tensor for triu must have 2 or more "
             "dims, but got ",
             x->rank(), " dims)");
  const auto ids = detail::dims(x);
  const int64_t r = x->rank();
  ir::IterDomain* rows_id = ids[size_t(r - 2)];
  ir::IterDomain* cols_id = ids[size_t(r - 1)];
  // Keep element (i, j) where j - i >= diagonal.
  TensorView* rows = iota(Size(rows_id->extent()));
  TensorView* cols = iota(Size(cols_id->extent()));
  TensorView* rows_b = broadcast(rows, {false, true});
  TensorView* cols_b = broadcast(cols, {true, false});
  TensorView* keep = ge(sub(cols_b, rows_b), diagonal);
  return cast(where(keep, x, int64_t(0)), x->dtype());
}

TensorView* tril(TensorView* x, int64_t diagonal) {
  LOOM_CHECK(x->rank() >= 2, "tril: ", x->toString(), " has rank ", x->rank(),
             "; tril takes a tensor of rank 2 or more");
  const auto ids = detail::dims(x);
  const int64_t r = x->rank();
  TensorView* rows = broadcast(iota(Size(ids[size_t(r - 2)]->extent())), {false, true});
  TensorView* cols = broadcast(iota(Size(ids[size_t(r - 1)]->extent())), {true, false});
  // Keep element (i, j) where j - i <= diagonal.
  TensorView* keep = le(sub(cols, rows), diagonal);
  return cast(where(keep, x, int64_t(0)), x->dtype());
}

}  // namespace loom::ops
