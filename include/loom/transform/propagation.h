// SPDX-License-Identifier: Apache-2.0
// Schedule propagation: schedule one reference tensor, then copy its schedule to every tensor
// along a maximum-information spanning tree of the tensor graph.
//
// Information is the set of the reference's logical IDs a tensor still carries: a reduction keeps
// it (as a Reduction ID), a broadcast of something else or a reshape that transforms an ID loses
// it. Prim's algorithm from the reference picks, at each step, the edge (producer -> consumer,
// consumer -> producer or sibling) that carries the most; siblings win ties, then the edge on
// which more broadcasts stand in for reference IDs (replaying from the consumer that resolves a
// broadcast gives it the resolved ID's splits, so the broadcast tensor can inline fully).
//
// Only transforms (and DID types, per ReplayOptions) are propagated by default; kernel parallel
// types follow with parallelizeAllLike(reference), the documented next step (or pass
// ReplayOptions{.parallel = ParallelCopy::All} to copy them during the replay).
#pragma once

#include <cstdint>
#include <vector>

#include "loom/ir/tensor_view.h"
#include "loom/transform/replay.h"

namespace loom::transform {

using ir::TensorView;

enum class PropagationStep : uint8_t { ProducerToConsumer, ConsumerToProducer, Sibling };

struct SpanningTreeEdge {
  TensorView* from;
  TensorView* to;
  PropagationStep step;
  /// Number of reference logical IDs that reach `to` along the tree.
  int64_t information;
};

/// The spanning tree from `reference` over all tensors of its fusion (or only `selected`, when
/// non-empty; the reference is always included), in propagation order.
std::vector<SpanningTreeEdge> maxInfoSpanningTree(TensorView* reference,
                                                  const std::vector<TensorView*>& selected = {});

/// Replays the reference's loop (and allocation, per options) onto every tensor of the tree:
/// replayCasP / replayPasC / selfReplay per edge.
void propagateTransforms(TensorView* reference, ReplayOptions options = {},
                         const std::vector<TensorView*>& selected = {});

/// Copies the parallel types of reference's loop IDs onto the loop IDs of `tvs` (all tensors of
/// the fusion when empty) that map to them: the exactly mapped reference loop ID, else the first
/// parallel one mapped in the permissive ID graph. A type already used in a target's loop domain is not
/// copied twice; Vectorize is copied only to innermost loop IDs.
void parallelizeAllLike(TensorView* reference, const std::vector<TensorView*>& tvs = {});

}  // namespace loom::transform
