// SPDX-License-Identifier: Apache-2.0
// drop_user_loops (user_loops.h).
#include "loom/segmenter/user_loops.h"

#include <algorithm>
#include <unordered_set>
#include <vector>

#include "loom/ir/exprs.h"
#include "loom/ir/iter_domain.h"
#include "loom/ir/tensor_domain.h"
#include "loom/ir/tensor_view.h"

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

// The transforms below `tv`'s logical IDs, deepest last (pre-order from the logical domain).
std::vector<ir::Expr*> transformsBelowLogical(const ir::TensorView* tv) {
  std::vector<ir::Expr*> order;
  std::unordered_set<ir::Expr*> seen;
  std::vector<ir::IterDomain*> stack(tv->logical().begin(), tv->logical().end());
  while (!stack.empty()) {
    ir::IterDomain* id = stack.back();
    stack.pop_back();
    for (ir::Expr* use : id->uses()) {
      if (!seen.insert(use).second) continue;
      order.push_back(use);
      for (ir::Val* out : use->outputs()) stack.push_back(out->as<ir::IterDomain>());
    }
  }
  return order;
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
    std::vector<ir::Expr*> order = transformsBelowLogical(tv);
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      std::vector<ir::Val*> outs = (*it)->outputs();
      fusion.removeExpr(*it);
      for (ir::Val* out : outs) fusion.removeVal(out);
    }
  }
  return changed;
}

}  // namespace loom::segmenter
