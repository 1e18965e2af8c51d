// SPDX-License-Identifier: Apache-2.0
// Empty work: what a fusion computes for given inputs without reading any element.
//
//   if (segmenter::hasEmptyWork(fusion, args)) segmenter::removeEmptyWork(copy, args);
//
// For the sizes `args` give, two kinds of expression need no kernel:
//  * a computed tensor with zero elements (an output, or an intermediate such as a slice to
//    nothing that a pad or cat reads): it becomes a FullOp (nothing is written or read);
//  * a reduction (sum, prod, max, min, Welford) over dims of which one has size zero, with
//    elements left in its result: each result becomes a FullOp of the reduction's init value,
//    which is what reducing nothing gives (the reference evaluator's semantics).
// Replacing them keeps every kernel's loops non-empty where it writes: a kernel whose loops
// run over an empty dim cannot write a [N, 1] output or the N results of an empty reduction
// (nor, as a segment's reference, the non-empty outputs beside an empty one).
// FusionExecutorCache segments such inputs through a rewritten copy (the key holds every size,
// so other sizes get their own segmentation).
#pragma once

#include <span>

#include "loom/eval/argument.h"
#include "loom/ir/fusion.h"

namespace loom::segmenter {

/// True when `fusion` has empty work for `args` (validated like ExpressionEvaluator::bindInputs).
bool hasEmptyWork(const ir::Fusion& fusion, std::span<const eval::Argument> args);

/// Replaces the empty work of `fusion` for `args` (see above) and removes what became dead.
/// Returns whether anything changed.
bool removeEmptyWork(ir::Fusion& fusion, std::span<const eval::Argument> args);

}  // namespace loom::segmenter
