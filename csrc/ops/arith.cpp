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

TensorView* neg(TensorView* x) {
  LOOM_CHECK(x->dtype() != DataType::Bool, "neg: ", x->toString(),
             " is Bool; negation is not defined for Bool (use logicalNot)");
  return sameTypeUnary(UnaryOpType::Neg, x);
}
TensorView* abs(TensorView* x) {
  if (isComplexType(x->dtype())) {  // the magnitude, of the part type
    return unary(UnaryOpType::Abs, x, x->dtype(), complexPartType(x->dtype()));
  }
  return sameTypeUnary(UnaryOpType::Abs, x);
}

TensorView* real(TensorView* x) {
  if (!isComplexType(x->dtype())) return x;  // as torch.real: a real tensor is its own real part
  return unary(UnaryOpType::Real, x, x->dtype(), complexPartType(x->dtype()));
}

TensorView* imag(TensorView* x) {
  LOOM_CHECK(isComplexType(x->dtype()), "imag: ", x->toString(), " is ", x->dtype(),
             "; imag is defined for complex tensors only");
  return unary(UnaryOpType::Imag, x, x->dtype(), complexPartType(x->dtype()));
}

TensorView* conj(TensorView* x) {
  if (!isComplexType(x->dtype())) return x;  // as torch.conj
  return unary(UnaryOpType::Conj, x, x->dtype(), x->dtype());
}

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
TensorView* exp(TensorView* x) { return floatingUnary(UnaryOpType::Exp, x); }
TensorView* exp2(TensorView* x) { return floatingUnary(UnaryOpType::Exp2, x); }
TensorView* log(TensorView* x) { return floatingUnary(UnaryOpType::Log, x); }
TensorView* log2(TensorView* x) { return floatingUnary(UnaryOpType::Log2, x); }
TensorView* sqrt(TensorView* x) { return floatingUnary(UnaryOpType::Sqrt, x); }
TensorView* rsqrt(TensorView* x) { return floatingUnary(UnaryOpType::Rsqrt, x); }
TensorView* reciprocal(TensorView* x) { return floatingUnary(UnaryOpType::Reciprocal, x); }
TensorView* sin(TensorView* x) { return floatingUnary(UnaryOpType::Sin, x); }
TensorView* cos(TensorView* x) { return floatingUnary(UnaryOpType::Cos, x); }
TensorView* tanh(TensorView* x) { return floatingUnary(UnaryOpType::Tanh, x); }
TensorView* sigmoid(TensorView* x) { return floatingUnary(UnaryOpType::Sigmoid, x); }
TensorView* relu(TensorView* x) { return sameTypeUnary(UnaryOpType::Relu, x); }
TensorView* silu(TensorView* x) { return floatingUnary(UnaryOpType::Silu, x); }
TensorView* erf(TensorView* x) { return floatingUnary(UnaryOpType::Erf, x); }
TensorView* floor(TensorView* x) { return sameTypeUnary(UnaryOpType::Floor, x); }
TensorView* ceil(TensorView* x) { return sameTypeUnary(UnaryOpType::Ceil, x); }
TensorView* round(TensorView* x) { return sameTypeUnary(UnaryOpType::Round, x); }
TensorView* sign(TensorView* x) { return sameTypeUnary(UnaryOpType::Sign, x); }

TensorView* isNan(TensorView* x) {
  std::array<Operand, 1> ops{x};
  return unary(UnaryOpType::IsNan, x, computeType(ops, PromotionKind::Default), DataType::Bool);
}
TensorView* isInf(TensorView* x) {
  std::array<Operand, 1> ops{x};
  return unary(UnaryOpType::IsInf, x, computeType(ops, PromotionKind::Default), DataType::Bool);
}
TensorView* logicalNot(TensorView* x) {
  return unary(UnaryOpType::LogicalNot, x, DataType::Bool, DataType::Bool);
}

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

