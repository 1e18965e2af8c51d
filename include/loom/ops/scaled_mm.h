// SPDX-License-Identifier: Apache-2.0
// scaled_mm: nvFuser's fd.ops.scaled_mm / torch._scaled_mm with per-tensor scales, the product
// of two 8-bit float matrices each multiplied by its f32 scale (docs/ops.md, "scaled_mm").
//
//   out [m, n] = cast(alpha * ((mat1 * scale1) @ (mat2 * scale2)) + beta * bias, dtype)
//
// mat1 [m, k] and mat2 [k, n] are Float8_e4m3fn or Float8_e5m2 (either with either); scale1,
// scale2, alpha and beta are one-element f32 tensors (0-D or every dim of size 1); bias [n] or
// 0-D of a floating type. Products accumulate in f32 and the result is rounded once to `dtype`.
// Built as a composition: the operands widened to f32 and scaled, one f32 matmul (a segment of
// its own: cuBLASLt on a GPU, the host GEMM on the host backend) and its pointwise epilogue.
#pragma once

#include "loom/ir/tensor_view.h"

namespace loom::ops {

using ir::TensorView;

/// The scaled product above. UserError naming the operand for an operand that is not a 2-D
/// 8-bit float matrix, contracted sizes that differ, a scale (or alpha, beta) that is not one f32
/// element (block-scaled forms such as mxfp8 and nvfp4 are not supported), a bias that is not
/// [n] or 0-D floating, and an output dtype other than f32, bf16, f16 or an 8-bit float.
TensorView* scaledMm(TensorView* mat1, TensorView* mat2, TensorView* scale1, TensorView* scale2,
                     TensorView* alpha = nullptr, TensorView* bias = nullptr,
                     TensorView* beta = nullptr, DataType dtype = DataType::BFloat16);

}  // namespace loom::ops
