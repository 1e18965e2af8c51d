// SPDX-License-Identifier: Apache-2.0
// Contiguity flags against the strides of real tensors.
//
// A TensorView's contiguity (TensorDomain::contiguity, one flag per allocation ID, or per logical
// ID when there is no allocation domain) is a promise the generated kernel relies on: lowering
// indexes a contiguous innermost dim without a stride and a run of contiguous dims merged in the
// loop domain as one linear offset. The rule, over the allocation order with broadcast and
// reduction IDs skipped: a dim flagged true must have stride == size * stride of the next inner
// dim (1 for the innermost). Size-1 dims are lenient: their stride is never used to address
// memory (their index is 0), so the kernel is given the stride the rule implies instead
// (kernelStrides), and they always satisfy it. Tensors with no elements are never checked.
//
//   exec::checkContiguity(tv, "input 0 (T0)", t.sizes(), t.strides());   // UserError on mismatch
//   tv->setContiguity(exec::contiguityFromStrides(tv, t.sizes(), t.strides()));
//
// Allocation domains that are not a permutation of the logical domain (split allocations) are
// not checked and get no flags from strides (all false); lowering then uses every stride.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "loom/ir/tensor_view.h"

namespace loom::exec {

/// The flags that `strides` (logical order, as loom::Tensor holds them) prove for `tv`, aligned
/// with tv->maybeAllocation(): true where the rule above holds, false elsewhere, nullopt for
/// broadcast and reduction IDs.
ir::Contiguity contiguityFromStrides(const ir::TensorView* tv, std::span<const int64_t> sizes,
                                     std::span<const int64_t> strides);

/// UserError when a dim `tv` declares contiguous has another stride: names `what` (the tensor),
/// the dim, the expected and the actual stride, and the flags these strides would need.
void checkContiguity(const ir::TensorView* tv, const std::string& what,
                     std::span<const int64_t> sizes, std::span<const int64_t> strides);

/// `strides` with each size-1 non-broadcast dim's stride replaced by the one the rule implies,
/// so that the kernel's linear offsets over contiguous runs hold whatever stride such a dim had.
std::vector<int64_t> kernelStrides(const ir::TensorView* tv, std::span<const int64_t> sizes,
                                   std::span<const int64_t> strides);

/// `c` in the .fus spelling: "[t, f, -]".
std::string contiguityString(const ir::Contiguity& c);

}  // namespace loom::exec
