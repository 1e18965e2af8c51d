// SPDX-License-Identifier: Apache-2.0
// The argument conversions of loom._C.ops (op_args.h).
#include "op_args.h"

#include <Python.h>

#include <string>

#include "convert.h"
#include "ir_helpers.h"
#include "loom/ir/scalar.h"

namespace loom::python {

namespace {

void checkOwned(const PyFusion& f, const ir::Val* v, const char* op, const char* arg) {
  LOOM_CHECK(v->fusion() == f.fusion.get(), op, ": argument ", arg, " (", v->toString(),
             ") belongs to another fusion");
}

}  // namespace

OpScope::OpScope(PyFusion& f, const char* op) : guard_(f.fusion.get()) {
  checkMutable(f.fusion.get(), op);
}

ops::Operand operand(const PyFusion& f, nb::handle h, const char* op, const char* arg) {
  if (nb::isinstance<ir::TensorView>(h)) {
    auto* tv = nb::cast<ir::TensorView*>(h);
    checkOwned(f, tv, op, arg);
    return tv;
  }
  if (nb::isinstance<ir::Scalar>(h)) {
    auto* s = nb::cast<ir::Scalar*>(h);
    checkOwned(f, s, op, arg);
    return s;
  }
  ir::ScalarValue v = numberFromPython(h, std::string(op) + ": argument " + arg);
  if (const bool* b = std::get_if<bool>(&v)) return *b;
  if (const int64_t* i = std::get_if<int64_t>(&v)) return *i;
  if (const double* d = std::get_if<double>(&v)) return *d;
  if (const auto* c = std::get_if<std::complex<double>>(&v)) return *c;
  LOOM_CHECK_TYPE(false, op, ": argument ", arg,
                  " must be a TensorView, a Scalar or a Python number, got ", pyTypeName(h));
  LOOM_UNREACHABLE();
}

ir::TensorView* tensor(const PyFusion& f, nb::handle h, const char* op, const char* arg) {
  LOOM_CHECK_TYPE(nb::isinstance<ir::TensorView>(h), op, ": argument ", arg,
                  " must be a TensorView, got ", pyTypeName(h));
  auto* tv = nb::cast<ir::TensorView*>(h);
  checkOwned(f, tv, op, arg);
  return tv;
}

ir::TensorView* tensorOrNone(const PyFusion& f, nb::handle h, const char* op, const char* arg) {
  return h.is_none() ? nullptr : tensor(f, h, op, arg);
}

ops::SizeList sizeList(const PyFusion& f, nb::handle h, const char* op, const char* arg) {
  std::vector<ops::Size> sizes;
  for (nb::handle e : h) {
    if (nb::isinstance<ir::Scalar>(e)) {
      auto* s = nb::cast<ir::Scalar*>(e);
      checkOwned(f, s, op, arg);
      sizes.emplace_back(s);
    } else {
      LOOM_CHECK_TYPE(PyLong_Check(e.ptr()) && !PyBool_Check(e.ptr()), op, ": every entry of ", arg,
                      " must be an int or an integer Scalar, got ", pyTypeName(e));
      sizes.emplace_back(
          int64FromPython(e, std::string(op) + ": " + arg + " entry", int64_t(sizes.size())));
    }
  }
  return ops::SizeList(std::move(sizes));
}

ops::Size size(const PyFusion& f, nb::handle h, const char* op, const char* arg) {
  if (nb::isinstance<ir::Scalar>(h)) {
    auto* s = nb::cast<ir::Scalar*>(h);
    checkOwned(f, s, op, arg);
    return ops::Size(s);
  }
  LOOM_CHECK_TYPE(PyLong_Check(h.ptr()) && !PyBool_Check(h.ptr()), op, ": ", arg,
                  " must be an int or an integer Scalar, got ", pyTypeName(h));
  return ops::Size(int64FromPython(h, std::string(op) + ": " + arg));
}

nb::object refOrNone(ir::TensorView* tv, nb::handle fusion) {
  return tv == nullptr ? nb::none() : nb::object(nodeRef(tv, fusion));
}

}  // namespace loom::python
