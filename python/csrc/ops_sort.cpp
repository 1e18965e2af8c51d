// SPDX-License-Identifier: Apache-2.0
// loom._C.ops, sorting and layout: argsort, topk, select, tril, stride_order, segment_set and
// ceilDiv (docs/ops.md, "Sorting" and "Shape ops").
#include "convert.h"
#include "ir_helpers.h"
#include "loom/ops/ops.h"
#include "op_args.h"

namespace loom::python {

void bindSortAndLayoutOps(nb::module_& m) {
  m.def(
      "argsort",
      [](PyFusion& f, nb::handle x, int64_t dim, bool descending) {
        OpScope scope(f, "argsort");
        return ops::argsort(tensor(f, x, "argsort", "arg"), dim, descending);
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "topk",
      [](nb::handle fobj, nb::handle x, nb::handle k, int64_t dim, bool largest) {
        PyFusion& f = nb::cast<PyFusion&>(fobj);
        ops::TopKResult r;
        {
          OpScope scope(f, "topk");
          r = ops::topk(tensor(f, x, "topk", "arg"), size(f, k, "topk", "k"), dim, largest);
        }
        return nb::make_tuple(nodeRef(r.values, fobj), nodeRef(r.indices, fobj));
      },
      nb::arg("fusion"), nb::arg("x"), nb::arg("k"), nb::arg("dim"), nb::arg("largest"));
  m.def(
      "select",
      [](PyFusion& f, nb::handle x, nb::handle index, int64_t dim) {
        OpScope scope(f, "select");
        return ops::select(tensor(f, x, "select", "arg"), dim, size(f, index, "select", "index"));
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "tril",
      [](PyFusion& f, nb::handle x, int64_t diagonal) {
        OpScope scope(f, "tril");
        return ops::tril(tensor(f, x, "tril", "arg"), diagonal);
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "stride_order",
      [](PyFusion& f, nb::handle x, nb::handle order) {
        OpScope scope(f, "stride_order");
        return ops::strideOrder(tensor(f, x, "stride_order", "arg"),
                                int64ListFromPython(order, "stride_order: stride_order"));
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "segment_set",
      [](PyFusion& f, nb::handle x) {
        OpScope scope(f, "segment_set");
        return ops::segmentSet(tensor(f, x, "segment_set", "arg"));
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "ceil_div",
      [](nb::handle fobj, nb::handle a, nb::handle b) -> nb::object {
        PyFusion& f = nb::cast<PyFusion&>(fobj);
        ir::Val* out = nullptr;
        {
          OpScope scope(f, "ceilDiv");
          ops::Operand x = operand(f, a, "ceilDiv", "lhs");
          ops::Operand y = operand(f, b, "ceilDiv", "rhs");
          out = x.isTensor() || y.isTensor() ? static_cast<ir::Val*>(ops::ceilDiv(x, y))
                                             : ops::scalarCeilDiv(x, y);
        }
        return nodeRef(out, fobj);
      },
      nb::arg("fusion"), nb::arg("lhs"), nb::arg("rhs"));
}

}  // namespace loom::python
