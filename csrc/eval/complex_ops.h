// SPDX-License-Identifier: Apache-2.0
// The meaning of each op on complex elements, in std::complex<double>: shared by the scalar
// expression evaluator and the reference evaluator, as element_ops.h is for real elements.
//
// Each result is rounded to the output dtype: a complex dtype rounds each part to its part type
// (c64: f32), a real one (abs, real, imag) rounds the real part, Bool (the tests, eq, ne) is 0 or
// 1 in the real part. docs/ops.md, "Complex numbers", lists the ops defined here.
#pragma once

#include <complex>

#include "loom/ir/op_types.h"
#include "loom/ir/scalar.h"
#include "loom/tensor/data_type.h"

namespace loom::ir {
class Expr;
}

namespace loom::eval::detail {

using Complex = std::complex<double>;

/// True when the op reads or writes a complex value: it computes by the functions below.
bool usesComplexMath(DataType in, DataType out);
bool usesComplexMath(DataType lhs, DataType rhs, DataType out);

/// `z` as an element of `dtype` holds it: each part rounded for a complex dtype, the real part
/// rounded (imaginary part 0) for a real one.
Complex roundComplex(Complex z, DataType dtype);

/// One element through a unary op whose operand or result is complex (ir::verify admits neg,
/// conj, exp, log, sqrt, reciprocal, abs, real, imag, the tests and casts); `e` names the expr
/// in errors.
Complex applyComplexUnary(ir::UnaryOpType op, Complex x, DataType out, const ir::Expr* e);
/// add, sub, mul, div, eq, ne on complex operands.
Complex applyComplexBinary(ir::BinaryOpType op, Complex a, Complex b, DataType out);

/// A scalar value as a complex number (a real value has imaginary part 0).
Complex scalarToComplex(const ir::ScalarValue& v);

}  // namespace loom::eval::detail
