// SPDX-License-Identifier: Apache-2.0
// Pointwise ops. Each takes Operands (tensors or numbers; at least one must be a tensor, else a
// UserError), broadcasts like PyTorch (size-1 / Broadcast dimensions stretch, ranks align from the
// right), promotes types (type_promotion.h), casts operands to the compute type, and returns a new
// TensorView. Comparisons and logical ops return Bool.
#pragma once

#include "loom/ir/op_types.h"
#include "loom/ops/operand.h"
#include "loom/ops/type_promotion.h"

namespace loom::ops {

// Every elementwise op by its type, under its kind's dtype rule (ir/op_types.h) and the few
// op-specific checks (neg and frac refuse Bool, abs of a complex value gives its part type, ...):
// the named functions below are these for one type each. The Python bindings loop over the op
// lists through them, and ops without a named function (erfcx, digamma) are reached here only.
/// Cast needs a dtype: a UserError here (cast() below).
TensorView* unaryOp(ir::UnaryOpType t, TensorView* x);
/// Div is the IR's division, C++'s operator / (cDiv below; div() is true division); ceil_div,
/// index math, is a UserError.
TensorView* binaryOp(ir::BinaryOpType t, Operand a, Operand b);

// Unary. Integer inputs of floating functions (exp, log, sqrt, sin, ...) compute in Float32;
// neg, abs, sign, relu, floor, ceil, round keep integer types.
TensorView* neg(TensorView* x);
TensorView* abs(TensorView* x);
TensorView* exp(TensorView* x);
TensorView* exp2(TensorView* x);
TensorView* log(TensorView* x);
TensorView* log2(TensorView* x);
TensorView* sqrt(TensorView* x);
TensorView* rsqrt(TensorView* x);
TensorView* reciprocal(TensorView* x);
TensorView* sin(TensorView* x);
TensorView* cos(TensorView* x);
TensorView* tanh(TensorView* x);
TensorView* sigmoid(TensorView* x);
TensorView* relu(TensorView* x);
TensorView* silu(TensorView* x);
TensorView* erf(TensorView* x);
TensorView* floor(TensorView* x);
TensorView* ceil(TensorView* x);
/// Rounds half to even.
TensorView* round(TensorView* x);
TensorView* sign(TensorView* x);
TensorView* isNan(TensorView* x);
TensorView* isInf(TensorView* x);
TensorView* logicalNot(TensorView* x);

enum class GeluApproximation : uint8_t { None, Tanh };
/// x * Phi(x) with the erf form, or the tanh approximation; built from primitive ops.
TensorView* gelu(TensorView* x, GeluApproximation approximation = GeluApproximation::None);

// Binary.
TensorView* add(Operand a, Operand b);
TensorView* sub(Operand a, Operand b);
TensorView* mul(Operand a, Operand b);
/// True division: integers are promoted to Float32.
TensorView* div(Operand a, Operand b);
TensorView* pow(Operand a, Operand b);
TensorView* fmod(Operand a, Operand b);
/// NaN-propagating, as torch.maximum / torch.minimum.
TensorView* maximum(Operand a, Operand b);
TensorView* minimum(Operand a, Operand b);
TensorView* eq(Operand a, Operand b);
TensorView* ne(Operand a, Operand b);
TensorView* lt(Operand a, Operand b);
TensorView* le(Operand a, Operand b);
TensorView* gt(Operand a, Operand b);
TensorView* ge(Operand a, Operand b);
TensorView* logicalAnd(Operand a, Operand b);
TensorView* logicalOr(Operand a, Operand b);

// Ternary.
/// cond must be Bool (a UserError otherwise); a and b are promoted together.
TensorView* where(Operand cond, Operand a, Operand b);
TensorView* clamp(Operand x, Operand lo, Operand hi);
/// start + weight * (end - start).
TensorView* lerp(Operand start, Operand end, Operand weight);

// ---- nvFuser's further elementwise ops (issue 36; docs/ops.md gives each one's edge values) ----
// Floating functions: integers and Bool compute in Float32, as exp does.
TensorView* acos(TensorView* x);
TensorView* acosh(TensorView* x);
TensorView* asin(TensorView* x);
TensorView* asinh(TensorView* x);
TensorView* atan(TensorView* x);
TensorView* atanh(TensorView* x);
TensorView* cosh(TensorView* x);
TensorView* sinh(TensorView* x);
TensorView* tan(TensorView* x);
TensorView* erfc(TensorView* x);
TensorView* erfinv(TensorView* x);
TensorView* erfcinv(TensorView* x);
TensorView* expm1(TensorView* x);
TensorView* log10(TensorView* x);
TensorView* log1p(TensorView* x);
TensorView* lgamma(TensorView* x);
/// Keep the dtype: integers truncate to themselves and have no fraction.
TensorView* trunc(TensorView* x);
TensorView* frac(TensorView* x);
/// Bool results on any input dtype.
TensorView* signbit(TensorView* x);
TensorView* isFinite(TensorView* x);
TensorView* isNegInf(TensorView* x);
TensorView* isPosInf(TensorView* x);
TensorView* isReal(TensorView* x);
/// Integers and Bool only (a UserError otherwise); ~x, or logical not for Bool.
TensorView* bitwiseNot(TensorView* x);

/// Division as C++'s operator / (nvFuser's div): integer operands truncate toward zero (by zero:
/// 0), floating operands divide truly. div() above is true division (nvFuser's truediv).
TensorView* cDiv(Operand a, Operand b);
/// nvFuser's mod: the remainder with the sign of the dividend (as fmod).
TensorView* mod(Operand a, Operand b);
/// nvFuser's ceilDiv: the quotient rounded up (toward +inf) for integers, defined for every
/// operand as div is (by zero: 0); ceil(a / b) for floating operands.
TensorView* ceilDiv(Operand a, Operand b);
/// torch.remainder: the sign of the divisor.
TensorView* remainder(Operand a, Operand b);
TensorView* atan2(Operand a, Operand b);
/// Float32 and Float64 only (the next value of the dtype itself).
TensorView* nextafter(Operand a, Operand b);
/// Integers only; non-negative except for the most negative value (as torch.gcd).
TensorView* gcd(Operand a, Operand b);
/// Integers and Bool.
TensorView* bitwiseAnd(Operand a, Operand b);
TensorView* bitwiseOr(Operand a, Operand b);
TensorView* bitwiseXor(Operand a, Operand b);
/// Integers only; counts outside [0, width) shift every bit out (docs/ops.md).
TensorView* bitwiseLeftShift(Operand a, Operand b);
TensorView* bitwiseRightShift(Operand a, Operand b);
TensorView* logicalRightShift(Operand a, Operand b);
/// a + value * b * c (torch.addcmul).
TensorView* addcmul(Operand a, Operand b, Operand c, Operand value);
/// x where x > threshold, else value (torch's threshold; NaN stays NaN); x's dtype.
TensorView* threshold(TensorView* x, Operand threshold, Operand value);
/// The elements on and above the `diagonal`-th diagonal of the last two dims, others 0.
TensorView* triu(TensorView* x, int64_t diagonal = 0);
/// The elements on and below the `diagonal`-th diagonal of the last two dims, others 0.
TensorView* tril(TensorView* x, int64_t diagonal = 0);

// ---- Complex numbers (issue 36; docs/ops.md, "Complex numbers") -------------------------------
/// The real part (f32 of c64, f64 of c128); a real tensor is its own real part.
TensorView* real(TensorView* x);
/// The imaginary part; a UserError for a real tensor.
TensorView* imag(TensorView* x);
/// The complex conjugate; a real tensor is its own conjugate.
TensorView* conj(TensorView* x);
/// real + imag * i (torch.complex): f32 parts give c64, f64 parts c128.
TensorView* complex(Operand real, Operand imag);

/// Converts to `dtype` (round to nearest even for floats; truncation toward zero for integers;
/// a real value becomes a complex one with imaginary part 0; complex to real is a UserError).
/// A cast to the type x already has returns x itself.
TensorView* cast(TensorView* x, DataType dtype);

}  // namespace loom::ops
