// SPDX-License-Identifier: Apache-2.0
// Building input TensorViews.
//
//   auto* x = ops::TensorBuilder().shape({-1, 1, 4096}).dtype(DataType::BFloat16).build();
//   fusion.addInput(x);
//
// A size of -1 makes a symbolic extent bound at run time (an Iteration ID); a size of 1 makes a
// Broadcast ID; any other size is a constant extent. Contiguity defaults to fully contiguous; no
// contiguity (nullopt) for a size other than 1 makes an expanded broadcast (a stride-0 dim).
#pragma once

#include <optional>
#include <vector>

#include "loom/ir/tensor_view.h"

namespace loom::ops {

class TensorBuilder {
 public:
  TensorBuilder& shape(std::vector<int64_t> sizes);
  /// Rank only: every extent symbolic.
  TensorBuilder& rank(int64_t n);
  TensorBuilder& dtype(DataType dtype);
  /// One entry per logical ID; nullopt for broadcast IDs. A nullopt entry for a dim whose size
  /// is not 1 makes it an expanded broadcast (stride 0) of that size, -1 a run-time one
  /// (nvFuser's convention). Default: all true.
  TensorBuilder& contiguity(ir::Contiguity contiguity);
  TensorBuilder& contiguous(bool contiguous);
  /// Allocation order as a permutation of logical axes, outermost first (e.g. {0, 2, 1}).
  TensorBuilder& strideOrder(std::vector<int64_t> order);
  /// Creates the TensorView (Global memory) in the active fusion. Does not add it as an input.
  ir::TensorView* build() const;

 private:
  std::vector<int64_t> sizes_;
  DataType dtype_ = DataType::Float32;
  std::optional<ir::Contiguity> contiguity_;
  std::optional<bool> contiguous_;
  std::vector<int64_t> stride_order_;
};

}  // namespace loom::ops
