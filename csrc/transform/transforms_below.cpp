// SPDX-License-Identifier: Apache-2.0
// transformsBelow and removeTransforms (transforms_below.h).
#include "loom/transform/transforms_below.h"

#include <unordered_set>

namespace loom::transform {

std::vector<ir::Expr*> transformsBelow(const std::vector<ir::IterDomain*>& ids) {
  std::vector<ir::Expr*> order;  // pre-order from `ids`
  std::unordered_set<ir::Expr*> seen;
  std::vector<ir::IterDomain*> stack(ids.begin(), ids.end());
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

void removeTransforms(ir::Fusion& fusion, const std::vector<ir::Expr*>& exprs) {
  for (auto it = exprs.rbegin(); it != exprs.rend(); ++it) {
    std::vector<ir::Val*> outs = (*it)->outputs();
    fusion.removeExpr(*it);
    for (ir::Val* out : outs) {
      if (out->uses().empty()) fusion.removeVal(out);
    }
  }
}

}  // namespace loom::transform
