// SPDX-License-Identifier: Apache-2.0
// The IterDomain transforms below some IDs, and removing them: what dropping a tensor's loop
// schedule takes (segmenter/user_loops.h for a user's loop, multidevice localize for the splits
// below a shard's local part).
#pragma once

#include <vector>

#include "loom/ir/fusion.h"
#include "loom/ir/iter_domain.h"

namespace loom::transform {

/// Every transform (Split, Merge) reachable from `ids` through uses, each once, an expr before
/// the exprs that use its outputs.
std::vector<ir::Expr*> transformsBelow(const std::vector<ir::IterDomain*>& ids);

/// Removes `exprs`, ordered as transformsBelow gives them, from `fusion`: the last first, each
/// with the IDs it made once nothing uses them.
void removeTransforms(ir::Fusion& fusion, const std::vector<ir::Expr*>& exprs);

}  // namespace loom::transform
