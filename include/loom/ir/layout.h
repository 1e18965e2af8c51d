// SPDX-License-Identifier: Apache-2.0
// The memory layout Loom gives a tensor it allocates (kernel outputs, intermediates between
// segments), shared by the executor that allocates it and the segmenter that describes it to the
// next segment's scheduler, so both see the same strides.
//
//   ir::DenseLayout l = ir::denseLayout(tv, sizes);   // sizes: logical, without reductions
//   Tensor t = Tensor::empty(l.allocSizes, dtype);     // then view it as (sizes, l.strides)
#pragma once

#include <cstdint>
#include <vector>

#include "loom/ir/tensor_view.h"

namespace loom::ir {

struct DenseLayout {
  /// Sizes in allocation order (the allocation domain's order, reductions left out); an expanded
  /// broadcast dim has size 1 (or 0 when the tensor is empty along it).
  std::vector<int64_t> allocSizes;
  /// Strides of the logical view (logical order): dense over allocSizes, 0 for expanded
  /// broadcast dims.
  std::vector<int64_t> strides;
  /// True when the logical view is not the plain row-major tensor of allocSizes (a permuted
  /// allocation or an expanded dim).
  bool view = false;
};

/// `sizes` are the logical sizes of `tv` without reductions. The allocation domain must be a
/// permutation of the logical domain (UserError otherwise).
DenseLayout denseLayout(const TensorView* tv, const std::vector<int64_t>& sizes);

}  // namespace loom::ir
