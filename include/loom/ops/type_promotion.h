// SPDX-License-Identifier: Apache-2.0
// PyTorch's type promotion, with one Loom rule on top: Float16 and BFloat16 results are computed
// (and returned) in Float32 by the primitive ops; composites cast back (see docs/ops.md).
//
// Categories: bool < integer < floating < complex. Tensors of higher category win over lower ones;
// numbers (C++ numbers and Scalar nodes) take part only when their category is higher than every
// tensor's, in which case they contribute the default type of their category (Int64, Float32,
// ComplexFloat; a complex number with f64 tensors gives ComplexDouble). A complex type meets a
// floating one in the complex type of the wider part (c64 with f64: c128).
#pragma once

#include <span>

#include "loom/ops/operand.h"

namespace loom::ops {

enum class PromotionKind : uint8_t {
  Default,     ///< result_type of the operands
  IntToFloat,  ///< like Default, then integers and bools become Float32 (exp, sqrt, div, ...)
  Comparison,  ///< operands promoted as Default; result is Bool
};

/// The result_type of the operands as PyTorch computes it (no half -> float widening): tensors
/// with dims decide, then 0-dim tensors, then numbers (Scalars), a lower tier counting only when
/// its category (bool < integer < floating < complex) is above the higher tiers'.
DataType resultType(std::span<const Operand> operands);

/// torch.promote_types for two dtypes (no wrapped numbers, no half -> float widening).
DataType promoteTypes(DataType a, DataType b);

/// The type of an op that selects among its operands and does no arithmetic (where): resultType,
/// except that numbers alone keep their own promoted dtypes (nvFuser's rule: two f64 Scalars
/// give f64, not the wrapped-number default f32). Half and bfloat16 are not widened.
DataType selectionType(std::span<const Operand> operands);

/// The type the op computes in: resultType, IntToFloat applied, half/bfloat16 widened to Float32.
DataType computeType(std::span<const Operand> operands, PromotionKind kind);

}  // namespace loom::ops
