// SPDX-License-Identifier: Apache-2.0
// Arithmetic on Scalars alone: values computed from scalar inputs and constants (an epsilon, a
// scale, a size) before a tensor op reads them. The result is a Scalar defined by the op (the
// evaluator, the runtime and the kernels compute it like any derived scalar; the text form prints
// it as `s2 : f64 = mul(s0, 2.0)`).
//
// Result types follow Python's numbers rather than the tensor rules of type_promotion.h: bool <
// integer < floating, the widest operand type within the winning category, C++ numbers counting
// as Int64 and Float64 (so a Float32 Scalar times 2.0 is Float64, as in nvFuser's scalar math).
// Ops that give floats on integers (div, exp, sqrt, ...) give Float64 there; comparisons and
// logical ops give Bool.
#pragma once

#include "loom/ir/op_types.h"
#include "loom/ops/operand.h"
#include "loom/tensor/data_type.h"

namespace loom::ops {

/// `a op b` for two Scalars or numbers (no tensor: a UserError names the op otherwise). Every
/// BinaryOpType but ceil_div (index math). Div is true division; the bitwise ops, shifts and gcd
/// take integers (bitwise and / or / xor also Bool), as their tensor forms do.
Scalar* scalarBinary(ir::BinaryOpType op, Operand a, Operand b);

/// Division as C++'s operator / (nvFuser's div on Scalars): integers truncate toward zero.
Scalar* scalarCDiv(Operand a, Operand b);

/// nvFuser's ceilDiv on Scalars: the quotient rounded up (ops::ceilDiv's rule).
Scalar* scalarCeilDiv(Operand a, Operand b);

/// `op(a)` for a Scalar or number; Cast is scalarCast.
Scalar* scalarUnary(ir::UnaryOpType op, Operand a);

/// `a` converted to `dtype`.
Scalar* scalarCast(Operand a, DataType dtype);

}  // namespace loom::ops
