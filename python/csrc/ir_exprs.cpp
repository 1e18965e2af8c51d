// SPDX-License-Identifier: Apache-2.0
// IR expressions as Python sees them: Val.definition() and Val.uses() give Expr nodes, each of
// its own class (Merge, Split, ReshapeOp, BroadcastOp, ...; the names of nvFuser's direct
// bindings, which are Loom's node names), so that a script can walk the graph between tensors
// and IterDomains: `tv.get_logical_domain()[0].definition().outer()`. Like every node object,
// an Expr keeps its fusion alive. Nodes compare equal when they are the same node.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <functional>

#include "bindings.h"
#include "ir_helpers.h"
#include "loom/ir/exprs.h"
#include "loom/ir/iter_domain.h"
#include "loom/ir/node_kinds.h"
#include "loom/ir/transforms.h"

namespace loom::python {

namespace {

/// What a node reached through the graph keeps alive: the Python object of its fusion, not the
/// node it was reached from. Graph walks return to where they started (id.definition().out() is
/// id again, the same Python object), and node-to-node keep-alives would make cycles the
/// garbage collector cannot see.
nb::handle graphOwner(const ir::Statement* node, nb::handle fallback) {
  if (node->fusion() == nullptr) return fallback;
  nb::handle fusion = nb::find(&pyFusionOf(node->fusion()));
  return fusion.is_valid() ? fusion : fallback;
}

nb::object graphRef(ir::Val* v, nb::handle from) {
  return v == nullptr ? nb::none() : nodeRef(v, graphOwner(v, from));
}

}  // namespace

nb::object exprRef(ir::Expr* e, nb::handle owner) {
  if (e == nullptr) return nb::none();
  nb::object o = nb::cast(e, nb::rv_policy::reference);
  nb::keep_alive_obj(o, graphOwner(e, owner));
  return o;
}

namespace {

ir::Val* checkedOperand(const std::vector<ir::Val*>& vals, int64_t i, const ir::Expr& e,
                        const char* what) {
  const int64_t n = int64_t(vals.size());
  LOOM_CHECK_INDEX(i >= -n && i < n, e.toString(), " has ", n, " ", what,
                   "s; index ", i, " is out of range");
  return vals[size_t(i < 0 ? i + n : i)];
}

/// Identity, not structure: two Python objects for one node are equal, two equal-looking nodes
/// are not (nvFuser's `==` on IR nodes, used as `split.inner() == tv.axis(1)`).
template <typename Node>
void identityCompare(nb::class_<Node>& c) {
  c.def("__eq__",
        [](nb::handle a, nb::handle b) {
          Node* other = nullptr;
          return nb::try_cast<Node*>(b, other) && other == nb::cast<Node*>(a);
        })
      .def("__hash__",
           [](nb::handle a) { return int64_t(std::hash<const void*>()(nb::cast<Node*>(a))); });
}

}  // namespace

void bindIrExprs(nb::module_& m) {
  nb::class_<ir::Expr> expr(m, "Expr");
  identityCompare(expr);
  expr.def("inputs",
           [](nb::handle self) { nb::list out;
             for (ir::Val* v : nb::cast<ir::Expr*>(self)->inputs()) out.append(graphRef(v, self));
             return out; })
      .def("outputs",
           [](nb::handle self) { nb::list out;
             for (ir::Val* v : nb::cast<ir::Expr*>(self)->outputs()) out.append(graphRef(v, self));
             return out; })
      .def(
          "input",
          [](nb::handle self, int64_t i) {
            const ir::Expr& e = *nb::cast<ir::Expr*>(self);
            return graphRef(checkedOperand(e.inputs(), i, e, "input"), self);
          },
          nb::arg("index"))
      .def(
          "output",
          [](nb::handle self, int64_t i) {
            const ir::Expr& e = *nb::cast<ir::Expr*>(self);
            return graphRef(checkedOperand(e.outputs(), i, e, "output"), self);
          },
          nb::arg("index"))
      .def_prop_ro("name", [](const ir::Expr& e) { return e.opName(); })
      .def("__repr__", [](const ir::Expr& e) { return e.toString(); })
      .def("__str__", [](const ir::Expr& e) { return e.toString(); });

  // One Python class per expression kind, from the one list of node kinds.
#define LOOM_BIND_EXPR_CLASS(kind) nb::class_<ir::kind, ir::Expr> py_##kind(m, #kind);
  LOOM_FOR_EACH_EXPR_NODE(LOOM_BIND_EXPR_CLASS)
#undef LOOM_BIND_EXPR_CLASS

  // The IterDomain transforms' named operands (nvFuser's Split.outer() / .inner() / .in_(),
  // Merge.outer() / .inner() / .out()).
  py_Split
      .def("outer", [](nb::handle self) { return graphRef(nb::cast<ir::Split*>(self)->outer(), self); })
      .def("inner", [](nb::handle self) { return graphRef(nb::cast<ir::Split*>(self)->inner(), self); })
      .def("in_", [](nb::handle self) { return graphRef(nb::cast<ir::Split*>(self)->in(), self); })
      .def("factor",
           [](nb::handle self) { return graphRef(nb::cast<ir::Split*>(self)->factor(), self); })
      .def("inner_split", [](const ir::Split& s) { return s.innerSplit(); });
  py_Merge
      .def("outer", [](nb::handle self) { return graphRef(nb::cast<ir::Merge*>(self)->outer(), self); })
      .def("inner", [](nb::handle self) { return graphRef(nb::cast<ir::Merge*>(self)->inner(), self); })
      .def("out", [](nb::handle self) { return graphRef(nb::cast<ir::Merge*>(self)->out(), self); });
  py_Resize
      .def("in_", [](nb::handle self) { return graphRef(nb::cast<ir::Resize*>(self)->in(), self); })
      .def("out", [](nb::handle self) { return graphRef(nb::cast<ir::Resize*>(self)->out(), self); })
      .def("left_expand",
           [](nb::handle self) { return graphRef(nb::cast<ir::Resize*>(self)->left(), self); })
      .def("right_expand",
           [](nb::handle self) { return graphRef(nb::cast<ir::Resize*>(self)->right(), self); });
}

void bindValGraph(nb::class_<ir::Val>& val) {
  identityCompare(val);
  val.def(
         "definition",
         [](nb::handle self) {
           return exprRef(nb::cast<ir::Val*>(self)->definition(), self);
         },
         "The expression whose output this value is; None for a fusion input or a constant.")
      .def(
          "uses",
          [](nb::handle self) {
            nb::list out;
            for (ir::Expr* e : nb::cast<ir::Val*>(self)->uses()) out.append(exprRef(e, self));
            return out;
          },
          "The expressions that take this value as an input, in the order they were made.");
}

}  // namespace loom::python
