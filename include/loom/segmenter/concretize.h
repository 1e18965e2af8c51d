// SPDX-License-Identifier: Apache-2.0
// Concretization: turns the dynamic reshapes of a fusion (ops::reshape with symbolic sizes, see
// ReshapeOp in ir/exprs.h) into static ones for given inputs, so the fusion can be scheduled.
//
//   segmenter::Concretization c = segmenter::concretizeFusion(fusion, args);   // in place
//
// For each dynamic reshape, in Fusion::exprs() order, the input and output sizes are evaluated
// for `args` and the reshape is rebuilt exactly as the static ops::reshape builds it, but from the
// runtime sizes: input dims of size 1 are squeezed, the remaining sizes are cut into the smallest
// groups with equal products (ops::reshapeGroups), each group merges its input IDs and splits off
// its output dims from the inside by the requested size Scalars (not constants), and output dims
// of size 1 are broadcast. A reshape of zero elements becomes a FullOp (zeros) of the output
// shape. Consumers are rewired to the rebuilt tensor. Then every Symbolic IterDomain left
// downstream becomes Broadcast when every producer ID it maps to is a broadcast (an expanded
// broadcast when an expand gave it a size other than 1), and Iteration otherwise (taking an
// Iteration producer's extent when its own differs).
//
// The result depends on the inputs only through the Concretization (the size-1 pattern and the
// groups of each reshape): inputs with equal Concretizations get the same IR, so one compiled
// kernel serves them all; inputs with different ones must not share kernels.
// FusionExecutorCache concretizes its working copy on a miss and keys runtimes on it.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "loom/eval/argument.h"
#include "loom/ir/fusion.h"
#include "loom/ops/shape.h"

namespace loom::segmenter {

/// What concretization decided for one dynamic reshape.
struct ReshapeConcretization {
  /// Zero elements: the reshape became a FullOp.
  bool empty = false;
  /// Per input dim: size 1 at run time, squeezed.
  std::vector<bool> squeezed;
  /// Per output dim: size 1 at run time, a broadcast.
  std::vector<bool> broadcast;
  /// The groups between the dims that are not size 1.
  std::vector<ops::ReshapeGroup> groups;
  bool operator==(const ReshapeConcretization&) const = default;
};

/// The decisions for a whole fusion, one per dynamic reshape in Fusion::exprs() order.
struct Concretization {
  std::vector<ReshapeConcretization> reshapes;
  bool operator==(const Concretization&) const = default;
  bool empty() const { return reshapes.empty(); }
  /// "reshape 0: squeeze [f, t] groups [0:1->0:2] broadcast [f, f]; ...", "static" when empty.
  std::string toString() const;
};

/// True when the fusion has a dynamic reshape.
bool hasDynamicReshape(const ir::Fusion& fusion);

/// True when some tensor size of the fusion depends on the value of a scalar input (a factory
/// or reshape size, a pad width, a slice bound given as a scalar input, or math on one): then
/// the concretization and the heuristics depend on scalar values, not only on tensor shapes.
bool sizesDependOnScalarInputs(const ir::Fusion& fusion);

/// The decisions concretizeFusion would take for `args` (validated like
/// ExpressionEvaluator::bindInputs); the fusion is not changed. UserError when a reshape's sizes
/// are negative or its element counts differ.
Concretization concretizationFor(const ir::Fusion& fusion, std::span<const eval::Argument> args);

/// Rebuilds every dynamic reshape of `fusion` as a static one for `args` and resolves the
/// Symbolic IterDomains (see the file comment), then removes dead code. Returns the decisions.
/// A fusion without dynamic reshapes is left as it is. UserError as concretizationFor, and when
/// a Symbolic dim that is 1 at run time broadcasts against a larger one in a way the rebuilt IR
/// cannot express (its extent feeds a slice, pad or a reduction), naming the tensors.
Concretization concretizeFusion(ir::Fusion& fusion, std::span<const eval::Argument> args);

}  // namespace loom::segmenter
