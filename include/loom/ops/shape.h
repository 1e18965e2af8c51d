// SPDX-License-Identifier: Apache-2.0
// Ops that change dimensions: broadcast, squeeze, expand, permute, reshape, set.
#pragma once

#include <vector>

#include "loom/ops/operand.h"

namespace loom::ops {

/// Inserts new Broadcast dimensions: the output has is_broadcast_dim.size() dimensions and the
/// false entries take x's dimensions in order.
TensorView* broadcast(TensorView* x, const std::vector<bool>& is_broadcast_dim);
/// Broadcasts x to `output_shape`: x's dimension i becomes output dimension broadcast_dims[i]
/// (increasing); x's size-1 dims may stretch; other output dims are new broadcasts, expanded to
/// the output size.
TensorView* broadcastInDim(TensorView* x, const std::vector<int64_t>& output_shape,
                           const std::vector<int64_t>& broadcast_dims);
/// Removes the given dimensions, which must be size 1 (Broadcast).
TensorView* squeeze(TensorView* x, const std::vector<int64_t>& dims);
/// Inserts one size-1 dimension at `dim` (negative counts from the end of the output).
TensorView* unsqueeze(TensorView* x, int64_t dim);
/// Expands size-1 dimensions to `sizes` (-1 keeps a dimension). No data is copied.
TensorView* expand(TensorView* x, const std::vector<int64_t>& sizes);
/// Output dimension i is x's dimension dims[i].
TensorView* permute(TensorView* x, const std::vector<int64_t>& dims);
TensorView* transpose(TensorView* x, int64_t dim0, int64_t dim1);
/// Row-major reshape to static sizes (one -1 may be inferred). The input's extents must be
/// constants. Built as splits and merges from the output's root to its logical domain.
TensorView* reshape(TensorView* x, const std::vector<int64_t>& new_sizes);
/// A copy.
TensorView* set(TensorView* x);

}  // namespace loom::ops
