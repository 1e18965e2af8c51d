// SPDX-License-Identifier: Apache-2.0
// Python ints, numbers and device arguments as Loom's values (see convert.h).
#include "convert.h"

#include <Python.h>
#include <nanobind/stl/string.h>

#include <limits>
#include <string>

namespace loom::python {

namespace {

std::string reprOf(nb::handle h) {
  // A huge int prints thousands of digits (or refuses to: Python's int_max_str_digits), so an
  // int past 256 bits is named by its size.
  if (PyLong_Check(h.ptr())) {
    const auto bits = nb::cast<int64_t>(h.attr("bit_length")());
    if (bits > 256) return "an int of " + std::to_string(bits) + " bits";
  }
  std::string r = nb::cast<std::string>(nb::repr(h));
  if (r.size() > 80) r = r.substr(0, 40) + "... (" + std::to_string(r.size()) + " characters)";
  return r;
}

std::string named(std::string_view what, int64_t index) {
  std::string s(what);
  if (index >= 0) s += " " + std::to_string(index);
  return s;
}

// A Python int object (exact int or subclass, bool excluded) as int64, or a UserError.
int64_t intObject(PyObject* p, std::string_view what, int64_t index) {
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(p, &overflow);
  if (v == -1 && PyErr_Occurred() != nullptr) throw nb::python_error();
  LOOM_CHECK(overflow == 0, named(what, index), " is ", reprOf(p),
             ", which does not fit in a 64-bit integer (Loom's ints are int64: ",
             std::numeric_limits<int64_t>::min(), " to ", std::numeric_limits<int64_t>::max(), ")");
  return int64_t(v);
}

// An integer with __index__ that is not a Python int (numpy integers); tensors are excluded (a
// 0-d integer tensor has __index__ too, but is a tensor argument).
bool isIndexLike(nb::handle h) {
  return !PyLong_Check(h.ptr()) && PyIndex_Check(h.ptr()) && !isTensorLike(h);
}

int64_t indexObject(nb::handle h, std::string_view what, int64_t index) {
  PyObject* as_int = PyNumber_Index(h.ptr());
  if (as_int == nullptr) throw nb::python_error();
  nb::object owned = nb::steal(as_int);
  return intObject(owned.ptr(), what, index);
}

}  // namespace

int64_t int64FromPython(nb::handle h, std::string_view what, int64_t index) {
  PyObject* p = h.ptr();
  LOOM_CHECK_TYPE(!PyBool_Check(p) && (PyLong_Check(p) || isIndexLike(h)), named(what, index),
                  " must be an int, got ", pyTypeName(h), " ", reprOf(h));
  return PyLong_Check(p) ? intObject(p, what, index) : indexObject(h, what, index);
}

std::vector<int64_t> int64ListFromPython(nb::handle h, std::string_view what) {
  LOOM_CHECK_TYPE(PySequence_Check(h.ptr()) && !PyUnicode_Check(h.ptr()), what,
                  " must be a list of ints, got ", pyTypeName(h));
  const std::string entry = std::string(what) + " entry";
  std::vector<int64_t> out;
  for (nb::handle e : h) out.push_back(int64FromPython(e, entry, int64_t(out.size())));
  return out;
}

ir::ScalarValue numberFromPython(nb::handle h, std::string_view what, int64_t index) {
  PyObject* p = h.ptr();
  if (PyBool_Check(p)) return p == Py_True;
  if (PyLong_Check(p)) return intObject(p, what, index);
  if (PyFloat_Check(p)) return PyFloat_AS_DOUBLE(p);  // numpy.float64 is a float subclass
  if (PyComplex_Check(p)) {                           // numpy.complex128 is a complex subclass
    return std::complex<double>(PyComplex_RealAsDouble(p), PyComplex_ImagAsDouble(p));
  }
  if (isIndexLike(h)) return indexObject(h, what, index);
  return std::monostate{};
}

DeviceArgument deviceFromPython(nb::handle device, std::string_view what) {
  PyObject* p = device.ptr();
  const char* expected = " must be None, 'cpu', 'cuda', 'cuda:N', a GPU index N >= 0 or 'host'";
  if (PyLong_Check(p) && !PyBool_Check(p)) {
    int overflow = 0;
    long long n = PyLong_AsLongLongAndOverflow(p, &overflow);
    if (n == -1 && PyErr_Occurred() != nullptr) throw nb::python_error();
    LOOM_CHECK(overflow == 0 && n >= 0 && n <= std::numeric_limits<int>::max(), what, expected,
               ", got the int ", reprOf(device));
    return {true, int(n)};
  }
  LOOM_CHECK(!PyBool_Check(p), what, expected, ", got ", reprOf(device));
  const std::string d = nb::cast<std::string>(nb::str(device));  // str, torch.device, ...
  if (d == "cpu" || d == "host") return {false, std::nullopt};
  if (d == "cuda") return {true, std::nullopt};
  const std::string_view prefix = "cuda:";
  bool ok = d.size() > prefix.size() && d.compare(0, prefix.size(), prefix) == 0;
  int64_t n = 0;
  for (size_t i = prefix.size(); ok && i < d.size(); ++i) {
    ok = d[i] >= '0' && d[i] <= '9';
    n = n * 10 + (d[i] - '0');
    ok = ok && n <= std::numeric_limits<int>::max();
  }
  LOOM_CHECK(ok, what, expected, ", got '", d.size() > 80 ? d.substr(0, 40) + "..." : d, "'",
             d.compare(0, prefix.size(), prefix) == 0
                 ? " (N must be decimal digits and fit a GPU index)"
                 : "");
  return {true, int(n)};
}

}  // namespace loom::python
