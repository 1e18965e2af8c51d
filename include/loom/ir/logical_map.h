// SPDX-License-Identifier: Apache-2.0
// The pairwise producer-consumer logical-domain map: which producer logical ID each consumer
// root (or logical) ID iterates over.
//
// Producer reductions are skipped (they are gone in the consumer), so are the consumer's new
// broadcasts (BroadcastOp) and the producer's squeezed IDs (SqueezeOp). Consumers with a root
// domain (reshape, permute) map through their root. A consumer reduction ID maps to the producer
// Iteration ID it reduces.
#pragma once

#include <unordered_map>
#include <utility>
#include <vector>

#include "loom/ir/tensor_view.h"

namespace loom::ir {

struct LogicalMapOptions {
  /// Also map a producer broadcast ID to the consumer ID it is resolved to (non-broadcast).
  bool map_broadcast = true;
};

/// Pairs (producer logical ID, consumer root-or-logical ID) in consumer order. `producer` must
/// be an input of consumer's definition (UserError otherwise).
std::vector<std::pair<IterDomain*, IterDomain*>> pairwiseLogicalMap(
    const TensorView* producer, const TensorView* consumer, LogicalMapOptions options = {});

/// The same pairs as maps in each direction.
std::unordered_map<IterDomain*, IterDomain*> producerToConsumerMap(
    const TensorView* producer, const TensorView* consumer, LogicalMapOptions options = {});
std::unordered_map<IterDomain*, IterDomain*> consumerToProducerMap(
    const TensorView* producer, const TensorView* consumer, LogicalMapOptions options = {});

}  // namespace loom::ir
