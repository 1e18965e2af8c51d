// SPDX-License-Identifier: Apache-2.0
// Returning IR nodes to Python: references that keep their owner (a fusion or a node of it) alive.
#pragma once

#include <vector>

#include "bindings.h"
#include "loom/ir/iter_domain.h"

namespace loom::python {

/// `v` as a Python reference that keeps `owner` alive; None for nullptr.
nb::object nodeRef(ir::Val* v, nb::handle owner);
nb::list nodeList(const std::vector<ir::Val*>& vals, nb::handle owner);
nb::list idList(const std::vector<ir::IterDomain*>& ids, nb::handle owner);
/// `e` as a Python reference (of its own class: Merge, Split, ReshapeOp, ...) that keeps `owner`
/// alive; None for nullptr.
nb::object exprRef(ir::Expr* e, nb::handle owner);

// ir_exprs.cpp (called by bindIr): the Expr classes, and Val's graph methods (definition, uses) and identity
// comparison, added to the Val class ir.cpp binds.
void bindIrExprs(nb::module_& m);
void bindValGraph(nb::class_<ir::Val>& val);

}  // namespace loom::python