TensorView* add(Operand a, Operand b) {
  return binary(BinaryOpType::Add, a, b, PromotionKind::Default);
}
TensorView* sub(Operand a, Operand b) {
  return binary(BinaryOpType::Sub, a, b, PromotionKind::Default);
}
TensorView* mul(Operand a, Operand b) {
  return binary(BinaryOpType::Mul, a, b, PromotionKind::Default);
}
TensorView* div(Operand a, Operand b) {
  return binary(BinaryOpType::Div, a, b, PromotionKind::IntToFloat);
}
TensorView* pow(Operand a, Operand b) {
  return binary(BinaryOpType::Pow, a, b, PromotionKind::Default);
}
TensorView* fmod(Operand a, Operand b) {
  return binary(BinaryOpType::Fmod, a, b, PromotionKind::Default);
}
TensorView* maximum(Operand a, Operand b) {
  return binary(BinaryOpType::Max, a, b, PromotionKind::Default);
}
TensorView* minimum(Operand a, Operand b) {
  return binary(BinaryOpType::Min, a, b, PromotionKind::Default);
}
TensorView* eq(Operand a, Operand b) {
  return binary(BinaryOpType::Eq, a, b, PromotionKind::Comparison);
}
TensorView* ne(Operand a, Operand b) {
  return binary(BinaryOpType::Ne, a, b, PromotionKind::Comparison);
}
TensorView* lt(Operand a, Operand b) {
  return binary(BinaryOpType::Lt, a, b, PromotionKind::Comparison);
}
TensorView* le(Operand a, Operand b) {
  return binary(BinaryOpType::Le, a, b, PromotionKind::Comparison);
}
TensorView* gt(Operand a, Operand b) {
  return binary(BinaryOpType::Gt, a, b, PromotionKind::Comparison);
}
TensorView* ge(Operand a, Operand b) {
  return binary(BinaryOpType::Ge, a, b, PromotionKind::Comparison);
}
TensorView* logicalAnd(Operand a, Operand b) {
  return logicalBinary(BinaryOpType::LogicalAnd, a, b);
}
TensorView* logicalOr(Operand a, Operand b) {
  return logicalBinary(BinaryOpType::LogicalOr, a, b);
}

