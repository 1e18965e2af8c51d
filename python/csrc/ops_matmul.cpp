// SPDX-License-Identifier: Apache-2.0
// loom._C.ops, matrix products: matmul and linear (a segment of their own; docs/ops.md) and
// grouped_mm (a composition around a matmul).
#include "ir_helpers.h"
#include "loom/ops/grouped_mm.h"
#include "loom/ops/matmul.h"
#include "op_args.h"

namespace loom::python {

void bindMatmulOps(nb::module_& m) {
  m.def(
      "matmul",
      [](PyFusion& f, nb::handle a, nb::handle b) {
        OpScope scope(f, "matmul");
        return ops::matmul(tensor(f, a, "matmul", "arg1"), tensor(f, b, "matmul", "arg2"));
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "linear",
      [](nb::handle fobj, nb::handle x, nb::handle w, nb::handle b) {
        PyFusion& f = nb::cast<PyFusion&>(fobj);
        ir::TensorView* out = nullptr;
        {
          OpScope scope(f, "linear");
          out = ops::linear(tensor(f, x, "linear", "arg1"), tensor(f, w, "linear", "arg2"),
                            tensorOrNone(f, b, "linear", "bias"));
        }
        return nodeRef(out, fobj);
      },
      nb::arg("fusion"), nb::arg("arg1"), nb::arg("arg2"), nb::arg("bias").none());
  m.def(
      "grouped_mm",
      [](nb::handle fobj, nb::handle mat1, nb::handle mat2, nb::handle offsets) {
        PyFusion& f = nb::cast<PyFusion&>(fobj);
        ir::TensorView* out = nullptr;
        {
          OpScope scope(f, "grouped_mm");
          out = ops::groupedMm(tensor(f, mat1, "grouped_mm", "mat1"),
                               tensor(f, mat2, "grouped_mm", "mat2"),
                               tensorOrNone(f, offsets, "grouped_mm", "offsets"));
        }
        return nodeRef(out, fobj);
      },
      nb::arg("fusion"), nb::arg("mat1"), nb::arg("mat2"), nb::arg("offsets").none() = nb::none());
}

}  // namespace loom::python
