// SPDX-License-Identifier: Apache-2.0
// loom._C.ops, indexing: index_select, gather / take_along_axis, scatter / scatter_add,
// index_put_accumulate and embedding (docs/ops.md, "Indexing").
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
        if (!add) return ops::scatter(in, dim, idx, operand(f, src, op, "src"));
        return ops::scatterAdd(in, dim, idx, tensor(f, src, op, "src"));
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "index_put_accumulate",
      [](PyFusion& f, nb::handle acc, nb::handle index, nb::handle value) {
        constexpr const char* op = "index_put_accumulate";
        OpScope scope(f, op);
        return ops::indexPutAccumulate(tensor(f, acc, op, "acc"), tensor(f, index, op, "index"),
                                       tensor(f, value, op, "value"));
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "embedding",
      [](PyFusion& f, nb::handle input, nb::handle weight, nb::handle padding_idx,
         nb::handle max_norm, nb::handle norm_type) {
        OpScope scope(f, "embedding_fwd");
        // padding_idx only shapes the backward: a constant is range-checked, a Scalar given at
        // execute cannot change the forward's values and is accepted unread.
        std::optional<int64_t> pad;
        if (!padding_idx.is_none()) {
          ops::Operand p = operand(f, padding_idx, "embedding_fwd", "padding_idx");
          LOOM_CHECK(!p.isTensor() && isIntegralType(p.val()->dtype()),
                     "embedding_fwd: padding_idx must be an int or an integer Scalar, got ",
                     p.val()->toString());
          pad = p.val()->as<ir::Scalar>()->constInt();
        }
        std::optional<ops::Operand> m;
        if (!max_norm.is_none()) m = operand(f, max_norm, "embedding_fwd", "max_norm");
        ops::Operand p = norm_type.is_none() ? ops::Operand(2.0)
                                             : operand(f, norm_type, "embedding_fwd", "norm_type");
        return ops::embedding(tensor(f, input, "embedding_fwd", "input"),
                              tensor(f, weight, "embedding_fwd", "weight"), pad, m, p);
      },
      nb::arg("fusion"), nb::arg("input"), nb::arg("weight"), nb::arg("padding_idx").none(),
      nb::arg("max_norm").none(), nb::arg("norm_type").none(), kKeep, nb::rv_policy::reference);
}

}  // namespace loom::python
