// SPDX-License-Identifier: Apache-2.0
// Visitor dispatch generated from node_kinds.h.
#include "loom/ir/dispatch.h"

namespace loom::ir {

void ExprVisitor::dispatch(Expr* e) {
  switch (e->kind()) {
#define LOOM_DISPATCH_CASE(name) \
  case NodeKind::name:           \
    handle(static_cast<name*>(e)); \
    return;
    LOOM_FOR_EACH_EXPR_NODE(LOOM_DISPATCH_CASE)
#undef LOOM_DISPATCH_CASE
    default:
      LOOM_UNREACHABLE("ExprVisitor::dispatch on a ", nodeKindName(e->kind()));
  }
}

void ValVisitor::dispatch(Val* v) {
  switch (v->kind()) {
#define LOOM_DISPATCH_CASE(name) \
  case NodeKind::name:           \
    handle(static_cast<name*>(v)); \
    return;
    LOOM_FOR_EACH_VAL_NODE(LOOM_DISPATCH_CASE)
#undef LOOM_DISPATCH_CASE
    default:
      LOOM_UNREACHABLE("ValVisitor::dispatch on a ", nodeKindName(v->kind()));
  }
}

}  // namespace loom::ir
