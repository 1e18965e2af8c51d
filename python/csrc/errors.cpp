// SPDX-License-Identifier: Apache-2.0
// Loom's C++ errors as Python exceptions, with the same message (what() of the C++ exception):
//   loom.Error             (RuntimeError)   base of all of them
//   loom.UserError         (Error, ValueError)   bad input, an illegal schedule (loom::UserError)
//   loom.UserIndexError    (UserError, IndexError)   a dim or axis out of range
//   loom.UserTypeError     (UserError, TypeError)    an argument of the wrong kind
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
PyObject* g_user_index_error = nullptr;
PyObject* g_user_type_error = nullptr;
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
  // nvFuser raises RuntimeError for most mistakes and TypeError for an argument its bindings
  // cannot take; torch raises IndexError for a dim out of range. These derive from UserError (a
  // RuntimeError) and the builtin, so code written for either catches them.
  PyObject* index_bases = PyTuple_Pack(2, g_user_error, PyExc_IndexError);
  g_user_index_error = newException("loom.UserIndexError", index_bases,
                                    "A dim or axis out of range (also an IndexError).");
  Py_DECREF(index_bases);
  PyObject* type_bases = PyTuple_Pack(2, g_user_error, PyExc_TypeError);
  g_user_type_error = newException("loom.UserTypeError", type_bases,
                                   "An argument of the wrong kind (also a TypeError).");
  Py_DECREF(type_bases);
  g_internal_error =
      newException("loom.InternalError", g_error, "Loom broke one of its own invariants (a bug).");
  g_unavailable_error =
      newException("loom.UnavailableError", g_error,
                   "A capability is not available here (no GPU driver, a build without MPI, ...).");
  // The module holds the references (the types live as long as the interpreter).
  m.attr("Error") = nb::handle(g_error);
  m.attr("UserError") = nb::handle(g_user_error);
  m.attr("UserIndexError") = nb::handle(g_user_index_error);
  m.attr("UserTypeError") = nb::handle(g_user_type_error);
  m.attr("InternalError") = nb::handle(g_internal_error);
  m.attr("UnavailableError") = nb::handle(g_unavailable_error);

  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const UserIndexError& e) {
      PyErr_SetString(g_user_index_error, e.what());
    } catch (const UserTypeError& e) {
      PyErr_SetString(g_user_type_error, e.what());
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
