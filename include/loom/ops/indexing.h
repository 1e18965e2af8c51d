// SPDX-License-Identifier: Apache-2.0
// Indexing ops under torch's and nvFuser's names: index_select, gather, take_along_axis, scatter,
// scatter_add, index_put_accumulate and embedding. Index tensors are i32 or i64; an index value outside [0, size of
// the indexed dim) is a UserError when the fusion runs (negative values are not wrapped, as in
// torch's index_select and gather), from the reference evaluator and from kernels alike.
//
//   TensorView* rows = ops::indexSelect(table, 0, ids);         // table[ids[k], :]
//   TensorView* picked = ops::gather(logits, 1, targets);       // logits[i, targets[i, j]]
//   TensorView* hist = ops::scatterAdd(zeros, 0, bins, ones);   // zeros[bins[i]] += ones[i]
#pragma once

#include <optional>

#include "loom/ir/tensor_view.h"
#include "loom/ops/operand.h"
#include "loom/ops/size.h"

namespace loom::ops {

using ir::TensorView;

/// torch.index_select: `index` is 1-D (or 0-D); out has input's shape with `dim` replaced by
/// index's length: out[..., k, ...] = input[..., index[k], ...]. `dim` may be negative.
TensorView* indexSelect(TensorView* input, int64_t dim, TensorView* index);

/// torch.select (nvFuser's select): input without dimension `dim`, at position `index` along it
/// (negative counts from the end). A constant index out of [-size, size) is a UserError now; one
/// known at run time is checked when the fusion runs, as index_select's indices are.
TensorView* select(TensorView* input, int64_t dim, Size index);

/// torch.gather: out has index's shape (same rank as input, at most input's size along every dim
/// but `dim`): out[i] = input[i with dim replaced by index[i]].
TensorView* gather(TensorView* input, int64_t dim, TensorView* index);

/// take_along_axis (numpy, nvFuser): gather whose index has input's size along every dim but
/// `dim`, or is broadcast there.
TensorView* takeAlongAxis(TensorView* input, TensorView* index, int64_t dim);

/// torch.scatter: input with src[j] written at j's position with `dim` replaced by index[j], for
/// every position j of index (src at least index's shape; index at most input's size off `dim`).
/// Which write wins where indices repeat is unspecified, as in torch.
TensorView* scatter(TensorView* input, int64_t dim, TensorView* index, TensorView* src);

/// torch.scatter's value form: `value` (a number or Scalar, cast to input's dtype) written at
/// every position index names. A TensorView value is the tensor form above.
TensorView* scatter(TensorView* input, int64_t dim, TensorView* index, Operand value);

/// torch.scatter_add: like scatter, every contribution added to input's value.
TensorView* scatterAdd(TensorView* input, int64_t dim, TensorView* index, TensorView* src);

/// torch.index_put_(acc, (index,), value, accumulate=True) in nvFuser's restricted form
/// (index_put_accumulate): `index` is 1-D [m] (or [m, 1]), `value` is [m, rest...] and `acc`
/// [n, rest...] of the same dtype; out is acc with value[i] added to row index[i], every
/// contribution counted (an embedding's weight gradient, a histogram of token ids).
TensorView* indexPutAccumulate(TensorView* acc, TensorView* index, TensorView* value);

/// The rows of a 2-D `weight` picked by `input` (indices of any rank): out has input's shape
/// followed by weight's second dim (torch.nn.functional.embedding's forward). `padding_idx`,
/// `scale_grad_by_freq` and `sparse` change only the backward and are accepted. With `max_norm`
/// (a number or Scalar), each picked row whose `norm_type`-norm (p = inf: the max, p = 0: the
/// count of nonzeros) exceeds max_norm is scaled by max_norm / (norm + 1e-7), in Float32 (Float64
/// for a Float64 weight), as torch's renormalization does; unlike torch, `weight` itself is not
/// written back.
TensorView* embedding(TensorView* input, TensorView* weight,
                      std::optional<int64_t> padding_idx = std::nullopt,
                      std::optional<Operand> max_norm = std::nullopt, Operand norm_type = 2.0,
                      bool scale_grad_by_freq = false, bool sparse = false);

}  // namespace loom::ops
