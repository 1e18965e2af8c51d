// SPDX-License-Identifier: Apache-2.0
// The meaning of each pointwise op on one element: shared by the scalar expression evaluator and
// the reference evaluator, so scalars and tensors can never disagree.
//
// Floating math is done in double and the result rounded to the output dtype. Integer math (an
// integral output, or a comparison of two integral operands) is done exactly in int64 and wraps to
// the output width, as kernel arithmetic does; so does a cast between integer types. A cast from a
// float to an integer truncates toward zero and saturates (NaN gives 0), as CUDA's conversion
// instructions do (docs/text-format.md, "Types"). Integer division and modulo are total
// (docs/ops.md).
#pragma once

#include <cstdint>

#include "loom/ir/op_types.h"
#include "loom/ir/scalar.h"
#include "loom/tensor/data_type.h"

namespace loom::ir {
class Expr;
}

namespace loom::eval::detail {

/// What an element of `dtype` holds for `v`: floats round to nearest even, integers truncate and
/// saturate (NaN -> 0), bool is `v != 0`. The same conversion as loom::storeFromDouble.
double roundToDtype(double v, DataType dtype);

/// Truncates toward zero and saturates to int64 (NaN -> 0).
int64_t toInt64(double v);

/// Two's-complement wrap of an int64 result to the width of an integral dtype (bool: v != 0).
int64_t wrapToDtype(int64_t v, DataType dtype);

/// A scalar value as an element of integral `dtype` holds it: an integer wrapped to the width
/// exactly, a double truncated and saturated first, bool 0 or 1.
int64_t normalizeScalarInt(const ir::ScalarValue& v, DataType dtype);

/// Rounds half to even (as torch.round and rint under the default rounding mode).
double roundHalfEven(double x);

/// True when the op must use exact integer semantics for these operand / output types.
bool usesIntegerMath(ir::BinaryOpType op, DataType lhs, DataType rhs, DataType out);
bool usesIntegerMath(ir::UnaryOpType op, DataType in, DataType out);

/// Integer math. `e` names the expr in errors. Division, remainder and ceil_div are defined for
/// every operand as the kernels define them (docs/ops.md: by zero 0; the most negative value by
/// -1 itself, remainder 0).
/// Integers are in the int64 form of data_type.h (UInt64: its bits); `dtype` is the integer
/// type the op computes in: the shifts need its width, UInt64 its unsigned order and division.
int64_t intUnary(ir::UnaryOpType op, int64_t x, DataType dtype, const ir::Expr* e);
int64_t intBinary(ir::BinaryOpType op, int64_t a, int64_t b, DataType dtype = DataType::Int64);
/// The type intBinary computes `op` in: the output's, but for a comparison (whose output is
/// Bool) its operands' (UInt64 when either is).
DataType integerMathType(ir::BinaryOpType op, DataType lhs, DataType rhs, DataType out);

/// The inverse error functions in double (erfinv on [-1, 1], erfcinv on [0, 2]; NaN outside).
double erfinvDouble(double y);
double erfcinvDouble(double y);
/// exp(x^2) * erfc(x) in double, without the overflow and underflow of its two factors.
double erfcxDouble(double x);
/// The digamma function psi(x) = d/dx lgamma(x) in double, with torch's values at the poles: NaN
/// at the negative integers and -inf, -inf at +0, +inf at -0.
double digammaDouble(double x);

/// Floating math in double, not yet rounded to the output dtype. Cast is the identity here.
double floatUnary(ir::UnaryOpType op, double x);
double floatBinary(ir::BinaryOpType op, double a, double b);
double floatTernary(ir::TernaryOpType op, double a, double b, double c);

/// One element through an op, with rounding to `out`: the entry points the evaluators use.
double applyUnary(ir::UnaryOpType op, double x, DataType in, DataType out, const ir::Expr* e);
double applyBinary(ir::BinaryOpType op, double a, double b, DataType lhs, DataType rhs,
                   DataType out);
double applyTernary(ir::TernaryOpType op, double a, double b, double c, DataType out);

/// ScalarValue helpers: a value converted to double / int64, and a double stored as `dtype`
/// (bool, int64 or double rounded to the dtype).
double scalarToDouble(const ir::ScalarValue& v);
int64_t scalarToInt(const ir::ScalarValue& v);
ir::ScalarValue scalarFromDouble(double v, DataType dtype);
/// A value converted to the representation of `dtype` (with rounding to the dtype).
ir::ScalarValue normalizeScalar(const ir::ScalarValue& v, DataType dtype);

}  // namespace loom::eval::detail
