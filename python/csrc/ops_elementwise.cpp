// SPDX-License-Identifier: Apache-2.0
// loom._C.ops, elementwise: every op of the lists in ir/op_types.h under its name there, built by
// ops::unaryOp / ops::binaryOp (so a new op of the lists is bound with no line here), then the
// exceptions, each of which says why it is not a plain list entry; and the scalar forms.
#include <nanobind/stl/string.h>

#include <optional>
#include <string>

#include "loom/ir/op_types.h"
#include "loom/ops/arith.h"
#include "loom/ops/scalar_arith.h"
#include "loom/ops/shape.h"
#include "op_args.h"

namespace loom::python {

namespace {

// The name of a list entry: a string literal (op_types.cpp), so null-terminated and static.
const char* listName(std::string_view name) { return name.data(); }

// Ops of the lists that have no plain Python form: a cast needs its dtype (bound below),
// ceil_div is index math that no user op builds.
bool bound(ir::UnaryOpType t) { return ir::unaryKind(t) != ir::UnaryKind::Cast; }
bool bound(ir::BinaryOpType t) { return ir::binaryKind(t) != ir::BinaryKind::Index; }

void defUnary(nb::module_& m, ir::UnaryOpType t) {
  const char* name = listName(ir::opTypeName(t));
  m.def(
      name,
      [t, name](PyFusion& f, nb::handle x) {
        OpScope scope(f, name);
        return ops::unaryOp(t, tensor(f, x, name, "x"));
      },
      kKeep, nb::rv_policy::reference);
}

template <typename Build>
void defBinary(nb::module_& m, const char* name, Build build) {
  m.def(
      name,
      [name, build](PyFusion& f, nb::handle a, nb::handle b) {
        OpScope scope(f, name);
        ops::Operand x = operand(f, a, name, "a");
        ops::Operand y = operand(f, b, name, "b");
        LOOM_CHECK(x.isTensor() || y.isTensor(), name,
                   ": Loom's ops need a TensorView operand; arithmetic on Scalars alone is not "
                   "supported");
        return build(x, y);
      },
      kKeep, nb::rv_policy::reference);
}

template <ir::TensorView* (*Op)(ops::Operand, ops::Operand, ops::Operand)>
void defTernary(nb::module_& m, const char* name) {
  m.def(
      name,
      [name](PyFusion& f, nb::handle a, nb::handle b, nb::handle c) {
        OpScope scope(f, name);
        ops::Operand x = operand(f, a, name, "1");
        ops::Operand y = operand(f, b, name, "2");
        ops::Operand z = operand(f, c, name, "3");
        LOOM_CHECK(x.isTensor() || y.isTensor() || z.isTensor(), name,
                   ": Loom's ops need a TensorView operand; Scalars alone are not supported");
        return Op(x, y, z);
      },
      kKeep, nb::rv_policy::reference);
}

// Arithmetic on Scalars and numbers alone (fd.ops.<op> when no operand is a tensor).
void bindScalarForms(nb::module_& m) {
  m.def(
      "scalar_binary",
      [](PyFusion& f, const std::string& name, nb::handle a, nb::handle b) {
        OpScope scope(f, name.c_str());
        // nvFuser's div truncates integers; truediv is the IR's Div (true division).
        if (name == "div") {
          return ops::scalarCDiv(operand(f, a, "div", "a"), operand(f, b, "div", "b"));
        }
        std::optional<ir::BinaryOpType> op =
            ir::parseBinaryOpType(name == "truediv" ? std::string("div") : name);
        LOOM_CHECK(op.has_value(), "fd.ops.", name, " has no scalar form");
        return ops::scalarBinary(*op, operand(f, a, name.c_str(), "a"),
                                 operand(f, b, name.c_str(), "b"));
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "scalar_unary",
      [](PyFusion& f, const std::string& name, nb::handle a) {
        OpScope scope(f, name.c_str());
        std::optional<ir::UnaryOpType> op = ir::parseUnaryOpType(name);
        LOOM_CHECK(op.has_value() && *op != ir::UnaryOpType::Cast, "fd.ops.", name,
                   " has no scalar form");
        return ops::scalarUnary(*op, operand(f, a, name.c_str(), "x"));
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "scalar_cast",
      [](PyFusion& f, nb::handle a, DataType dtype) {
        OpScope scope(f, "cast");
        return ops::scalarCast(operand(f, a, "cast", "x"), dtype);
      },
      kKeep, nb::rv_policy::reference);
}

}  // namespace

void bindElementwiseOps(nb::module_& m) {
  nb::list unary_names;
  nb::list binary_names;
  for (ir::UnaryOpType t : ir::kUnaryOpTypes) {
    if (!bound(t)) continue;
    defUnary(m, t);
    unary_names.append(listName(ir::opTypeName(t)));
  }
  for (ir::BinaryOpType t : ir::kBinaryOpTypes) {
    if (!bound(t)) continue;
    // div is the IR's Div, C++'s operator / (integers truncate), as nvFuser's div.
    defBinary(m, listName(ir::opTypeName(t)),
              [t](ops::Operand a, ops::Operand b) { return ops::binaryOp(t, a, b); });
    binary_names.append(listName(ir::opTypeName(t)));
  }

  // The exceptions: elementwise ops whose Python name or form is not a list entry's.
  // truediv: true division (ops::div promotes integers to float, then divides).
  defBinary(m, "truediv", [](ops::Operand a, ops::Operand b) { return ops::div(a, b); });
  binary_names.append("truediv");
  // cast: the list's Cast with the dtype it converts to.
  m.def(
      "cast",
      [](PyFusion& f, nb::handle x, DataType dtype) {
        OpScope scope(f, "cast");
        return ops::cast(tensor(f, x, "cast", "x"), dtype);
      },
      kKeep, nb::rv_policy::reference);
  // The ternary ops (where, clamp, lerp: few, with positional argument names).
  defTernary<&ops::where>(m, "where");
  defTernary<&ops::clamp>(m, "clamp");
  defTernary<&ops::lerp>(m, "lerp");
  // Composites of the list's ops, with arguments of their own.
  m.def(
      "gelu",
      [](PyFusion& f, nb::handle x, bool tanh_approximation) {
        OpScope scope(f, "gelu");
        return ops::gelu(tensor(f, x, "gelu", "x"), tanh_approximation
                                                        ? ops::GeluApproximation::Tanh
                                                        : ops::GeluApproximation::None);
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "addcmul",
      [](PyFusion& f, nb::handle a, nb::handle b, nb::handle c, nb::handle value) {
        OpScope scope(f, "addcmul");
        return ops::addcmul(operand(f, a, "addcmul", "1"), operand(f, b, "addcmul", "2"),
                            operand(f, c, "addcmul", "3"), operand(f, value, "addcmul", "value"));
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "threshold",
      [](PyFusion& f, nb::handle x, nb::handle th, nb::handle value) {
        OpScope scope(f, "threshold");
        return ops::threshold(tensor(f, x, "threshold", "x"), operand(f, th, "threshold", "2"),
                              operand(f, value, "threshold", "3"));
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "triu",
      [](PyFusion& f, nb::handle x, int64_t diagonal) {
        OpScope scope(f, "triu");
        return ops::triu(tensor(f, x, "triu", "x"), diagonal);
      },
      kKeep, nb::rv_policy::reference);

  // The plain elementwise ops, for loom.direct to give each a method (python/loom/direct/ops.py).
  m.attr("unary_names") = nb::tuple(unary_names);
  m.attr("binary_names") = nb::tuple(binary_names);
  bindScalarForms(m);
}

}  // namespace loom::python
