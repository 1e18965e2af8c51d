// SPDX-License-Identifier: Apache-2.0
// loom._C.multidevice: DeviceMesh, the process's Communicator, and cutting a rank's shard out of a
// global tensor (docs/multidevice.md has the model: one process per device, under mpirun).
#include <Python.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <sstream>
#include <vector>

#include "bindings.h"
#include "convert.h"
#include "loom/ir/device_mesh.h"
#include "loom/multidevice/communicator.h"
#include "loom/multidevice/sharding.h"

namespace loom::python {

namespace {

// A mesh has at most 3 axes (DIDz, DIDy, DIDx): deeper nesting is refused before recursing into
// it, so a list nested thousands deep is a UserError, not a stack overflow.
constexpr size_t kMaxMeshAxes = 3;

/// Flattens nested lists of ints into devices, recording the shape.
void flatten(nb::handle h, size_t depth, std::vector<int64_t>& devices,
             std::vector<int64_t>& shape) {
  if (!PyList_Check(h.ptr()) && !PyTuple_Check(h.ptr()) && !PyLong_Check(h.ptr()) &&
      !PyUnicode_Check(h.ptr()) && !PyBytes_Check(h.ptr()) && nb::hasattr(h, "__iter__")) {
    // range(d), a generator, ...: as the list of what it yields.
    nb::object list = nb::steal(PySequence_List(h.ptr()));
    if (!list.is_valid()) throw nb::python_error();
    flatten(list, depth, devices, shape);
    return;
  }
  if (PyList_Check(h.ptr()) || PyTuple_Check(h.ptr())) {
    LOOM_CHECK(depth < kMaxMeshAxes, "DeviceMesh: at most ", kMaxMeshAxes,
               " axes (DIDz, DIDy, DIDx), but the lists are nested more than ", kMaxMeshAxes,
               " deep");
    auto n = int64_t(nb::len(h));
    if (shape.size() == depth) {
      shape.push_back(n);
    } else {
      LOOM_CHECK(shape.size() > depth && shape[depth] == n,
                 "DeviceMesh: the nested lists are ragged (", n, " entries where ",
                 shape.size() > depth ? shape[depth] : 0, " were expected)");
    }
    for (nb::handle e : h) flatten(e, depth + 1, devices, shape);
    return;
  }
  LOOM_CHECK(PyLong_Check(h.ptr()) && !PyBool_Check(h.ptr()),
             "DeviceMesh: device ids must be ints, got ", nb::cast<std::string>(nb::repr(h)));
  LOOM_CHECK(shape.size() == depth, "DeviceMesh: the nested lists are ragged");
  devices.push_back(int64FromPython(h, "DeviceMesh: device id", int64_t(devices.size())));
}

ir::DeviceMesh makeMesh(nb::handle devices) {
  nb::object list = nb::borrow(devices);
  if (nb::hasattr(devices, "tolist")) list = devices.attr("tolist")();  // torch, numpy
  std::vector<int64_t> ids;
  std::vector<int64_t> shape;
  flatten(list, 0, ids, shape);
  LOOM_CHECK(!ids.empty(), "DeviceMesh: a mesh needs at least one device");
  return ir::DeviceMesh(std::move(ids), std::move(shape));
}

std::string meshString(const ir::DeviceMesh& mesh) {
  std::ostringstream os;
  os << mesh;
  return os.str();
}

}  // namespace

void bindMultidevice(nb::module_& parent) {
  nb::module_ m = parent.def_submodule("multidevice", "Device meshes, the communicator, shards.");

  nb::class_<ir::DeviceMesh>(m, "DeviceMesh",
                             "An N-D array (up to 3 axes) of device ids; DIDx (mesh_x) runs along "
                             "the last axis.")
      .def(
          "__init__",
          [](ir::DeviceMesh* self, nb::handle devices) {
            new (self) ir::DeviceMesh(makeMesh(devices));
          },
          nb::arg("devices"), "A mesh from a list (nested for N-D), a torch tensor or an array.")
      .def_prop_ro("size", [](const ir::DeviceMesh& mesh) { return mesh.size(); })
      .def_prop_ro("shape", [](const ir::DeviceMesh& mesh) { return mesh.shape(); })
      .def_prop_ro("devices", [](const ir::DeviceMesh& mesh) { return mesh.devices(); })
      .def_prop_ro("ndim", &ir::DeviceMesh::rank)
      .def("index_of", &ir::DeviceMesh::indexOf, nb::arg("device"))
      .def(
          "shard_tensor",
          [](const ir::DeviceMesh& mesh, nb::handle tensor, int64_t dim, int64_t device,
             nb::handle p) {
            ir::ParallelType type = ir::ParallelType::DIDx;
            if (!p.is_none()) {
              nb::object inner = nb::isinstance<ir::ParallelType>(p)
                                     ? nb::borrow(p)
                                     : nb::getattr(p, "loom", nb::none());
              LOOM_CHECK(nb::isinstance<ir::ParallelType>(inner),
                         "shard_tensor: expected a ParallelType, got ",
                         nb::cast<std::string>(nb::repr(p)));
              type = nb::cast<ir::ParallelType>(inner);
            }
            return tensorToPython(
                multidevice::shardTensor(tensorFromPython(tensor), dim, mesh, device, type));
          },
          nb::arg("tensor"), nb::arg("axis"), nb::arg("device_id"),
          nb::arg("parallel_type") = nb::none(),
          "The block of `tensor` along `dim` that `device_id` holds when `dim` is sharded over "
          "the mesh axis of `parallel_type` (a view, no copy).")
      .def("__eq__", [](const ir::DeviceMesh& a, const ir::DeviceMesh& b) { return a == b; })
      .def("__repr__",
           [](const ir::DeviceMesh& mesh) { return "DeviceMesh(" + meshString(mesh) + ")"; });

  m.def(
      "shard_tensor_like",
      [](nb::handle tensor, const ir::TensorView* tv, int64_t device) {
        return tensorToPython(multidevice::shardTensor(tensorFromPython(tensor), tv, device));
      },
      nb::arg("tensor"), nb::arg("tv"), nb::arg("device_id"),
      "The shard of the global `tensor` that `device_id` holds under `tv`'s sharding (a view).");

  m.def(
      "sharded_axis",
      [](const ir::TensorView* tv, ir::ParallelType type) {
        return multidevice::shardedLogicalAxis(tv, type);
      },
      nb::arg("tv"), nb::arg("parallel_type"),
      "The logical dim of `tv` that `parallel_type` shards when the fusion runs, or -1.");

  nb::class_<multidevice::Communicator>(m, "Communicator",
                                        "This process's place among the ranks mpirun (or "
                                        "torchrun's variables) started.")
      .def_static("instance", &multidevice::Communicator::instance, nb::rv_policy::reference)
      .def("rank", &multidevice::Communicator::rank)
      .def("size", &multidevice::Communicator::size)
      .def("local_rank", &multidevice::Communicator::localRank)
      .def("local_size", &multidevice::Communicator::localSize)
      .def("source", &multidevice::Communicator::source)
      .def_static("has_mpi", &multidevice::Communicator::hasMpi)
      .def("barrier",
           [](multidevice::Communicator& c) {
             nb::gil_scoped_release release;
             c.barrier();
           })
      .def(
          "allgather",
          [](multidevice::Communicator& c, int64_t value) {
            nb::gil_scoped_release release;
            return c.allgather(value);
          },
          nb::arg("value"), "Every rank's value, in rank order.");
}

}  // namespace loom::python
