// SPDX-License-Identifier: Apache-2.0
// loom._C.ops, indexing: index_select, gather / take_along_axis, scatter / scatter_add and
// embedding (docs/ops.md, "Indexing").
#include <nanobind/stl/optional.h>

#include <optional>

#include "loom/ops/indexing.h"
#include "op_args.h"

namespace loom::python {

void bindIndexingOps(nb::module_& m) {
  m.def(
      "index_select",
      [](PyFusion& f, nb::handle x, nb::handle index, int64_t dim) {
        OpScope scope(f, "index_select");
        return ops::indexSelect(tensor(f, x, "index_select", "arg"), dim,
                                tensor(f, index, "index_select", "index"));
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "gather",
      [](PyFusion& f, nb::handle x, nb::handle index, int64_t dim, bool exact) {
        const char* op = exact ? "take_along_axis" : "gather";
        OpScope scope(f, op);
        ir::TensorView* in = tensor(f, x, op, "arg");
        ir::TensorView* idx = tensor(f, index, op, "index");
        return exact ? ops::takeAlongAxis(in, idx, dim) : ops::gather(in, dim, idx);
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "scatter",
      [](PyFusion& f, nb::handle x, nb::handle index, nb::handle src, int64_t dim, bool add) {
        const char* op = add ? "scatter_add" : "scatter";
        OpScope scope(f, op);
        ir::TensorView* in = tensor(f, x, op, "arg");
        ir::TensorView* idx = tensor(f, index, op, "index");
        ir::TensorView* s = tensor(f, src, op, "src");
        return add ? ops::scatterAdd(in, dim, idx, s) : ops::scatter(in, dim, idx, s);
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "embedding",
      [](PyFusion& f, nb::handle input, nb::handle weight, std::optional<int64_t> padding_idx,
         std::optional<double> max_norm) {
        OpScope scope(f, "embedding_fwd");
        return ops::embedding(tensor(f, input, "embedding_fwd", "input"),
                              tensor(f, weight, "embedding_fwd", "weight"), padding_idx, max_norm);
      },
      kKeep, nb::rv_policy::reference);
}

}  // namespace loom::python
