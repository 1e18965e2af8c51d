// SPDX-License-Identifier: Apache-2.0
// grouped_mm: torch._grouped_mm / nvFuser's fd.ops.grouped_mm, matrix products of groups of rows,
// columns or contracted elements given by offsets (each group's end), as a composition of
// matmul, iota, comparisons, where and a sum (docs/ops.md, "grouped_mm").
//
//   mat1 [m, k]    x mat2 [g, k, n], offsets [g] along m -> [m, n]  (rows of group i times mat2[i])
//   mat1 [g, m, k] x mat2 [k, n],    offsets [g] along n -> [m, n]  (columns of group i: mat1[i])
//   mat1 [m, k]    x mat2 [k, n],    offsets [g] along k -> [g, m, n]  (group i's part of k)
//   mat1 [g, m, k] x mat2 [g, k, n], no offsets          -> [g, m, n]  (a batched product)
#pragma once

#include "loom/ir/tensor_view.h"

namespace loom::ops {

using ir::TensorView;

/// torch._grouped_mm(mat1, mat2, offs). Operands f32, bf16 or f16 of one dtype, products
/// accumulated in f32, the output in the operands' dtype (as matmul). offsets: 1-D Int32 or Int64,
/// non-decreasing group ends (the last at most the grouped extent), read when the fusion runs.
/// Rows (columns) past the last offset are 0 (torch leaves them unwritten); an empty group gives
/// zeros. The one-group-per-row (column) forms compute every group's product and keep each row's
/// own: g times the GEMM work of the grouped product. UserError naming the operand for ranks
/// other than 2 and 3, offsets missing (2-D operand) or given (3-D x 3-D), offsets not 1-D
/// integers, and the errors of matmul.
TensorView* groupedMm(TensorView* mat1, TensorView* mat2, TensorView* offsets);

}  // namespace loom::ops
