// SPDX-License-Identifier: Apache-2.0
// rFactor of a matmul or linear output: the contraction over k split into partial products over
// blocks of k and a sum of the partials (nvFuser's row-parallel matmul schedules it so).
//
//   before: out[m, n, r{k}] = matmul(a[m, k], b[k, n])        out.split(-1, d, inner_split=False)
//           loop [m, n, r{d}, r{k/d}]                          rFactorContraction(out, {-1})
//   after:  local[d, m, n, r{k/d}] = matmul(a', b')            loop [m, n, d, r{k/d}]
//             a' = permute(splitDim(a, -1, d))  [d, m, k/d]   (views of the operands' blocks)
//             b' = permute(splitDim(b, 0, d))   [d, k/d, n]
//           out[m, n, r{d}] = sum(permute(local, [1, 2, 0]), {-1})
//
// The rfactored piece of r{k} is contracted by the new matmul; the other piece becomes the
// partial product's leading dim (a batch dim of both operand views), summed into `out`. A DID on
// the kept piece moves to the partial's dim: each device computes the partial product of its
// block, and the sum across devices is the communication (an Allreduce, a ReduceScatter when out
// is sharded along another dim). bf16 and f16 partials keep the operands' dtype (as the original
// product did) and are summed in f32, rounded once after a linear's bias. `out` keeps its
// identity: the same tensor, now the sum (or the cast of it).
#pragma once

#include <cstdint>
#include <vector>

#include "loom/ir/tensor_view.h"

namespace loom::ops {

using ir::TensorView;

/// rFactor of `out`, the output of a matmul or linear (both operands of rank 2 or more, linear's
/// weight 2-D) whose loop domain is its logical one with r{k} split once (the other dims
/// untouched), over `axes`: one of the two pieces of r{k}. Returns the partial product, whose
/// loop is ordered as nvFuser's [batch.., m, n, kept piece, r{rfactored piece}]. UserError naming
/// `out` for any other form.
TensorView* rFactorContraction(TensorView* out, const std::vector<int64_t>& axes);

/// True when `tv` is the output of a MatmulOp or LinearOp (rFactor of it is rFactorContraction).
bool isContractionOutput(const TensorView* tv);

}  // namespace loom::ops
