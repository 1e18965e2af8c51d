// SPDX-License-Identifier: Apache-2.0
// Factories: tensors made from scalars, without tensor inputs (full, zeros, ones, iota, arange).
// Shapes and lengths are Sizes: constants (>= 0) or integer Scalars bound at run time, e.g. a
// scalar fusion input. Output IDs are Iteration, or Broadcast for a constant size 1 (as
// TensorBuilder makes them).
#pragma once

#include <optional>

#include "loom/ops/operand.h"
#include "loom/ops/size.h"

namespace loom::ops {

/// A tensor of `shape` filled with `value` (a number or Scalar, cast to `dtype`). FullOp.
TensorView* full(const SizeList& shape, Operand value, DataType dtype);
TensorView* zeros(const SizeList& shape, DataType dtype = DataType::Float32);
TensorView* ones(const SizeList& shape, DataType dtype = DataType::Float32);

/// A 1-D tensor of `length` elements: element i is start + i * step, computed in double and
/// rounded to `dtype` (start and step are cast to `dtype` first). IotaOp.
TensorView* iota(Size length, Operand start = int64_t(0), Operand step = int64_t(1),
                 DataType dtype = DataType::Int64);

/// torch.arange: start, start + step, ... below `end` (above it for a negative step): length
/// ceil((end - start) / step), computed in double. dtype defaults to Int64 when start, end and
/// step are all integers, else Float32; the values are iota's (start and step cast to dtype, as
/// torch does on CUDA). Constant arguments: step 0, or bounds inconsistent with the step's sign,
/// are UserErrors. Scalar arguments: the length is scalar math evaluated at run time (a negative
/// length is reported by the evaluator).
TensorView* arange(Operand start, Operand end, Operand step = int64_t(1),
                   std::optional<DataType> dtype = std::nullopt);

}  // namespace loom::ops
