// SPDX-License-Identifier: Apache-2.0
// loom._C.ops, inputs and factories: define_tensor and define_scalar (the fusion's inputs and
// constants), full, iota and arange.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <vector>

#include "convert.h"
#include "loom/ir/builder.h"
#include "loom/ir/scalar.h"
#include "loom/ops/factory.h"
#include "loom/ops/tensor_builder.h"
#include "op_args.h"

namespace loom::python {

namespace {

void bindInputs(nb::module_& m) {
  m.def(
      "define_tensor",
      [](PyFusion& f, nb::handle shape, DataType dtype, const ir::Contiguity& contiguity,
         nb::handle stride_order, bool is_cpu) {
        OpScope scope(f, "define_tensor");
        ops::TensorBuilder b;
        b.shape(int64ListFromPython(shape, "define_tensor: shape")).dtype(dtype);
        if (!contiguity.empty()) b.contiguity(contiguity);
        std::vector<int64_t> order =
            int64ListFromPython(stride_order, "define_tensor: stride_order");
        if (!order.empty()) b.strideOrder(order);
        ir::TensorView* tv = b.build();
        LOOM_CHECK(!is_cpu || tv->rank() == 0, "define_tensor: is_cpu=True is for a 0-dim tensor "
                   "(a CPU scalar given beside CUDA tensors), but the shape has ", tv->rank(),
                   " dims; define it without is_cpu");
        f.fusion->addInput(tv);
        if (is_cpu) f.cpuScalars.insert(tv);
        return tv;
      },
      nb::arg("fusion"), nb::arg("shape"), nb::arg("dtype"), nb::arg("contiguity"),
      nb::arg("stride_order"), nb::arg("is_cpu") = false, kKeep, nb::rv_policy::reference);
  m.def(
      "define_scalar",
      [](PyFusion& f, DataType dtype, nb::handle value, bool index) -> ir::Scalar* {
        OpScope scope(f, "define_scalar");
        if (value.is_none()) {
          LOOM_CHECK(!isComplexType(dtype), "define_scalar: a ", dtype,
                     " scalar input is not supported (complex values cannot be given at run "
                     "time); give its value here (define_scalar(1+2j, dtype=...)), or define a "
                     "0-dim complex tensor");
          ir::Scalar* s = ir::IrBuilder::symbolic(dtype);
          f.fusion->addInput(s);
          if (index) f.indexScalars.insert(s);
          return s;
        }
        ir::ScalarValue v = numberFromPython(value, "define_scalar: value");
        LOOM_CHECK(!std::holds_alternative<std::monostate>(v),
                   "define_scalar: value must be a Python number or None, got ", pyTypeName(value));
        return ir::IrBuilder::constant(v, dtype);
      },
      nb::arg("fusion"), nb::arg("dtype"), nb::arg("value").none(), nb::arg("index") = false,
      kKeep, nb::rv_policy::reference);
}

}  // namespace

void bindFactoryOps(nb::module_& m) {
  bindInputs(m);
  m.def(
      "full",
      [](PyFusion& f, nb::handle shape, nb::handle value, DataType dtype) {
        OpScope scope(f, "full");
        return ops::full(sizeList(f, shape, "full", "shape"),
                         operand(f, value, "full", "fill_value"), dtype);
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "iota",
      [](PyFusion& f, nb::handle length, nb::handle start, nb::handle step, DataType dtype) {
        OpScope scope(f, "iota");
        return ops::iota(size(f, length, "iota", "length"), operand(f, start, "iota", "start"),
                         operand(f, step, "iota", "step"), dtype);
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "arange",
      [](PyFusion& f, nb::handle start, nb::handle end, nb::handle step,
         std::optional<DataType> dtype) {
        OpScope scope(f, "arange");
        return ops::arange(operand(f, start, "arange", "start"), operand(f, end, "arange", "end"),
                           operand(f, step, "arange", "step"), dtype);
      },
      kKeep, nb::rv_policy::reference);
}

}  // namespace loom::python
