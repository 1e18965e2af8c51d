// SPDX-License-Identifier: Apache-2.0
// Loom's C++ errors as Python exceptions, with the same message (what() of the C++ exception):
//   loom.Error             (RuntimeError)   base of all of them
//   loom.UserError         (Error, ValueError)   bad input, an illegal schedule (loom::UserError)
//   loom.InternalError     (Error)          a bug in Loom (loom::InternalError)
//   loom.UnavailableError  (Error)          a capability missing here, e.g. no GPU driver
#include <Python.h>

#include "bindings.h"
#include "loom/support/error.h"

namespace loom::python {

namespace {

PyObject* newException(const char* name, PyObject* bases, const char* doc) {
  PyObject* type = PyErr_NewExceptionWithDoc(name, doc, bases, nullptr);
  if (type == nullptr) throw nb::python_error();
  return type;
}

PyObject* g_error = nullptr;
PyObject* g_user_error = nullptr;
PyObject* g_internal_error = nullptr;
PyObject* g_unavailable_error = nullptr;

}  // namespace

void bindErrors(nb::module_& m) {
  g_error = newException("loom.Error", PyExc_RuntimeError, "Base of every error Loom raises.");
  PyObject* user_bases = PyTuple_Pack(2, g_error, PyExc_ValueError);
  g_user_error =
      newException("loom.UserError", user_bases,
                   "The caller did something wrong: a bad argument, shape, dtype or schedule.");
  Py_DECREF(user_bases);
  g_internal_error =
      newException("loom.InternalError", g_error, "Loom broke one of its own invariants (a bug).");
  g_unavailable_error =
      newException("loom.UnavailableError", g_error,
                   "A capability is not available here (no GPU driver, a build without MPI, ...).");
  // The module holds the references (the types live as long as the interpreter).
  m.attr("Error") = nb::handle(g_error);
  m.attr("UserError") = nb::handle(g_user_error);
  m.attr("InternalError") = nb::handle(g_internal_error);
  m.attr("UnavailableError") = nb::handle(g_unavailable_error);

  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const UserError& e) {
      PyErr_SetString(g_user_error, e.what());
    } catch (const InternalError& e) {
      PyErr_SetString(g_internal_error, e.what());
    } catch (const UnavailableError& e) {
      PyErr_SetString(g_unavailable_error, e.what());
    } catch (const Error& e) {
      PyErr_SetString(g_error, e.what());
    }
  });
}

}  // namespace loom::python
