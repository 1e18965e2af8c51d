// SPDX-License-Identifier: Apache-2.0
// Pass expr_sort: the tensor math exprs in topological order (producers first).
#include "loom/ir/tensor_view.h"
#include "loom/lower/lower.h"

namespace loom::lower {

// Fusion::exprs() is already topological and deterministic; this pass only checks that every expr
// works on tensors (scalar math lives in extents and is lowered on demand by lowerScalar).
bool exprSort(kir::Kernel& /*kernel*/, LowerContext& ctx) {
  ctx.exprs.clear();
  for (ir::Expr* e : ctx.fusion.exprs()) {
    if (e->outputs().empty() || !e->output(0)->isA<ir::TensorView>()) continue;
    ctx.exprs.push_back(e);
  }
  return false;
}

}  // namespace loom::lower
