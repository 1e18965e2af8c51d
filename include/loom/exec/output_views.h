// SPDX-License-Identifier: Apache-2.0
// Outputs that are views of an input: returned as that input's memory with their own sizes and
// strides, no kernel writing them and no copy (nvFuser's aliasing of view outputs).
//
//   std::vector<exec::ViewChain> chains = exec::viewChains(fusion);        // at compile time
//   if (auto v = exec::viewOf(chains[k], input, ee)) out = exec::viewTensor(*v, input);
//
// An output is a view when the exprs between it and a fusion input are all view ops: permute,
// reshape, squeeze, broadcast (a new dim of one element) and slice (step 1), and it has no
// allocation domain of its own. A plain `set` is a copy the user asked for, never a view; look
// for chains in an unscheduled fusion (a scheduled one has cache copies). Whether the view's
// layout is expressible as strides of the input is known only from the input's sizes and
// strides (a reshape merging dims that are not contiguous in the input is not); when it is not,
// the kernel writes the output as before. runtime::KernelSegmentExecutor returns such outputs
// (launching a kernel compiled without them when every view holds);
// docs/python.md ("Outputs that are views of inputs") says when Loom aliases and when it copies.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "loom/eval/expression_evaluator.h"
#include "loom/ir/fusion.h"
#include "loom/tensor/tensor.h"

namespace loom::exec {

/// One fusion output reached from one fusion input through view ops only.
struct ViewChain {
  int64_t output = 0;                  ///< position among the fusion's outputs
  int64_t input = 0;                   ///< position among the fusion's inputs
  std::vector<const ir::Expr*> exprs;  ///< the view ops, the input's consumer first
};

/// The fusion's outputs that are views of an input (see the header comment), but for in-place
/// outputs and views of inputs an output is written into in place (they would show the new
/// values).
std::vector<ViewChain> viewChains(const ir::Fusion& fusion);

/// A view's layout relative to its input: element [i...] of the output is element
/// offset + sum(i_d * strides_d) of the input's memory (elements from the input's data()).
struct OutputView {
  int64_t output = 0;
  int64_t input = 0;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  int64_t offset = 0;
};

/// The layout of `chain`'s output over `input` (the argument of chain.input, whose sizes and
/// strides `ee` has bound), or nullopt when it is not expressible as strides of `input` (a
/// reshape across a gap, a squeeze of a dim that is not 1: the kernel's path handles, or
/// reports, those).
std::optional<OutputView> viewOf(const ViewChain& chain, const Tensor& input,
                                 eval::ExpressionEvaluator& ee);

/// The output tensor of `view`: `input`'s storage with the view's sizes and strides.
Tensor viewTensor(const OutputView& view, const Tensor& input);

/// The strides that show a tensor of `sizes` and `strides` as `new_sizes` (the same number of
/// elements, row-major order kept), or nullopt when the reshape merges dims that are not
/// contiguous with each other.
std::optional<std::vector<int64_t>> reshapeStrides(std::span<const int64_t> sizes,
                                                   std::span<const int64_t> strides,
                                                   std::span<const int64_t> new_sizes);

}  // namespace loom::exec
