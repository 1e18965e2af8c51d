// SPDX-License-Identifier: Apache-2.0
// The index type rule: 32-bit index math when every tensor of a launch is small enough.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "loom/tensor/data_type.h"

namespace loom::lower {

/// Sizes and strides (elements) of one kernel tensor argument.
struct TensorExtent {
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
};

/// Int32 when, for every tensor, the element count and the largest strided offset
/// (sum of (size - 1) * |stride|) are below 2^30; else Int64. The bound is 2^30 rather than
/// 2^31 because loop indices of a ceil-div split run past the extent (up to 2 * extent - 1 for a
/// split factor <= extent, the predicate compares them before they are masked) and products of
/// an index with a stride are formed before the sum is bounded.
DataType selectIndexType(std::span<const TensorExtent> tensors);

}  // namespace loom::lower
