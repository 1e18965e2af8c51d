// SPDX-License-Identifier: Apache-2.0
// Sorting ops under torch's and nvFuser's names: argsort and topk (docs/ops.md, "Sorting"). The
// order is torch's: NaN above every number, -0.0 equal to 0.0, ties in input order (stable).
//
//   TensorView* order = ops::argsort(scores, -1, /*descending=*/true);   // best first
//   auto [top, where] = ops::topk(logits, 5, -1);                         // 5 largest per row
#pragma once

#include "loom/ir/tensor_view.h"
#include "loom/ops/size.h"

namespace loom::ops {

using ir::TensorView;

/// torch.argsort(x, dim, descending, stable=True): the Int64 indices along `dim` (negative counts
/// from the end) that order each row ascending (or descending). Stable in both directions, so
/// torch's stable=False, which leaves the order of ties open, is met too. x may be any real or
/// Bool dtype; complex x, a 0-dim x and an expanded (stride-0) dim are UserErrors.
TensorView* argsort(TensorView* x, int64_t dim, bool descending = false);

struct TopKResult {
  TensorView* values;   ///< x's dtype
  TensorView* indices;  ///< Int64
};
/// torch.topk(x, k, dim, largest, sorted=True): the k largest (or smallest) elements of each row
/// along `dim` in that order, and their indices; ties keep input order. `k` is a constant or an
/// integer Scalar with 0 <= k <= the size of `dim` (checked now for constants, when the fusion
/// runs otherwise). torch's sorted=False allows any order; Loom's is always sorted.
TopKResult topk(TensorView* x, Size k, int64_t dim = -1, bool largest = true);

}  // namespace loom::ops
