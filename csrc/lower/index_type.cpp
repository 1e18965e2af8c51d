// SPDX-License-Identifier: Apache-2.0
// The index type rule (see index_type.h).
#include "loom/lower/index_type.h"

#include <cstdlib>

namespace loom::lower {

DataType selectIndexType(std::span<const TensorExtent> tensors) {
  constexpr int64_t kLimit = int64_t{1} << 30;
  for (const TensorExtent& t : tensors) {
    bool empty = false;
    for (int64_t size : t.sizes) empty |= size == 0;
    if (empty) continue;  // never indexed
    int64_t count = 1;
    int64_t max_offset = 0;
    for (size_t d = 0; d < t.sizes.size(); ++d) {
      int64_t size = t.sizes[d];
      // Saturate instead of overflowing: any factor above the limit decides already.
      count = size >= kLimit || count >= kLimit ? kLimit : count * size;
      int64_t stride = d < t.strides.size() ? std::llabs(t.strides[d]) : 0;
      int64_t span = size - 1;
      if (stride != 0 && span >= kLimit / stride) return DataType::Int64;
      max_offset += span * stride;
      if (count >= kLimit || max_offset >= kLimit) return DataType::Int64;
    }
  }
  return DataType::Int32;
}

}  // namespace loom::lower
