// SPDX-License-Identifier: Apache-2.0
// Ops that change dimensions: broadcast, squeeze, expand, permute, reshape, set, slice, pad, cat.
#pragma once

#include <initializer_list>
#include <vector>

#include "loom/ops/operand.h"
#include "loom/ops/size.h"

namespace loom::ops {

/// Inserts new Broadcast dimensions: the output has is_broadcast_dim.size() dimensions and the
/// false entries take x's dimensions in order.
TensorView* broadcast(TensorView* x, const std::vector<bool>& is_broadcast_dim);
/// Broadcasts x to `output_shape`: x's dimension i becomes output dimension broadcast_dims[i]
/// (increasing); x's size-1 dims may stretch; other output dims are new broadcasts, expanded to
/// the output size. A dim of x that is not a broadcast keeps its extent: a size given for it
/// that is not known now is required of it when a run binds it (-1 keeps it as it is).
TensorView* broadcastInDim(TensorView* x, const std::vector<int64_t>& output_shape,
                           const std::vector<int64_t>& broadcast_dims);
/// broadcastInDim with sizes that may be Scalars (nvFuser's shape=[2, 2, s]).
TensorView* broadcastInDim(TensorView* x, const SizeList& output_shape,
                           const std::vector<int64_t>& broadcast_dims);
TensorView* broadcastInDim(TensorView* x, std::initializer_list<Size> output_shape,
                           const std::vector<int64_t>& broadcast_dims);
/// Removes the given dimensions, which must be size 1 (Broadcast). With `squeeze_expanded`, a
/// Broadcast expanded to a larger size is removed too: it holds one value, which the output keeps
/// (nvFuser's squeeze_expanded); without it, squeezing one is an error, as in nvFuser.
TensorView* squeeze(TensorView* x, const std::vector<int64_t>& dims, bool squeeze_expanded = false);
/// Inserts one size-1 dimension at `dim` (negative counts from the end of the output).
TensorView* unsqueeze(TensorView* x, int64_t dim);
/// Expands size-1 dimensions to `sizes` (-1 keeps a dimension). No data is copied.
TensorView* expand(TensorView* x, const std::vector<int64_t>& sizes);
/// expand with sizes that may be Scalars (a constant -1 keeps a dimension). A Broadcast dim gets
/// the expanded extent; a Symbolic dim (from a dynamic reshape) becomes a Symbolic dim of the
/// given size, which is a broadcast expanded to it when the dim is 1 at run time. All-constant
/// sizes take the overload above.
TensorView* expand(TensorView* x, const SizeList& sizes);
TensorView* expand(TensorView* x, std::initializer_list<Size> sizes);
/// Output dimension i is x's dimension dims[i].
TensorView* permute(TensorView* x, const std::vector<int64_t>& dims);
TensorView* transpose(TensorView* x, int64_t dim0, int64_t dim1);
/// Row-major reshape to constant sizes (one -1 may be inferred). With constant input extents it
/// is built as splits and merges from the output's root to its logical domain; with symbolic
/// ones it is the dynamic reshape of the SizeList overload below.
TensorView* reshape(TensorView* x, const std::vector<int64_t>& new_sizes);
/// Row-major reshape whose sizes may be Scalars and whose input may have symbolic extents; one
/// constant -1 is inferred (numel / product of the other sizes). With constant input extents and
/// constant sizes it is the static reshape above; otherwise it builds a dynamic ReshapeOp (see
/// exprs.h) that segmenter::concretizeFusion turns into a static one for given inputs.
TensorView* reshape(TensorView* x, const SizeList& new_sizes);
TensorView* reshape(TensorView* x, std::initializer_list<Size> new_sizes);
/// x with dim `dim` viewed as [outer, extent / outer]: a split from the result's root to its
/// logical domain whose outer extent is the constant `outer` and whose factor is the block
/// extent / outer, a static reshape even when the extent is symbolic (then `outer` must divide
/// it at run time).
TensorView* splitDim(TensorView* x, int64_t dim, int64_t outer);
/// A copy.
TensorView* set(TensorView* x);
/// nvFuser's segment_set: a copy at which the segmenter cuts, so that x's producers and the
/// copy's consumers run in different kernels (x goes through global memory).
TensorView* segmentSet(TensorView* x);
/// nvFuser's stride_order: a copy whose allocation domain orders the dims by `stride_order`, one
/// entry per dim giving its place counted from the innermost (0; negative entries wrap): [0, 1]
/// of a 2-D tensor makes it column-major. Allocated densely in that order (all contiguous); an
/// empty stride_order is a plain copy.
TensorView* strideOrder(TensorView* x, const std::vector<int64_t>& stride_order);

/// One group of a row-major reshape between two shapes without size-1 dims: input dims
/// [in_begin, in_end) merge into one ID that splits into output dims [out_begin, out_end).
struct ReshapeGroup {
  int64_t in_begin = 0, in_end = 0, out_begin = 0, out_end = 0;
  bool operator==(const ReshapeGroup&) const = default;
};
/// The smallest groups with equal products, left to right ([2,3,4] -> [6,4] gives {0,2 -> 0,1}
/// and {2,3 -> 1,2}). Sizes must be > 1 with equal products.
std::vector<ReshapeGroup> reshapeGroups(const std::vector<int64_t>& in,
                                        const std::vector<int64_t>& out);
/// One static ReshapeOp of x (whose dims are the groups' input dims): each group merges its root
/// IDs and splits off its output dims from the inside with inner splits by `out_sizes[k]` (index
/// Scalars, one per output dim; constants for the static reshape, the requested size Scalars
/// when concretizing a dynamic one).
TensorView* reshapeByGroups(TensorView* x, const std::vector<ReshapeGroup>& groups,
                            const std::vector<Scalar*>& out_sizes);

/// x[start_0:stop_0, start_1:stop_1, ...] with one start and one stop per dimension, as Python
/// slicing normalizes them: a negative bound adds the extent, then bounds clamp to
/// [0, extent], and stop < start gives an empty dimension. Constant bounds are normalized now;
/// Scalar bounds by scalar math (where/max/min) at run time. `steps` (empty: all 1) must be 1.
/// A slice that keeps every dimension whole is `set(x)`.
TensorView* slice(TensorView* x, const SizeList& starts, const SizeList& stops,
                  const std::vector<int64_t>& steps = {});
/// Slices one dimension: x[..., start:stop, ...] at `dim` (negative counts from the end).
TensorView* slice(TensorView* x, int64_t dim, Size start, Size stop, int64_t step = 1);

/// torch.nn.functional.pad (constant mode): `widths` holds (left, right) pairs starting from the
/// LAST dimension: {left_last, right_last, left_prev, right_prev, ...}; fewer pairs than dims
/// leave the leading dims alone; negative widths crop. New elements are `value` (a number or
/// Scalar, cast to x's dtype). Widths that are all 0 give `set(x)`.
TensorView* pad(TensorView* x, const SizeList& widths, Operand value = int64_t(0));

/// torch.cat: inputs of one rank with equal sizes except at `dim` (negative wraps), promoted to
/// their common dtype (resultType, no half widening) by casts. Built as one PadOp per input (to
/// the full extent along dim, with value 0) and one CatOp; a single input gives a copy.
TensorView* cat(const std::vector<TensorView*>& xs, int64_t dim);

}  // namespace loom::ops
