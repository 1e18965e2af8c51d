// SPDX-License-Identifier: Apache-2.0
// Loop transforms a user wrote on an automatically scheduled fusion.
//
// nvFuser's code splits and reorders a tensor's loop domain before execute() (to describe an
// allocation, or out of habit) without parallelizing it. The schedulers make their own loops
// from each tensor's logical domain, so such loop transforms schedule nothing a scheduler would
// keep: the pre-segmentation pass drop_user_loops sets those loops back to the logical domain.
// A tensor whose loop has a parallelized ID (a hand schedule) or an inline position is left as
// it is (the schedulers refuse it, saying why), and so is a tensor with a device mesh (the
// sharding passes localize its loop). The transforms that only the dropped loop used are
// removed; those an allocation domain is made of stay (what such an allocation can be is the
// executor's to say).
#pragma once

#include "loom/ir/fusion.h"

namespace loom::segmenter {

/// Drops the unparallelized loop transforms of `fusion`'s tensors (see above). Returns whether
/// any loop changed.
bool dropUserLoops(ir::Fusion& fusion);

}  // namespace loom::segmenter
