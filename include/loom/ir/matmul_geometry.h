// SPDX-License-Identifier: Apache-2.0
// The run-time geometry of one matmul or linear (ir::MatmulOp, ir::LinearOp): the output's sizes
// and every operand seen as a batch of matrices, from the operands' sizes and strides. The
// reference evaluator, the host GEMM and the cuBLASLt call all read the problem from here, so
// the three agree on broadcasting, on 1-D operands and on the errors for sizes that do not fit.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "loom/ir/base.h"

namespace loom::ir {

/// One operand as a batch of matrices: element (batch index b, row r, col c) is at
/// sum_i b_i * batch[i] + r * row + c * col (in elements). A repeated dim has stride 0.
struct MatrixStrides {
  std::vector<int64_t> batch;  ///< one per output batch dim
  int64_t row = 0;
  int64_t col = 0;
};

/// out[batch..., m, n] = sum over k of a[batch..., m, k] * b[batch..., k, n] (+ bias[n]), where
/// a 1-D matmul operand (or linear's 1-D input or weight) is a matrix of one row (a) or one
/// column (b) whose dim out leaves out. linear(x, w) is a = x (its leading dims before the last
/// two are the batch), b = w transposed.
struct MatmulGeometry {
  std::vector<int64_t> outSizes;  ///< the output's sizes (contiguous when allocated)
  std::vector<int64_t> batch;     ///< the output's batch sizes
  int64_t m = 1;
  int64_t n = 1;
  int64_t k = 0;
  MatrixStrides a;  ///< m x k
  MatrixStrides b;  ///< k x n
  bool hasBias = false;
  int64_t biasStride = 0;  ///< along n; 0 for a 0-D (or one-element) bias
  /// The product of the batch sizes.
  int64_t batchCount() const;
  /// Strides of a dense output seen as [batch..., m, n] (row-major, m and n always present).
  MatrixStrides denseOut() const;
};

/// The geometry of `e` (a MatmulOp or LinearOp) for operands of these sizes and strides (in
/// elements, one entry per tensor input of `e`, in order). UserError naming the tensors when the
/// contracted sizes differ, batch dims neither match nor broadcast (one of them 1), or a bias
/// does not fit the output's last dim.
MatmulGeometry matmulGeometry(const Expr* e, std::span<const std::vector<int64_t>> sizes,
                              std::span<const std::vector<int64_t>> strides);

}  // namespace loom::ir
