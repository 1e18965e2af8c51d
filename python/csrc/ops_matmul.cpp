// SPDX-License-Identifier: Apache-2.0
// loom._C.ops, matrix products: matmul and linear (a segment of their own; docs/ops.md) and
// grouped_mm and scaled_mm (compositions around a matmul).
#include "ir_helpers.h"
#include "loom/ops/grouped_mm.h"
#include "loom/ops/matmul.h"
#include "loom/ops/scaled_mm.h"
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
  m.def(
      "scaled_mm",
      [](nb::handle fobj, nb::handle mat1, nb::handle mat2, nb::handle scale1, nb::handle scale2,
         nb::handle alpha, nb::handle bias, nb::handle beta, DataType dtype) {
        PyFusion& f = nb::cast<PyFusion&>(fobj);
        ir::TensorView* out = nullptr;
        {
          OpScope scope(f, "scaled_mm");
          out = ops::scaledMm(
              tensor(f, mat1, "scaled_mm", "mat1"), tensor(f, mat2, "scaled_mm", "mat2"),
              tensor(f, scale1, "scaled_mm", "scale1"), tensor(f, scale2, "scaled_mm", "scale2"),
              tensorOrNone(f, alpha, "scaled_mm", "alpha"),
              tensorOrNone(f, bias, "scaled_mm", "bias"),
              tensorOrNone(f, beta, "scaled_mm", "beta"), dtype);
        }
        return nodeRef(out, fobj);
      },
      nb::arg("fusion"), nb::arg("mat1"), nb::arg("mat2"), nb::arg("scale1"), nb::arg("scale2"),
      nb::arg("alpha").none(), nb::arg("bias").none(), nb::arg("beta").none(), nb::arg("dtype"));
}

}  // namespace loom::python
