// SPDX-License-Identifier: Apache-2.0
// The reference evaluator: runs a whole fusion on host tensors, in double precision, as the
// correctness oracle that kernels are compared against.
//
// Semantics:
// * Every tensor value is a dense row-major double buffer of its logical shape (reductions
//   removed, expanded broadcasts at their expanded size). Inputs are read through their sizes,
//   strides and offset, so permuted, offset and stride-0 (expanded) inputs work.
// * Each op computes in double and rounds every result element to the op's output dtype before
//   anything consumes it (Float32 ops round to float, a Cast to bf16 rounds to bf16, integer
//   results truncate), so the reference reproduces the dtypes the kernels compute in.
// * Integer ops use C semantics (Div truncates, Mod has the sign of the dividend, overflow wraps)
//   computed in int64 (docs/ops.md has the rules for zero divisors and shifts). An Int32 or Int64
//   tensor also holds its values as int64, so integers are exact over their whole range through
//   integer math, where and clamp of integers, casts between integer types, sum / prod / max /
//   min, copies (broadcast, permute, reshape, squeeze, expand, slice, pad, cat), full and iota;
//   ops that compute in double (scans, sort and topk, gather / scatter / index_select, Welford,
//   random ops, matmul) see an Int64 exactly only within +-2^53.
// * maximum/minimum/max/min propagate NaN; round is half to even; sign(NaN) and relu(NaN) are
//   NaN; clamp gives NaN when any operand is NaN; lerp(a, b, w) = a + w * (b - a); Cast converts
//   like loom::storeFromDouble (round to nearest even, integers truncate and saturate, NaN -> 0).
// * Pointwise inputs have the output's rank; a size-1 input dim stretches to the output size.
// * Reductions iterate the output's logical domain, Reduction IDs included. Without a root
//   domain, output logical position i is input dim i (the ops' layout). With one (an rFactor
//   producer), root position i is input dim i and the logical IDs derive from the root by
//   Split/Merge: a Split's input index is outer * extent(inner) + inner, and a point where it is
//   >= extent(in) (the padding of a non-divisible split) is masked: it contributes nothing, as
//   the kernels' predicates skip it. A Merge's inputs are out / extent(inner) and
//   out % extent(inner). Reductions start from the init value (an empty or fully masked
//   reduction gives init). Welford with a raw input computes avg and m2 by two passes in double
//   (n = count of unmasked elements); partial inputs (avg, m2, n) combine by Chan's formula, so
//   a partial with n = 0 adds nothing.
// * A reduction output whose Reduction IDs were removed (clearReductionIterDomains) reduces the
//   dims its extents do not match: a Welford takes them from a sibling output that still has its
//   Reduction IDs; otherwise the output's extents are matched to the input's (same extent
//   Scalars first, then equal values), a UserError when that matching is not unique.
// * The fusion may be scheduled and rewritten by the transform layer: Split/Merge/reorder of
//   loop and allocation domains, parallel types, inlining, rFactor (ReductionOp and WelfordOp),
//   cacheBefore/cacheAfter/cacheFork (Set copies), clearReductionIterDomains. None of these
//   changes the result. Device (DID) parallel IDs are loop and allocation annotations only:
//   the evaluator takes global (unsharded) inputs of the logical shapes and computes the global
//   result, so a sharded fusion is checked against its unsharded original.
// * Slice, pad and cat read their ranges from the Resize exprs of their outputs (pad: the PadOp
//   value fills the rest; cat: output index i along dim comes from the input whose range
//   [left_k, left_k + extent_k) holds it). Full and iota need no input tensor. A reshape,
//   dynamic (sizes bound now) or static, reinterprets the row-major buffer. Runtime sizes are
//   checked: a negative size of any of these outputs, cat inputs whose sizes disagree, a reshape
//   whose element counts differ, and a slice range outside its input are UserErrors.
// * Exprs run in Fusion::exprs() order; Split/Merge/Resize are not run (they only relate
//   domains). Anything unsupported is a UserError naming the expr.
#pragma once

#include <span>
#include <vector>

#include "loom/eval/argument.h"
#include "loom/tensor/tensor.h"

namespace loom::ir {
class Fusion;
}

namespace loom::eval {

/// Validates and binds `inputs` (ExpressionEvaluator::bindInputs), evaluates the fusion and
/// returns one contiguous host tensor per fusion output, of the output's dtype and logical shape
/// (a Scalar output becomes a 0-dim tensor). An output that is also an input is copied.
std::vector<Tensor> evaluateFusion(const ir::Fusion& fusion, std::span<const Argument> inputs);

}  // namespace loom::eval
