// SPDX-License-Identifier: Apache-2.0
// Kernel argument packing, vectorized-layout checks and the device rules for run() arguments.
#include "exec/arguments.h"

#include <cstring>

#include "loom/exec/kernel_executor.h"
#include "loom/ir/tensor_view.h"
#ifdef LOOM_HAVE_CUDA_BACKEND
#include "loom/backend/cuda/memory.h"
#endif

namespace loom::exec {

namespace detail {

ScalarArg packScalar(const eval::Argument& arg, DataType dtype, const std::string& name) {
  double d = 0;
  if (auto* x = std::get_if<double>(&arg)) d = *x;
  else if (auto* i = std::get_if<int64_t>(&arg)) d = double(*i);
  else if (auto* b = std::get_if<bool>(&arg)) d = *b ? 1.0 : 0.0;
  else LOOM_THROW("scalar input ", name, " was given a tensor argument");
  ScalarArg a{};
  switch (dtype) {
    case DataType::Float64: a.f64 = d; break;
    case DataType::Float32: a.f32 = float(d); break;
    case DataType::Int64:
      a.i64 = std::holds_alternative<int64_t>(arg) ? std::get<int64_t>(arg) : int64_t(d);
      break;
    case DataType::Int32: a.i32 = int32_t(d); break;
    case DataType::Bool: a.b = d != 0; break;
    default: LOOM_THROW("scalar input ", name, " has type ", dataTypeName(dtype),
                        ", which kernel parameters do not support");
  }
  return a;
}

size_t appendTensorBlob(std::vector<int64_t>& blob, std::span<const int64_t> sizes,
                        std::span<const int64_t> strides, DataType index_type) {
  size_t pointer = blob.size();
  blob.push_back(0);
  if (index_type == DataType::Int64) {
    blob.insert(blob.end(), sizes.begin(), sizes.end());
    blob.insert(blob.end(), strides.begin(), strides.end());
    return pointer;
  }
  // loom::Tensor<T, N, int>: 2N int32 after the pointer, padded to 8 bytes.
  std::vector<int32_t> narrow;
  for (int64_t s : sizes) narrow.push_back(int32_t(s));
  for (int64_t s : strides) narrow.push_back(int32_t(s));
  size_t at = blob.size();
  blob.resize(at + (narrow.size() + 1) / 2, 0);
  if (!narrow.empty()) std::memcpy(blob.data() + at, narrow.data(), narrow.size() * sizeof(int32_t));
  return pointer;
}

void checkVectorLayout(const kir::Kernel::VectorizedParam& v, const void* data,
                       std::span<const int64_t> sizes, std::span<const int64_t> strides) {
  const kir::Buffer* b = v.buffer;
  const int64_t width = v.width;
  std::string name = b->tv->toString();
  int64_t bytes = width * int64_t(dataTypeSize(b->dtype));
  LOOM_CHECK(reinterpret_cast<uintptr_t>(data) % uint64_t(bytes) == 0, "vectorized tensor ",
             name, ": data pointer ", data, " is not aligned to the vector of ", width,
             " elements (", bytes, " bytes)");
  const int64_t rank = int64_t(sizes.size());
  if (rank == 0) return;
  // The spanned dims, innermost first, start with a dense run (each stride the product of the
  // sizes inside) that holds a multiple of the width: a vector then never leaves the run, so its
  // lanes are adjacent in memory. Spanned dims past the run (padded rows) and all other dims need
  // strides that keep every vector aligned: multiples of the width.
  std::vector<bool> in_run(size_t(rank), false);
  int64_t dense = 1;
  size_t run_dims = 0;
  for (auto it = v.dims.rbegin(); it != v.dims.rend(); ++it) {
    LOOM_ASSERT(*it >= 0 && *it < rank, "vectorized dim out of range");
    size_t d = size_t(*it);
    if (sizes[d] != 1 && strides[d] != dense) {
      LOOM_CHECK(dense != 1, "vectorized tensor ", name, ": dim ", d, " has stride ", strides[d],
                 " but vectorizing it needs 1 (contiguous)");
      break;
    }
    in_run[d] = true;
    dense *= sizes[d];
    ++run_dims;
  }
  if (v.dims.size() <= 1) {
    int64_t d = v.dims.empty() ? rank - 1 : v.dims[0];
    LOOM_CHECK(sizes[size_t(d)] % width == 0, "vectorized tensor ", name, ": the size ",
               sizes[size_t(d)], " of dim ", d, " is not a multiple of the vector width ", width);
  } else {
    LOOM_CHECK(dense % width == 0, "vectorized tensor ", name, ": the ",
               run_dims == v.dims.size() ? "" : "dense innermost ", run_dims, " of the ",
               v.dims.size(), " merged dims it is vectorized over hold ", dense,
               " elements, which is not a multiple of the vector width ", width);
  }
  for (size_t d = 0; d < size_t(rank); ++d) {
    if (in_run[d] || sizes[d] == 1) continue;
    LOOM_CHECK(strides[d] % width == 0, "vectorized tensor ", name, ": stride ", strides[d],
               " of dim ", d, " is not a multiple of the vector width ", width);
  }
}

void throwMisalignedOutput(const kir::Buffer* b, const void* data, int64_t bytes) {
  LOOM_THROW("vectorized output ", b->tv->toString(), ": the allocator returned ", data,
             ", which is not aligned to the vector of ", bytes, " bytes");
}

}  // namespace detail

bool checkArgumentDevices(const ir::Fusion& fusion, std::span<const eval::Argument> args,
                          Backend backend, int device) {
  const auto& inputs = fusion.inputs();
  // The first tensor argument sets what the others must match on the cuda backend.
  const Tensor* first = nullptr;
  size_t first_pos = 0;
  for (size_t i = 0; i < inputs.size() && i < args.size(); ++i) {
    const Tensor* t = std::get_if<Tensor>(&args[i]);
    if (t == nullptr || !t->defined() || !inputs[i]->isA<ir::TensorView>()) continue;
    if (backend != Backend::Cuda) {
      LOOM_CHECK(t->device().isCpu(), "input ", i, " (", inputs[i]->toString(),
                 ") is a CUDA tensor (", describe(*t), ") but the executor's backend is ",
                 backendName(backend), ": expected a host (cpu) tensor");
      continue;
    }
    if (t->device().isCuda()) {
      LOOM_CHECK(t->device().index == device, "input ", i, " (", inputs[i]->toString(),
                 ") is on ", t->device(), ": expected a CUDA tensor on GPU ", device,
                 ", where the kernels are loaded");
    }
    if (first == nullptr) {
      first = t;
      first_pos = i;
      continue;
    }
    LOOM_CHECK(t->device().type == first->device().type, "input ", i, " (",
               inputs[i]->toString(), ") is on ", t->device(), " but input ", first_pos, " (",
               inputs[first_pos]->toString(), ") is on ", first->device(),
               ": expected the tensor inputs of one run to be all CUDA tensors (device-resident) "
               "or all host tensors (copied in and out)");
  }
  return first != nullptr && first->device().isCuda();
}

std::vector<eval::Argument> metadataViews(std::span<const eval::Argument> args) {
  std::vector<eval::Argument> views(args.begin(), args.end());
  for (eval::Argument& a : views) {
    Tensor* t = std::get_if<Tensor>(&a);
    if (t == nullptr || !t->defined() || t->device().isCpu()) continue;
    *t = Tensor::fromBlob(t->data(), t->sizes(), t->strides(), t->dtype(), Device::cpu());
  }
  return views;
}

std::vector<eval::Argument> checkedMetadataViews(const ir::Fusion& fusion,
                                                 std::span<const eval::Argument> args,
                                                 Backend backend, int device) {
  (void)checkArgumentDevices(fusion, args, backend, device);
  return metadataViews(args);
}

bool hasHostTensor(std::span<const eval::Argument> args) {
  for (const eval::Argument& a : args) {
    const Tensor* t = std::get_if<Tensor>(&a);
    if (t != nullptr && t->defined() && t->device().isCpu()) return true;
  }
  return false;
}

std::vector<eval::Argument> copyArgumentsToDevice(const ir::Fusion& fusion,
                                                  std::span<const eval::Argument> args,
                                                  [[maybe_unused]] CUstream stream,
                                                  int device) {
  (void)checkArgumentDevices(fusion, args, Backend::Cuda, device);
  std::vector<eval::Argument> device_args(args.begin(), args.end());
#ifdef LOOM_HAVE_CUDA_BACKEND
  for (eval::Argument& a : device_args) {
    Tensor* t = std::get_if<Tensor>(&a);
    if (t != nullptr && t->defined()) *t = cuda::toDeviceSameLayout(*t, device, stream);
  }
  return device_args;
#else
  LOOM_THROW("this Loom build has no CUDA backend (cuda.h was not found at configure time)");
#endif
}

void copyOutputsToHost(std::vector<Tensor>& outputs, [[maybe_unused]] CUstream stream) {
#ifdef LOOM_HAVE_CUDA_BACKEND
  for (Tensor& t : outputs) t = cuda::toHost(t, stream);
#else
  LOOM_THROW("this Loom build has no CUDA backend (cuda.h was not found at configure time)");
#endif
}

}  // namespace loom::exec
