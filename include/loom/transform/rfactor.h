// SPDX-License-Identifier: Apache-2.0
// rFactor: splits one reduction into a partial reduction (a new producer tensor) over chosen loop
// axes and a final reduction over the rest.
//
//   before: T1[i0, r1o, r1i] = sum(T0[i0, i1])            rFactor(T1, {2})
//   after:  T2[i0, i1o, r1i] = sum(T0)   (root [i0, r1], logical [i0, i1o, r1i])
//           T1[i0, r1o]      = sum(T2)
//
// The producer keeps the whole schedule of the original (loop, allocation, parallel types
// including DID); its logical domain is the reduction's loop frontier (rFactor products), so it
// has a root domain. The original tensor keeps its identity and its schedule minus the axes that
// moved to the producer.
#pragma once

#include <cstdint>
#include <vector>

#include "loom/ir/tensor_view.h"

namespace loom::transform {

using ir::TensorView;

/// rFactor of a tensor defined by a ReductionOp over the loop `axes` (Reduction IDs; at least one
/// Reduction loop ID must stay). Returns the new producer.
TensorView* rFactor(TensorView* tv, const std::vector<int64_t>& axes);

/// rFactor of a multi-output reduction (WelfordOp): `siblings` are all outputs of tv's
/// definition in order (avg, m2, n). Each sibling first gets tv's schedule by selfReplay (loop,
/// allocation, contiguity, parallel types including DID), then all are split alike. The producer
/// WelfordOp reads the original inputs; the final WelfordOp combines the partial (avg, m2, n).
/// Returns the producers in sibling order.
std::vector<TensorView*> rFactor(TensorView* tv, const std::vector<int64_t>& axes,
                                 const std::vector<TensorView*>& siblings);

}  // namespace loom::transform
