// SPDX-License-Identifier: Apache-2.0
// clearReductionIterDomains: turns a former reduction output into a plain tensor (used when a
// rewrite redefines it by a pointwise op, as the Welford translation does for avg and N).
#pragma once

#include "loom/ir/tensor_view.h"

namespace loom::transform {

/// Removes the reduction IDs from tv's logical, loop and allocation domains and the matching
/// contiguity flags; everything else stays, including a DID split of the loop or allocation. The
/// explicit allocation is dropped when it equals the new logical domain. UserError when tv has a
/// root domain (an rFactor product or reshape output).
void clearReductionIterDomains(ir::TensorView* tv);

}  // namespace loom::transform
