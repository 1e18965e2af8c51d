// SPDX-License-Identifier: Apache-2.0
// The one rule relating a tensor argument's sizes to a fusion's symbolic extents, shards
// included. Every reader (the evaluator binding inputs, lowering reading a size from a kernel
// argument, the runtime filling a segment's size slots, the segmenter deciding which sizes a
// segment's inputs bind, the ranks agreeing on shapes) asks here.
//
//   x : [b{s0}, s{s1}, e{s2}] sharded on s over 4 devices, as the user wrote it (a DID split):
//       an argument of local size L binds s1 = L * 4 (its shard factor is 4)
//   x : [b{s0}, s{s1 / 4}, e{s2}] after localize_shards (the extent is the local one):
//       the same: s1 = L * 4
//   an expanded broadcast [b{1, expand=s3}] binds s3 = L
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "loom/ir/fusion.h"
#include "loom/ir/tensor_view.h"

namespace loom::ir {

/// `symbol` = (the argument's size along `dim`) * `factor`.
struct ExtentBinding {
  const Scalar* symbol = nullptr;
  int64_t dim = 0;  ///< among the logical IDs without reductions
  int64_t factor = 1;
};

/// Per logical dim of `tv` without reductions: the number of devices it is split over by a DID
/// loop ID (an outer split of that logical ID by a constant), 1 when it is not sharded. A tensor
/// argument of a sharded input holds one device's block: its size along a sharded dim is the
/// logical extent divided by this count (multidevice::shardedAxes validates the form).
std::vector<int64_t> shardCounts(const TensorView* tv);

/// Per logical dim of `tv` without reductions: how many shards the whole extent holds (1 when the
/// dim is not sharded): the DID split's factor as the user wrote it (an outer split of that
/// logical ID by a constant), or the divisor of a localized extent s / d.
std::vector<int64_t> shardFactors(const TensorView* tv);

/// The symbols (scalars without a definition) an argument of `tv` binds, dim by dim: a symbolic
/// extent, an expanded extent, the whole s of a localized s / d, each with its shard factor.
std::vector<ExtentBinding> extentBindings(const TensorView* tv);

/// The first tensor input of `fusion` (in input order) whose argument binds `symbol`: its input
/// position and the binding; nullopt when no input binds it.
struct InputBinding {
  size_t input = 0;
  const TensorView* tv = nullptr;
  ExtentBinding binding;
};
std::optional<InputBinding> findInputBinding(const Fusion& fusion, const Scalar* symbol);

}  // namespace loom::ir
