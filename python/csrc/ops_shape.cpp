// SPDX-License-Identifier: Apache-2.0
// loom._C.ops, shapes: broadcast, squeeze / unsqueeze, expand, permute / transpose, reshape,
// set, slice, pad and cat. Sizes are ints or integer Scalars (op_args.h).
#include <nanobind/stl/vector.h>

#include <vector>

#include "convert.h"
#include "loom/ops/shape.h"
#include "op_args.h"

namespace loom::python {

namespace {

void bindBroadcastOps(nb::module_& m) {
  m.def(
      "broadcast",
      [](PyFusion& f, nb::handle x, const std::vector<bool>& is_broadcast_dim) {
        OpScope scope(f, "broadcast");
        return ops::broadcast(tensor(f, x, "broadcast", "x"), is_broadcast_dim);
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "broadcast_in_dim",
      [](PyFusion& f, nb::handle x, nb::handle shape, nb::handle broadcast_dims) {
        OpScope scope(f, "broadcast_in_dim");
        return ops::broadcastInDim(tensor(f, x, "broadcast_in_dim", "x"),
                                   sizeList(f, shape, "broadcast_in_dim", "shape"),
                                   int64ListFromPython(broadcast_dims, "broadcast_in_dim: dims"));
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "squeeze",
      [](PyFusion& f, nb::handle x, const std::vector<int64_t>& dims, bool squeeze_expanded) {
        OpScope scope(f, "squeeze");
        return ops::squeeze(tensor(f, x, "squeeze", "x"), dims, squeeze_expanded);
      },
      nb::arg("fusion"), nb::arg("x"), nb::arg("dims"), nb::arg("squeeze_expanded") = false, kKeep,
      nb::rv_policy::reference);
  m.def(
      "unsqueeze",
      [](PyFusion& f, nb::handle x, int64_t dim) {
        OpScope scope(f, "unsqueeze");
        return ops::unsqueeze(tensor(f, x, "unsqueeze", "x"), dim);
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "expand",
      [](PyFusion& f, nb::handle x, nb::handle sizes) {
        OpScope scope(f, "expand");
        ops::SizeList s = sizeList(f, sizes, "expand", "shape");
        ir::TensorView* in = tensor(f, x, "expand", "x");
        if (auto c = s.constants()) return ops::expand(in, *c);
        return ops::expand(in, s);
      },
      kKeep, nb::rv_policy::reference);
}

void bindLayoutOps(nb::module_& m) {
  m.def(
      "permute",
      [](PyFusion& f, nb::handle x, const std::vector<int64_t>& dims) {
        OpScope scope(f, "permute");
        return ops::permute(tensor(f, x, "permute", "x"), dims);
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "transpose",
      [](PyFusion& f, nb::handle x, int64_t dim0, int64_t dim1) {
        OpScope scope(f, "transpose");
        return ops::transpose(tensor(f, x, "transpose", "x"), dim0, dim1);
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "reshape",
      [](PyFusion& f, nb::handle x, nb::handle new_shape) {
        OpScope scope(f, "reshape");
        return ops::reshape(tensor(f, x, "reshape", "x"),
                            sizeList(f, new_shape, "reshape", "new_shape"));
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "set",
      [](PyFusion& f, nb::handle x) {
        OpScope scope(f, "set");
        return ops::set(tensor(f, x, "set", "x"));
      },
      kKeep, nb::rv_policy::reference);
}

void bindSlicePadCat(nb::module_& m) {
  m.def(
      "slice",
      [](PyFusion& f, nb::handle x, nb::handle starts, nb::handle stops,
         const std::vector<int64_t>& steps) {
        OpScope scope(f, "slice");
        return ops::slice(tensor(f, x, "slice", "x"), sizeList(f, starts, "slice", "start_indices"),
                          sizeList(f, stops, "slice", "end_indices"), steps);
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "pad",
      [](PyFusion& f, nb::handle x, nb::handle widths, nb::handle value) {
        OpScope scope(f, "pad");
        ir::TensorView* in = tensor(f, x, "pad", "x");
        ops::SizeList w = sizeList(f, widths, "pad", "pad_widths");
        if (value.is_none()) return ops::pad(in, w);
        return ops::pad(in, w, operand(f, value, "pad", "value"));
      },
      nb::arg("fusion"), nb::arg("x"), nb::arg("pad_widths"), nb::arg("value").none(), kKeep,
      nb::rv_policy::reference);
  m.def(
      "cat",
      [](PyFusion& f, nb::handle xs, int64_t dim) {
        OpScope scope(f, "cat");
        std::vector<ir::TensorView*> tvs;
        for (nb::handle h : xs) tvs.push_back(tensor(f, h, "cat", "tensors"));
        return ops::cat(tvs, dim);
      },
      kKeep, nb::rv_policy::reference);
}

}  // namespace

void bindShapeOps(nb::module_& m) {
  bindBroadcastOps(m);
  bindLayoutOps(m);
  bindSlicePadCat(m);
}

}  // namespace loom::python
