// SPDX-License-Identifier: Apache-2.0
// Tensors between Python and Loom, by DLPack and without copies.
//
// Import: a type that publishes the DLPack C exchange API (`type.__dlpack_c_exchange_api__`, a
// capsule "dlpack_exchange_api"; torch.Tensor does) is read through its function table, with one
// Python call (torch's is_neg(): a negative-bit tensor's memory is not its values, so it is
// resolved or refused, see NegativeBit in bindings.h); CUDA tensors then also give the
// framework's current stream on their device. Any
// other object goes through the Python protocol (`__dlpack_device__`, `__dlpack__`: numpy, cupy,
// jax, ...), versioned capsules preferred. Export: torch tensors through torch's exchange API once
// the Python layer registered it (loom._C._register_torch), else a loom._C.Tensor, which
// implements `__dlpack__`/`__dlpack_device__` for any consumer (numpy.from_dlpack, ...).
#include <Python.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <sstream>
#include <utility>
#include <vector>

#include "bindings.h"
#include "convert.h"
#include "loom/tensor/dlpack.h"

namespace loom::python {

namespace {

// The DLPack C exchange API (DLPack 1.3's DLPackExchangeAPI), declared here like the rest of
// Loom's DLPack ABI (loom/tensor/dlpack.h): a table of C functions a framework publishes on its
// tensor type. Only the fields up to current_work_stream are read, after checking major == 1.
struct ExchangeApiHeader {
  dlpack::DLPackVersion version;
  ExchangeApiHeader* prev_api;
};
struct ExchangeApi {
  ExchangeApiHeader header;
  int (*managed_tensor_allocator)(dlpack::DLTensor*, dlpack::DLManagedTensorVersioned**, void*,
                                  void (*)(void*, const char*, const char*));
  int (*managed_tensor_from_py_object_no_sync)(void* py_object,
                                               dlpack::DLManagedTensorVersioned** out);
  int (*managed_tensor_to_py_object_no_sync)(dlpack::DLManagedTensorVersioned* tensor,
                                             void** out_py_object);
  int (*dltensor_from_py_object_no_sync)(void* py_object, dlpack::DLTensor* out);
  int (*current_work_stream)(dlpack::DLDeviceType device_type, int32_t device_id,
                             void** out_current_stream);
};

// Per Python type: its exchange API or nullptr (looked up once per type; a handful of types).
std::vector<std::pair<PyTypeObject*, const ExchangeApi*>> g_type_apis;
const ExchangeApi* g_torch_api = nullptr;
// torch.Tensor once the Python layer registered it: the type whose negative bit is checked.
PyTypeObject* g_torch_type = nullptr;

const ExchangeApi* apiFromCapsule(nb::handle capsule) {
  if (!PyCapsule_IsValid(capsule.ptr(), "dlpack_exchange_api")) return nullptr;
  auto* api =
      static_cast<const ExchangeApi*>(PyCapsule_GetPointer(capsule.ptr(), "dlpack_exchange_api"));
  if (api == nullptr || api->header.version.major != 1) return nullptr;
  if (api->managed_tensor_from_py_object_no_sync == nullptr ||
      api->managed_tensor_to_py_object_no_sync == nullptr || api->current_work_stream == nullptr) {
    return nullptr;
  }
  return api;
}

const ExchangeApi* exchangeApiOf(PyTypeObject* type) {
  for (const auto& [t, api] : g_type_apis) {
    if (t == type) return api;
  }
  const ExchangeApi* api = nullptr;
  PyObject* capsule =
      PyObject_GetAttrString(reinterpret_cast<PyObject*>(type), "__dlpack_c_exchange_api__");
  if (capsule == nullptr) {
    PyErr_Clear();
  } else {
    api = apiFromCapsule(capsule);
    Py_DECREF(capsule);
  }
  if (g_type_apis.size() < 64) g_type_apis.emplace_back(type, api);
  return api;
}

// The stream a consumer passes to __dlpack__ for a CUDA tensor: 1 is CUDA's legacy default
// stream, which is what Loom runs on when the producer cannot name its current stream.
constexpr int64_t kLegacyDefaultStream = 1;

Tensor fromCapsule(nb::handle capsule) {
  PyObject* c = capsule.ptr();
  if (PyCapsule_IsValid(c, "dltensor_versioned")) {
    auto* managed = static_cast<dlpack::DLManagedTensorVersioned*>(
        PyCapsule_GetPointer(c, "dltensor_versioned"));
    Tensor t = fromDLPack(managed);  // on a throw the capsule still owns it
    PyCapsule_SetName(c, "used_dltensor_versioned");
    return t;
  }
  if (PyCapsule_IsValid(c, "dltensor")) {
    auto* managed = static_cast<dlpack::DLManagedTensor*>(PyCapsule_GetPointer(c, "dltensor"));
    Tensor t = fromDLPack(managed);
    PyCapsule_SetName(c, "used_dltensor");
    return t;
  }
  LOOM_THROW("DLPack: __dlpack__ returned a ", pyTypeName(capsule),
             ", not an unused capsule named \"dltensor_versioned\" or \"dltensor\"");
}

Tensor fromProtocol(nb::handle obj, void** stream) {
  nb::object dev = obj.attr("__dlpack_device__")();
  const int64_t device_type =
      int64FromPython(dev[0], "DLPack: __dlpack_device__()[0] (the device type)");
  bool cuda = device_type == dlpack::kDLCUDA || device_type == dlpack::kDLCUDAManaged;
  nb::object stream_arg = cuda ? nb::object(nb::int_(kLegacyDefaultStream)) : nb::none();
  nb::object fn = obj.attr("__dlpack__");
  nb::object capsule;
  try {
    capsule = fn(nb::arg("stream") = stream_arg, nb::arg("max_version") = nb::make_tuple(
                                                     dlpack::kMajorVersion, dlpack::kMinorVersion));
  } catch (nb::python_error& e) {
    if (!e.matches(PyExc_TypeError)) throw;
    capsule = fn(nb::arg("stream") = stream_arg);  // a producer older than DLPack 1.0
  }
  if (cuda && stream != nullptr) *stream = nullptr;  // the legacy default stream
  return fromCapsule(capsule);
}

/// A Loom tensor as a Python object that any DLPack consumer can read.
struct PyTensor {
  Tensor tensor;
};

void capsuleDeleterVersioned(PyObject* capsule) {
  if (PyCapsule_IsValid(capsule, "dltensor_versioned")) {
    auto* m = static_cast<dlpack::DLManagedTensorVersioned*>(
        PyCapsule_GetPointer(capsule, "dltensor_versioned"));
    if (m != nullptr && m->deleter != nullptr) m->deleter(m);
  }
}

void capsuleDeleterLegacy(PyObject* capsule) {
  if (PyCapsule_IsValid(capsule, "dltensor")) {
    auto* m = static_cast<dlpack::DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
    if (m != nullptr && m->deleter != nullptr) m->deleter(m);
  }
}

nb::object exportCapsule(const PyTensor& self, nb::handle stream, nb::handle max_version,
                         nb::handle dl_device, nb::handle copy) {
  (void)stream;  // outputs are ready on the stream the fusion ran on (docs/python.md)
  LOOM_CHECK(self.tensor.defined(), "__dlpack__: the tensor is undefined");
  Tensor t = self.tensor;
  Device d = t.device();
  if (!dl_device.is_none()) {
    const int64_t type = int64FromPython(dl_device[0], "__dlpack__: dl_device[0]");
    const int64_t id = int64FromPython(dl_device[1], "__dlpack__: dl_device[1]");
    bool same = d.isCpu() ? type == dlpack::kDLCPU : (type == dlpack::kDLCUDA && id == d.index);
    if (!same) {
      PyErr_SetString(PyExc_BufferError,
                      "__dlpack__: Loom does not move tensors between devices on export");
      throw nb::python_error();
    }
  }
  const int copy_requested = copy.is_none() ? 0 : PyObject_IsTrue(copy.ptr());
  if (copy_requested < 0) throw nb::python_error();
  if (copy_requested != 0) {
    if (!d.isCpu()) {
      PyErr_SetString(PyExc_BufferError, "__dlpack__: copy=True of a CUDA tensor is not supported");
      throw nb::python_error();
    }
    t = t.contiguous();
  }
  bool versioned =
      !max_version.is_none() && int64FromPython(max_version[0], "__dlpack__: max_version[0]") >= 1;
  if (versioned) {
    dlpack::DLManagedTensorVersioned* m = toDLPackVersioned(t);
    if (copy_requested != 0) m->flags |= dlpack::kFlagBitmaskIsCopied;
    PyObject* c = PyCapsule_New(m, "dltensor_versioned", capsuleDeleterVersioned);
    if (c == nullptr) {
      m->deleter(m);
      throw nb::python_error();
    }
    return nb::steal(c);
  }
  dlpack::DLManagedTensor* m = toDLPack(t);
  PyObject* c = PyCapsule_New(m, "dltensor", capsuleDeleterLegacy);
  if (c == nullptr) {
    m->deleter(m);
    throw nb::python_error();
  }
  return nb::steal(c);
}

std::string deviceString(Device d) {
  std::ostringstream os;
  os << d;
  return os.str();
}

// True when the torch tensor's method `name` (is_neg, is_conj) answers True.
bool torchBit(nb::handle obj, PyObject* name) {
  PyObject* r = PyObject_CallMethodNoArgs(obj.ptr(), name);
  if (r == nullptr) throw nb::python_error();
  const bool set = r == Py_True;
  Py_DECREF(r);
  return set;
}

// True for a torch tensor with its negative bit set: a lazily negated view (x._neg_view(),
// x.conj().imag) whose memory holds the values un-negated. DLPack has no field for the bit, so
// torch's exporters hand over that memory as it is. One method call per torch tensor argument.
bool hasNegativeBit(nb::handle obj) {
  if (g_torch_type == nullptr || !PyObject_TypeCheck(obj.ptr(), g_torch_type)) return false;
  static PyObject* const name = PyUnicode_InternFromString("is_neg");
  return torchBit(obj, name);
}

// The same for the conjugate bit of a complex torch tensor (x.conj()): its memory holds the values
// unconjugated.
bool hasConjugateBit(nb::handle obj) {
  if (g_torch_type == nullptr || !PyObject_TypeCheck(obj.ptr(), g_torch_type)) return false;
  static PyObject* const is_complex = PyUnicode_InternFromString("is_complex");
  if (!torchBit(obj, is_complex)) return false;
  static PyObject* const name = PyUnicode_InternFromString("is_conj");
  return torchBit(obj, name);
}

}  // namespace

bool isTensorLike(nb::handle obj) {
  if (nb::isinstance<PyTensor>(obj)) return true;
  if (exchangeApiOf(Py_TYPE(obj.ptr())) != nullptr) return true;
  return nb::hasattr(obj, "__dlpack__");
}

Tensor tensorFromPython(nb::handle obj, void** stream, NegativeBit negative) {
  if (nb::isinstance<PyTensor>(obj)) return nb::cast<const PyTensor&>(obj).tensor;
  if (hasNegativeBit(obj)) {
    LOOM_CHECK(negative == NegativeBit::Resolve,
               "from_dlpack: the torch tensor has its negative bit set (a lazily negated view "
               "such as x._neg_view() or x.conj().imag); its memory holds the values "
               "un-negated, so Loom cannot view it: pass x.resolve_neg() (a copy)");
    // A fresh tensor holding the values (on the tensor's device and torch's current stream).
    nb::object resolved = obj.attr("resolve_neg")();
    return tensorFromPython(resolved, stream, NegativeBit::Refuse);
  }
  if (hasConjugateBit(obj)) {
    LOOM_CHECK(negative == NegativeBit::Resolve,
               "from_dlpack: the torch tensor has its conjugate bit set (a lazily conjugated view "
               "such as x.conj()); its memory holds the values unconjugated, so Loom cannot view "
               "it: pass x.resolve_conj() (a copy)");
    nb::object resolved = obj.attr("resolve_conj")();
    return tensorFromPython(resolved, stream, NegativeBit::Refuse);
  }
  if (const ExchangeApi* api = exchangeApiOf(Py_TYPE(obj.ptr()))) {
    dlpack::DLManagedTensorVersioned* managed = nullptr;
    if (api->managed_tensor_from_py_object_no_sync(obj.ptr(), &managed) != 0) {
      throw nb::python_error();
    }
    Tensor t;
    try {
      t = fromDLPack(managed);
    } catch (...) {
      if (managed->deleter != nullptr) managed->deleter(managed);
      throw;
    }
    if (stream != nullptr && t.device().isCuda()) {
      void* s = nullptr;
      if (api->current_work_stream(dlpack::kDLCUDA, int32_t(t.device().index), &s) != 0) {
        throw nb::python_error();
      }
      *stream = s;
    }
    return t;
  }
  if (nb::hasattr(obj, "__dlpack__")) return fromProtocol(obj, stream);
  LOOM_THROW(
      "expected a tensor (torch.Tensor, numpy.ndarray or another object with __dlpack__), "
      "got ",
      pyTypeName(obj));
}

nb::object tensorToPython(const Tensor& t) {
  if (!t.defined()) return nb::none();
  if (g_torch_api != nullptr) {
    dlpack::DLManagedTensorVersioned* m = toDLPackVersioned(t);
    void* out = nullptr;
    if (g_torch_api->managed_tensor_to_py_object_no_sync(m, &out) != 0) throw nb::python_error();
    return nb::steal(static_cast<PyObject*>(out));
  }
  return nb::cast(PyTensor{t});
}

void bindTensors(nb::module_& m) {
  nb::enum_<DataType>(m, "DataType", "Loom's element types (loom/tensor/data_type.h).")
      .value("Bool", DataType::Bool)
      .value("Int32", DataType::Int32)
      .value("Int64", DataType::Int64)
      .value("Float16", DataType::Float16)
      .value("BFloat16", DataType::BFloat16)
      .value("Float32", DataType::Float32)
      .value("Float64", DataType::Float64)
      .value("ComplexFloat", DataType::ComplexFloat)
      .value("ComplexDouble", DataType::ComplexDouble)
      .value("Int8", DataType::Int8)
      .value("Int16", DataType::Int16)
      .value("UInt8", DataType::UInt8)
      .value("UInt16", DataType::UInt16)
      .value("UInt32", DataType::UInt32)
      .value("UInt64", DataType::UInt64)
      .value("Float8_e4m3fn", DataType::Float8_e4m3fn)
      .value("Float8_e5m2", DataType::Float8_e5m2);
  m.def("data_type_name", [](DataType d) { return std::string(dataTypeName(d)); });

  nb::class_<PyTensor>(m, "Tensor",
                       "A Loom tensor (a view of memory Loom or a framework owns). Read it with "
                       "torch.from_dlpack or numpy.from_dlpack; no copy is made.")
      .def_prop_ro("shape", [](const PyTensor& s) { return s.tensor.sizes(); })
      .def_prop_ro(
          "strides", [](const PyTensor& s) { return s.tensor.strides(); }, "Strides in elements.")
      .def_prop_ro("dtype", [](const PyTensor& s) { return s.tensor.dtype(); })
      .def_prop_ro("device", [](const PyTensor& s) { return deviceString(s.tensor.device()); })
      .def_prop_ro("data_ptr", [](const PyTensor& s) { return uintptr_t(s.tensor.data()); })
      .def("__dlpack__", &exportCapsule, nb::kw_only(), nb::arg("stream") = nb::none(),
           nb::arg("max_version") = nb::none(), nb::arg("dl_device") = nb::none(),
           nb::arg("copy") = nb::none())
      .def("__dlpack_device__",
           [](const PyTensor& s) {
             Device d = s.tensor.device();
             return std::make_pair(int(d.isCpu() ? dlpack::kDLCPU : dlpack::kDLCUDA),
                                   d.isCpu() ? 0 : d.index);
           })
      .def("__repr__", [](const PyTensor& s) {
        return "loom.Tensor(" + describe(s.tensor) + ", " + deviceString(s.tensor.device()) + ")";
      });

  m.def(
      "from_dlpack",
      [](nb::handle obj) { return PyTensor{tensorFromPython(obj, nullptr, NegativeBit::Refuse)}; },
      nb::arg("tensor"),
      "A Loom tensor viewing `tensor` (torch, numpy or any DLPack producer), without a copy. A "
      "torch tensor with its negative bit set is refused (its memory is not its values).");
  m.def(
      "to_python", [](const PyTensor& t) { return tensorToPython(t.tensor); }, nb::arg("tensor"),
      "The tensor as a torch tensor when torch is registered, else as itself.");
  m.def(
      "_register_torch",
      [](nb::handle tensor_type) {
        LOOM_CHECK(PyType_Check(tensor_type.ptr()), "_register_torch: expected torch.Tensor");
        g_torch_type = reinterpret_cast<PyTypeObject*>(tensor_type.ptr());
        Py_INCREF(tensor_type.ptr());  // kept for the life of the process, like the module
        nb::object capsule = nb::getattr(tensor_type, "__dlpack_c_exchange_api__", nb::none());
        g_torch_api = capsule.is_none() ? nullptr : apiFromCapsule(capsule);
        return g_torch_api != nullptr;
      },
      nb::arg("tensor_type"),
      "Makes outputs torch tensors through torch's DLPack C exchange API; returns False when "
      "this torch has none (the Python layer then converts with torch.from_dlpack).");
}

std::string pyTypeName(nb::handle obj) {
  return nb::cast<std::string>(
      nb::str(nb::handle(reinterpret_cast<PyObject*>(Py_TYPE(obj.ptr()))).attr("__qualname__")));
}

}  // namespace loom::python
