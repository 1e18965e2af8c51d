// SPDX-License-Identifier: Apache-2.0
// The ops defined on complex values: the verifier's dtype rule and the ops layer's checks read
// the same lists (docs/ops.md, "Complex numbers").
#pragma once

#include "loom/ir/op_types.h"

namespace loom::ir {

/// Unary ops that take a complex operand. neg, conj, exp, log, log2, log10, sqrt, reciprocal,
/// rsqrt, sigmoid and the circular and hyperbolic functions and their inverses keep the complex
/// type; abs, real and imag give its part type (c64 -> f32); isnan, isinf, isfinite and
/// isreal give Bool; cast converts between the complex types (a real value converts to a complex
/// one with imaginary part 0, a complex one to a real type never).
bool isComplexOp(UnaryOpType t);
/// abs, real, imag: a complex operand gives a value of its part type.
bool isComplexToRealOp(UnaryOpType t);
/// add, sub, mul, div (complex result) and eq, ne (Bool).
bool isComplexOp(BinaryOpType t);
/// where selects complex values; clamp and lerp have no complex meaning.
bool isComplexOp(TernaryOpType t);
/// sum and prod; max and min have no complex meaning (complex numbers have no order).
bool isComplexOp(ReductionOpType t);

}  // namespace loom::ir
