// SPDX-License-Identifier: Apache-2.0
// Kernel argument packing and vectorized-layout checks.
#include "exec/arguments.h"

#include <cstring>

#include "loom/ir/tensor_view.h"

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
    case DataType::Int8:
    case DataType::Int16:
    case DataType::UInt8:
    case DataType::UInt16:
    case DataType::UInt32:
    case DataType::UInt64: {
      // The kernel parameter is the element type: its bytes, little-endian, at the start of the
      // slot (ints exactly, floats converted as a cast would).
      const int64_t v = std::holds_alternative<int64_t>(arg) ? wrapInteger(std::get<int64_t>(arg), dtype)
                                                            : floatToInteger(d, dtype);
      std::memcpy(&a, &v, dataTypeSize(dtype));
      break;
    }
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

void checkResident(const LaunchParams& launch, const LoadedKernel& kernel,
                   const ComputeDevice& device, const std::string& name) {
  const int64_t blocks = int64_t{launch.grid[0]} * launch.grid[1] * launch.grid[2];
  const int64_t threads = int64_t{launch.block[0]} * launch.block[1] * launch.block[2];
  const int64_t resident = kernel.maxResidentBlocks(threads, launch.sharedBytes);
  LOOM_CHECK(blocks <= resident, "kernel ", name, " waits at grid barriers (a grid all-reduce), so "
             "its ", blocks, " blocks must all be resident at once, but ", device.name(),
             " holds at most ", resident, " blocks of ", threads, " threads with ",
             launch.sharedBytes, " bytes of dynamic shared memory (", launch.toString(), "): "
             "schedule fewer blocks (the outer-persistent heuristic takes its two-phase plan for "
             "such shapes) or split the fusion");
}

std::optional<std::pair<size_t, int64_t>> takeIndexError(const ComputeDevice& device,
                                                         const Tensor& words, CUstream stream) {
  std::vector<Tensor> host{words};
  device.copyOut(host, stream);
  const auto* w = static_cast<const int64_t*>(host[0].data());
  if (w[0] == 0) return std::nullopt;
  const std::pair<size_t, int64_t> failed{size_t(w[0] - 1), w[1]};
  device.zero(words, stream);
  return failed;
}

}  // namespace detail

}  // namespace loom::exec
