// SPDX-License-Identifier: Apache-2.0
// Pointwise ops. Each takes Operands (tensors or numbers; at least one must be a tensor, else a
// UserError), broadcasts like PyTorch (size-1 / Broadcast dimensions stretch, ranks align from the
// right), promotes types (type_promotion.h), casts operands to the compute type, and returns a new
// TensorView. Comparisons and logical ops return Bool.
#pragma once

#include "loom/ops/operand.h"
#include "loom/ops/type_promotion.h"

namespace loom::ops {

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

/// Converts to `dtype` (round to nearest even for floats; truncation toward zero for integers).
/// A cast to the type x already has returns x itself.
TensorView* cast(TensorView* x, DataType dtype);

}  // namespace loom::ops
