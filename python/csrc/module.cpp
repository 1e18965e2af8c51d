// SPDX-License-Identifier: Apache-2.0
// loom._C: Loom's C++ libraries for Python (nanobind). The binding files each add one part; the
// order matters only where a part names another's types in signatures or attaches methods.
#include "bindings.h"
#include "loom/version.h"

NB_MODULE(_C, m) {
  namespace py = loom::python;
  m.doc() = "Loom's C++ libraries (loom._C); use the package loom and loom.direct.";
  m.attr("__version__") = LOOM_VERSION_STRING;
  py::bindDumps(m);
  py::bindErrors(m);
  py::bindTensors(m);
  py::bindIr(m);
  py::bindIdModel(m);
  py::bindSchedule(m);
  py::bindOps(m);
  py::bindMultidevice(m);
  py::bindExecute(m);
}