TensorView* where(Operand cond, Operand a, Operand b) {
  LOOM_CHECK(cond.val()->dtype() == DataType::Bool, "where: condition ", cond.val()->toString(),
             " must be Bool, got ", cond.val()->dtype());
  std::array<Operand, 2> values{a, b};
  DataType ct = computeType(values, PromotionKind::Default);
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

// ---- nvFuser's further elementwise ops (issue 36) ---------------------------------------------

namespace {

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

}  // namespace

TensorView* acos(TensorView* x) { return floatingUnary(UnaryOpType::Acos, x); }
TensorView* acosh(TensorView* x) { return floatingUnary(UnaryOpType::Acosh, x); }
TensorView* asin(TensorView* x) { return floatingUnary(UnaryOpType::Asin, x); }
TensorView* asinh(TensorView* x) { return floatingUnary(UnaryOpType::Asinh, x); }
TensorView* atan(TensorView* x) { return floatingUnary(UnaryOpType::Atan, x); }
TensorView* atanh(TensorView* x) { return floatingUnary(UnaryOpType::Atanh, x); }
TensorView* cosh(TensorView* x) { return floatingUnary(UnaryOpType::Cosh, x); }
TensorView* sinh(TensorView* x) { return floatingUnary(UnaryOpType::Sinh, x); }
TensorView* tan(TensorView* x) { return floatingUnary(UnaryOpType::Tan, x); }
TensorView* erfc(TensorView* x) { return floatingUnary(UnaryOpType::Erfc, x); }
TensorView* erfinv(TensorView* x) { return floatingUnary(UnaryOpType::Erfinv, x); }
TensorView* erfcinv(TensorView* x) { return floatingUnary(UnaryOpType::Erfcinv, x); }
TensorView* expm1(TensorView* x) { return floatingUnary(UnaryOpType::Expm1, x); }
TensorView* log10(TensorView* x) { return floatingUnary(UnaryOpType::Log10, x); }
TensorView* log1p(TensorView* x) { return floatingUnary(UnaryOpType::Log1p, x); }
TensorView* lgamma(TensorView* x) { return floatingUnary(UnaryOpType::Lgamma, x); }
TensorView* trunc(TensorView* x) { return sameTypeUnary(UnaryOpType::Trunc, x); }
TensorView* frac(TensorView* x) {
  LOOM_CHECK(x->dtype() != DataType::Bool, "frac: ", x->toString(), " is Bool; frac takes numbers");
  return sameTypeUnary(UnaryOpType::Frac, x);
}
TensorView* signbit(TensorView* x) { return testUnary(UnaryOpType::Signbit, x); }
TensorView* isFinite(TensorView* x) { return testUnary(UnaryOpType::IsFinite, x); }
TensorView* isNegInf(TensorView* x) { return testUnary(UnaryOpType::IsNegInf, x); }
TensorView* isPosInf(TensorView* x) { return testUnary(UnaryOpType::IsPosInf, x); }
TensorView* isReal(TensorView* x) { return testUnary(UnaryOpType::IsReal, x); }
TensorView* bitwiseNot(TensorView* x) {
  LOOM_CHECK(integralOrBool(x->dtype()), "bitwise_not: ", x->toString(), " is ", x->dtype(),
             "; bitwise_not takes integers or Bool");
  return sameTypeUnary(UnaryOpType::BitwiseNot, x);
}

TensorView* cDiv(Operand a, Operand b) {
  checkNotBool("div", a, b);
  return binary(BinaryOpType::Div, a, b, PromotionKind::Default);
}
TensorView* mod(Operand a, Operand b) {
  checkNotBool("mod", a, b);
  return binary(BinaryOpType::Mod, a, b, PromotionKind::Default);
}
TensorView* ceilDiv(Operand a, Operand b) {
  checkNotBool("ceilDiv", a, b);
  return binary(BinaryOpType::CeilDiv, a, b, PromotionKind::Default);
}
TensorView* remainder(Operand a, Operand b) {
  checkNotBool("remainder", a, b);
  return binary(BinaryOpType::Remainder, a, b, PromotionKind::Default);
}
TensorView* atan2(Operand a, Operand b) {
  return binary(BinaryOpType::Atan2, a, b, PromotionKind::IntToFloat);
}
TensorView* nextafter(Operand a, Operand b) {
  checkedResult(
      "nextafter", a, b,
      [](DataType t) { return t == DataType::Float32 || t == DataType::Float64; },
      "Float32 or Float64 operands");
  return binary(BinaryOpType::Nextafter, a, b, PromotionKind::Default);
}
TensorView* gcd(Operand a, Operand b) {
  checkedResult("gcd", a, b, isIntegralType, "integers");
  return binary(BinaryOpType::Gcd, a, b, PromotionKind::Default);
}
TensorView* bitwiseAnd(Operand a, Operand b) {
  checkedResult("bitwise_and", a, b, integralOrBool, "integers or Bool");
  return binary(BinaryOpType::BitwiseAnd, a, b, PromotionKind::Default);
}
TensorView* bitwiseOr(Operand a, Operand b) {
  checkedResult("bitwise_or", a, b, integralOrBool, "integers or Bool");
  return binary(BinaryOpType::BitwiseOr, a, b, PromotionKind::Default);
}
TensorView* bitwiseXor(Operand a, Operand b) {
  checkedResult("bitwise_xor", a, b, integralOrBool, "integers or Bool");
  return binary(BinaryOpType::BitwiseXor, a, b, PromotionKind::Default);
}
TensorView* bitwiseLeftShift(Operand a, Operand b) {
  checkedResult("bitwise_left_shift", a, b, isIntegralType, "integers");
  return binary(BinaryOpType::Lshift, a, b, PromotionKind::Default);
}
TensorView* bitwiseRightShift(Operand a, Operand b) {
  checkedResult("bitwise_right_shift", a, b, isIntegralType, "integers");
  return binary(BinaryOpType::Rshift, a, b, PromotionKind::Default);
}
TensorView* logicalRightShift(Operand a, Operand b) {
  checkedResult("logical_right_shift", a, b, isIntegralType, "integers");
  return binary(BinaryOpType::LogicalRshift, a, b, PromotionKind::Default);
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
             "; triu takes a tensor of rank 2 or more");
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
