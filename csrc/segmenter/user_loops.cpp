// SPDX-License-Identifier: Apache-2.0
// drop_user_loops (user_loops.h).
#include "loom/segmenter/user_loops.h"

#include <algorithm>
#include <vector>

#include "loom/ir/exprs.h"
#include "loom/ir/iter_domain.h"
#include "loom/ir/tensor_domain.h"
#include "loom/ir/tensor_view.h"
#include "loom/transform/transforms_below.h"

namespace loom::segmenter {

namespace {

// Whether the schedulers may make `tv`'s loops anew: a transformed loop, nothing parallel or
// inlined, no mesh.
bool droppable(const ir::TensorView* tv) {
  if (tv->loop() == tv->logical() || tv->hasDeviceMesh() || tv->computeAtPosition() != 0) {
    return false;
  }
  return std::none_of(tv->loop().begin(), tv->loop().end(),
                      [](const ir::IterDomain* id) { return id->isParallelized(); });
}

}  // namespace

bool dropUserLoops(ir::Fusion& fusion) {
  bool changed = false;
  for (ir::TensorView* tv : fusion.allTvs()) {
    if (!droppable(tv)) continue;
    tv->domain()->setLoopDomain(tv->logical());
    changed = true;
    // An allocation made of the transforms keeps them all.
    const std::vector<ir::IterDomain*>& logical = tv->logical();
    const std::vector<ir::IterDomain*> alloc = tv->maybeAllocation();
    const bool alloc_is_logical = std::all_of(alloc.begin(), alloc.end(), [&](ir::IterDomain* id) {
      return std::find(logical.begin(), logical.end(), id) != logical.end();
    });
    if (!alloc_is_logical) continue;
    transform::removeTransforms(fusion, transform::transformsBelow(logical));
  }
  return changed;
}

}  // namespace loom::segmenter
