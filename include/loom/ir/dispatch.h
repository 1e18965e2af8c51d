// SPDX-License-Identifier: Apache-2.0
// Visitors generated from the node list in node_kinds.h. Override handle() for the kinds you care
// about; the others go to handleDefault(), which does nothing unless overridden.
#pragma once

#include "loom/ir/exprs.h"
#include "loom/ir/iter_domain.h"
#include "loom/ir/scalar.h"
#include "loom/ir/tensor_domain.h"
#include "loom/ir/tensor_view.h"
#include "loom/ir/transforms.h"

namespace loom::ir {

class ExprVisitor {
 public:
  virtual ~ExprVisitor() = default;
  /// Calls the handle() overload for e's kind.
  void dispatch(Expr* e);

#define LOOM_VISIT_METHOD(name) \
  virtual void handle(name* e) { handleDefault(e); }
  LOOM_FOR_EACH_EXPR_NODE(LOOM_VISIT_METHOD)
#undef LOOM_VISIT_METHOD

 protected:
  virtual void handleDefault(Expr*) {}
};

class ValVisitor {
 public:
  virtual ~ValVisitor() = default;
  void dispatch(Val* v);

#define LOOM_VISIT_METHOD(name) \
  virtual void handle(name* v) { handleDefault(v); }
  LOOM_FOR_EACH_VAL_NODE(LOOM_VISIT_METHOD)
#undef LOOM_VISIT_METHOD

 protected:
  virtual void handleDefault(Val*) {}
};

}  // namespace loom::ir
