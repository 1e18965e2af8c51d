// SPDX-License-Identifier: Apache-2.0
// Inlining: how many outer loops a producer shares with its consumers (its compute-at position).
//
// A tensor can be inlined at position p when, for every loop axis k < p:
//  * its loop ID k is not a Reduction (a reduction's result is not ready inside its own loop),
//    not Vectorize, and not Unroll unless allowed;
//  * for every consumer, its loop IDs 0..k map in order (permissive ID graph: a broadcast maps to
//    the ID the consumer resolves it to) onto a prefix of the consumer's loop, where the consumer
//    may interleave only broadcast loop IDs it has of its own; the consumer IDs matched are not
//    Vectorize. So a producer reordered differently from its consumer inlines only up to the
//    common prefix that maps;
//  * it does not cross a reduction R: the tensor feeds R, the ID maps to one of R's reduction
//    IDs, and a tensor after R is also reached from it by a path around R (through a consumer
//    that does not feed R, that consumer included). Its loop there would have to run both
//    before R and after it, so the tensor stays whole from that axis on: softmax's input stops at
//    the reduced axis, and so does x in `x -> cast -> sum` with `x -> cast' -> sub(cast', mean)`,
//    so that x, not cast', holds the row across the reduction, whatever order inlineMost visits
//    them in. A consumer that feeds R itself (softmax's exp, read by sum and by div) meets the
//    rule as a tensor of its own.
// Fusion inputs are never inlined. Setting a compute-at position p sets each consumer's
// maxProducerPosition to the largest consumer position aligned with a producer's compute-at
// position (the position just after the consumer loop ID matched by the producer's axis p-1).
#pragma once

#include <cstdint>
#include <vector>

#include "loom/ir/fusion.h"
#include "loom/ir/tensor_view.h"
#include "loom/transform/id_graph.h"

namespace loom::transform {

using ir::TensorView;

struct InlineOptions {
  /// Unrolled loop IDs may be shared (true) or stop inlining (false).
  bool allow_unroll = true;
};

/// The largest legal compute-at position of tv (0 for fusion inputs and tensors without uses).
int64_t maxInlinePosition(const TensorView* tv, InlineOptions options = {});
/// Same, with a permissive IdGraph of tv's fusion built by the caller. Compute-at positions do
/// not change the graph, so one graph serves any number of inlining calls until the next
/// transform (split, merge, reorder, cacheAfter, ...) of the fusion.
int64_t maxInlinePosition(const TensorView* tv, const IdGraph& permissive,
                          InlineOptions options = {});

/// Sets tv's compute-at position to `pos` (-1: all loop IDs). With best_effort the position is
/// clamped to the legal maximum (a trailing broadcast resolved by the consumers is shared too);
/// otherwise an illegal position is a UserError naming the rule and axis.
void inlineAt(TensorView* tv, int64_t pos, bool best_effort = false, InlineOptions options = {});
/// Same, with a caller-built permissive IdGraph of tv's fusion (see maxInlinePosition).
void inlineAt(TensorView* tv, int64_t pos, const IdGraph& permissive, bool best_effort = false,
              InlineOptions options = {});

/// inlineAt(tv, -1, best_effort = true) for every tensor of the fusion except inputs.
void inlineMost(ir::Fusion& fusion, InlineOptions options = {});
/// inlineMost restricted to `tvs`.
void inlineMost(const std::vector<TensorView*>& tvs, InlineOptions options = {});
/// Same, with a caller-built permissive IdGraph of the tensors' fusion (see maxInlinePosition).
void inlineMost(const std::vector<TensorView*>& tvs, const IdGraph& permissive,
                InlineOptions options = {});

/// Legacy computeAt: replays `consumer`'s loop[0, pos) onto `producer` and every tensor between
/// them (producer must be upstream of consumer), then inlines each at the matching position.
void computeAt(TensorView* producer, TensorView* consumer, int64_t pos,
               InlineOptions options = {});

}  // namespace loom::transform
