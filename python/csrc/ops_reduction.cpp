// SPDX-License-Identifier: Apache-2.0
// loom._C.ops, reductions: sum, prod, max, min, mean over dims; argmax and argmin; the scans;
// variance, var_mean and Welford's statistics.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <vector>

#include "ir_helpers.h"
#include "loom/ops/reduction.h"
#include "loom/ops/scan.h"
#include "op_args.h"

namespace loom::python {

namespace {

template <ir::TensorView* (*Op)(ir::TensorView*, const std::vector<int64_t>&, bool)>
void defReduction(nb::module_& m, const char* name) {
  m.def(
      name,
      [name](PyFusion& f, nb::handle x, const std::vector<int64_t>& axes, bool keepdim) {
        OpScope scope(f, name);
        return Op(tensor(f, x, name, "x"), axes, keepdim);
      },
      kKeep, nb::rv_policy::reference);
}

template <ir::TensorView* (*Op)(ir::TensorView*, std::optional<int64_t>, bool)>
void defArgReduction(nb::module_& m, const char* name) {
  m.def(
      name,
      [name](PyFusion& f, nb::handle x, std::optional<int64_t> dim, bool keepdim) {
        OpScope scope(f, name);
        return Op(tensor(f, x, name, "x"), dim, keepdim);
      },
      kKeep, nb::rv_policy::reference);
}

template <ir::TensorView* (*Op)(ir::TensorView*, int64_t)>
void defScan(nb::module_& m, const char* name) {
  m.def(
      name,
      [name](PyFusion& f, nb::handle x, int64_t dim) {
        OpScope scope(f, name);
        return Op(tensor(f, x, name, "x"), dim);
      },
      kKeep, nb::rv_policy::reference);
}

}  // namespace

void bindReductionOps(nb::module_& m) {
  defReduction<&ops::sum>(m, "sum");
  defReduction<&ops::prod>(m, "prod");
  defReduction<&ops::max>(m, "max");
  defReduction<&ops::min>(m, "min");
  defReduction<&ops::mean>(m, "mean");
  defArgReduction<&ops::argmax>(m, "argmax");
  defArgReduction<&ops::argmin>(m, "argmin");
  defScan<&ops::cumsum>(m, "cumsum");
  defScan<&ops::cumprod>(m, "cumprod");
  defScan<&ops::cummax>(m, "cummax");
  defScan<&ops::cummin>(m, "cummin");
  m.def(
      "variance",
      [](PyFusion& f, nb::handle x, const std::vector<int64_t>& axes, double correction,
         bool keepdim) {
        OpScope scope(f, "var");
        return ops::variance(tensor(f, x, "var", "x"), axes, correction, keepdim);
      },
      kKeep, nb::rv_policy::reference);
  m.def("var_mean", [](nb::handle fobj, nb::handle x, const std::vector<int64_t>& axes,
                       double correction, bool keepdim) {
    PyFusion& f = nb::cast<PyFusion&>(fobj);
    ops::VarMeanResult r;
    {
      OpScope scope(f, "var_mean");
      r = ops::varMean(tensor(f, x, "var_mean", "x"), axes, correction, keepdim);
    }
    return nb::make_tuple(nodeRef(r.var, fobj), nodeRef(r.mean, fobj));
  });
  m.def("welford", [](nb::handle fobj, nb::handle x, const std::vector<int64_t>& axes) {
    PyFusion& f = nb::cast<PyFusion&>(fobj);
    ops::WelfordResult r;
    {
      OpScope scope(f, "welford");
      r = ops::welford(tensor(f, x, "welford", "x"), axes);
    }
    return nb::make_tuple(nodeRef(r.avg, fobj), nodeRef(r.m2, fobj), nodeRef(r.n, fobj));
  });
}

}  // namespace loom::python
