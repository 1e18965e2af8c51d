// SPDX-License-Identifier: Apache-2.0
// Matrix products with torch's semantics: matmul (1-D, 2-D and batched with broadcasting) and
// linear (x @ w^T + bias). Operands are f32, bf16 or f16, all of one dtype; products accumulate
// in f32 and the output has the operands' dtype. Each runs as a segment of its own (cuBLASLt on
// a GPU, a blocked GEMM on the host backend) between Loom's kernels; docs/ops.md, "Matmul and
// linear".
//
//   TensorView* y = ops::linear(x, w, bias);        // x [b, s, k], w [n, k], bias [n] -> [b, s, n]
//   TensorView* z = ops::matmul(a, b);              // a [2, 1, m, k], b [3, k, n] -> [2, 3, m, n]
#pragma once

#include "loom/ir/tensor_view.h"

namespace loom::ops {

using ir::TensorView;

/// torch.matmul: 1-D x 1-D is a dot product (0-D), a 1-D operand is one row (a) or one column
/// (b) whose dim the result leaves out, and dims before the last two broadcast. UserError naming
/// the operands for a 0-D operand, mismatched dtypes or one outside f32/bf16/f16, contracted
/// sizes that differ and batch sizes that do not broadcast (constants; symbolic sizes are
/// checked when the fusion runs).
TensorView* matmul(TensorView* a, TensorView* b);

/// torch.nn.functional.linear: x [..., k] (rank >= 1), w [n, k] (out [..., n]) or [k] (out
/// [...]), bias [n] or 0-D (or none; 0-D only for a 1-D w). nvFuser's 3-D weight [g, n, k]
/// gives out [g, ..., n], one linear per leading index (bias [g, n]): the linear of the stacked
/// [g * n, k] weight viewed back as [g, n] and moved first. Errors as matmul's, and for a bias
/// that does not fit.
TensorView* linear(TensorView* x, TensorView* w, TensorView* bias = nullptr);

}  // namespace loom::ops
