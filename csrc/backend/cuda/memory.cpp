// SPDX-License-Identifier: Apache-2.0
// CUDA tensors: allocation through a DeviceAllocator, host<->device copies, byte fills.
#include "loom/backend/cuda/memory.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <type_traits>
#include <vector>

#include "backend/cuda/driver_api.h"

namespace loom::cuda {
namespace {

using ::loom::detail::concat;

CUdeviceptr devicePtr(const void* p) {
  return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(p));
}

// Elements from data() to the last element the view reaches, plus one (0 for an empty tensor).
int64_t spannedElements(const Tensor& t) {
  int64_t last = 0;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.size(d) == 0) return 0;
    LOOM_CHECK(t.stride(d) >= 0, "tensor ", describe(t), " has a negative stride on axis ", d,
               "; device copies need non-negative strides");
    last += (t.size(d) - 1) * t.stride(d);
  }
  return last + 1;
}

// Frees a CUDA tensor's memory. The deleter makes the device current itself: the last handle may
// go on any thread. The default allocator lives for the process, so its deleter holds no
// allocator at all: 16 trivially copyable bytes, which std::function keeps inline (no heap
// allocation per tensor, no reference count).
void freeCudaMemory(DeviceAllocator& allocator, int device, CUstream stream, void* p) noexcept {
  if (p == nullptr) return;
  try {
    (void)detail::enterDevice(device, "freeing a CUDA tensor");
    allocator.free(p, stream);
  } catch (const std::exception& e) {
    std::cerr << "loom: freeing a CUDA tensor failed: " << e.what() << "\n";
  }
}

struct DefaultAllocatorDeleter {
  CUstream stream;
  int device;
  void operator()(void* p) const noexcept {
    freeCudaMemory(defaultAllocatorRef(), device, stream, p);
  }
};
static_assert(sizeof(DefaultAllocatorDeleter) <= 16 &&
                  std::is_trivially_copyable_v<DefaultAllocatorDeleter>,
              "small enough for std::function's inline storage");

}  // namespace

Tensor emptyCuda(std::vector<int64_t> sizes, DataType dtype, int device, CUstream stream,
                 std::shared_ptr<DeviceAllocator> allocator) {
  (void)detail::enterDevice(device, "allocating a CUDA tensor");
  int64_t numel = 1;
  for (int64_t s : sizes) {
    LOOM_CHECK(s >= 0, "emptyCuda: negative size ", s, " in a tensor of rank ", sizes.size());
    numel *= s;
  }
  size_t nbytes = size_t(numel) * dataTypeSize(dtype);
  std::shared_ptr<Storage> storage;
  if (!allocator || allocator.get() == &defaultAllocatorRef()) {
    void* data = defaultAllocatorRef().allocate(nbytes, stream);
    storage = std::make_shared<Storage>(data, nbytes, Device::cuda(device),
                                        DefaultAllocatorDeleter{stream, device});
  } else {
    void* data = allocator->allocate(nbytes, stream);
    storage = std::make_shared<Storage>(
        data, nbytes, Device::cuda(device),
        [allocator = std::move(allocator), device, stream](void* p) {
          freeCudaMemory(*allocator, device, stream, p);
        });
  }
  auto strides = Tensor::contiguousStrides(sizes);
  return Tensor(std::move(storage), dtype, std::move(sizes), std::move(strides));
}

void copyHostToDevice(void* dst, const void* src, size_t nbytes, int device, CUstream stream) {
  if (nbytes == 0) return;
  const auto& api = detail::enterDevice(device, "copying to a GPU");
  detail::checkResult(api.cuMemcpyHtoDAsync(devicePtr(dst), src, nbytes, stream),
                      concat("cuMemcpyHtoDAsync of ", nbytes, " bytes to GPU ", device));
  detail::checkResult(api.cuStreamSynchronize(stream), "cuStreamSynchronize after a copy to the GPU");
}

void copyDeviceToHost(void* dst, const void* src, size_t nbytes, int device, CUstream stream) {
  if (nbytes == 0) return;
  const auto& api = detail::enterDevice(device, "copying from a GPU");
  detail::checkResult(api.cuMemcpyDtoHAsync(dst, devicePtr(src), nbytes, stream),
                      concat("cuMemcpyDtoHAsync of ", nbytes, " bytes from GPU ", device));
  detail::checkResult(api.cuStreamSynchronize(stream), "cuStreamSynchronize after a copy from the GPU");
}

void copyDeviceToDevice(void* dst, const void* src, size_t nbytes, int device, CUstream stream) {
  if (nbytes == 0) return;
  const auto& api = detail::enterDevice(device, "copying within a GPU");
  detail::checkResult(api.cuMemcpyDtoDAsync(devicePtr(dst), devicePtr(src), nbytes, stream),
                      concat("cuMemcpyDtoDAsync of ", nbytes, " bytes on GPU ", device));
}

namespace {

// A dim of a strided copy: its extent and its strides (elements) in the two tensors.
struct CopyDim {
  int64_t size;
  int64_t to;
  int64_t from;
};

// The dims of more than one element, ordered as `src` is laid out (the largest stride first),
// with neighbours that are contiguous in both tensors merged.
std::vector<CopyDim> copyDims(const Tensor& dst, const Tensor& src) {
  std::vector<CopyDim> dims;
  for (int64_t d = 0; d < dst.dim(); ++d) {
    if (dst.size(d) > 1) dims.push_back({dst.size(d), dst.stride(d), src.stride(d)});
  }
  std::stable_sort(dims.begin(), dims.end(),
                   [](const CopyDim& a, const CopyDim& b) { return a.from > b.from; });
  std::vector<CopyDim> merged;
  for (const CopyDim& d : dims) {
    if (!merged.empty() && merged.back().to == d.to * d.size &&
        merged.back().from == d.from * d.size) {
      merged.back() = {merged.back().size * d.size, d.to, d.from};
    } else {
      merged.push_back(d);
    }
  }
  return merged;
}

}  // namespace

void copyElements(const Tensor& dst, const Tensor& src, CUstream stream) {
  LOOM_CHECK(
      dst.defined() && src.defined() && dst.device().isCuda() && src.device() == dst.device(),
      "copyElements: ", describe(src), " and ", describe(dst), " must be CUDA tensors on one GPU");
  LOOM_CHECK(dst.sizes() == src.sizes() && dst.dtype() == src.dtype(),
             "copyElements: ", describe(src), " copied into ", describe(dst));
  if (spannedElements(dst) == 0 || spannedElements(src) == 0) return;  // also checks strides
  const int device = dst.device().index;
  const auto& api = detail::enterDevice(device, "copying within a GPU");
  const auto item = int64_t(dst.itemSize());
  std::vector<CopyDim> dims = copyDims(dst, src);
  // A row: one element, or the innermost run contiguous in both; rows step along the next dim.
  int64_t width = item;
  if (!dims.empty() && dims.back().to == 1 && dims.back().from == 1) {
    width = dims.back().size * item;
    dims.pop_back();
  }
  CopyDim rows{1, 0, 0};
  if (!dims.empty()) {
    rows = dims.back();
    dims.pop_back();
  }
  const int64_t to_pitch = rows.size > 1 ? rows.to * item : width;
  const int64_t from_pitch = rows.size > 1 ? rows.from * item : width;
  // The driver takes pitches up to 2^31 - 1 and no smaller than a row; other rows go one by one.
  constexpr int64_t kMaxPitch = (int64_t{1} << 31) - 1;
  const bool pitched =
      to_pitch >= width && from_pitch >= width && to_pitch <= kMaxPitch && from_pitch <= kMaxPitch;
  auto* to_base = static_cast<char*>(dst.data());
  const auto* from_base = static_cast<const char*>(src.data());
  std::vector<int64_t> index(dims.size(), 0);
  int64_t outer = 1;
  for (const CopyDim& d : dims) outer *= d.size;
  int64_t to = 0;  // element offsets of the current outer index
  int64_t from = 0;
  for (int64_t i = 0; i < outer; ++i) {
    if (pitched) {
      CUDA_MEMCPY2D copy;
      std::memset(&copy, 0, sizeof(copy));
      copy.srcMemoryType = CU_MEMORYTYPE_DEVICE;
      copy.srcDevice = devicePtr(from_base + from * item);
      copy.srcPitch = size_t(from_pitch);
      copy.dstMemoryType = CU_MEMORYTYPE_DEVICE;
      copy.dstDevice = devicePtr(to_base + to * item);
      copy.dstPitch = size_t(to_pitch);
      copy.WidthInBytes = size_t(width);
      copy.Height = size_t(rows.size);
      detail::checkResult(
          api.cuMemcpy2DAsync(&copy, stream),
          concat("cuMemcpy2DAsync of ", rows.size, " rows of ", width, " bytes on GPU ", device));
    } else {
      for (int64_t r = 0; r < rows.size; ++r) {
        copyDeviceToDevice(to_base + (to + r * rows.to) * item,
                           from_base + (from + r * rows.from) * item, size_t(width), device,
                           stream);
      }
    }
    for (size_t d = dims.size(); d-- > 0;) {  // the next outer index, the innermost fastest
      to += dims[d].to;
      from += dims[d].from;
      if (++index[d] < dims[d].size) break;
      to -= dims[d].to * dims[d].size;
      from -= dims[d].from * dims[d].size;
      index[d] = 0;
    }
  }
}

Tensor toDevice(const Tensor& host, int device, CUstream stream,
                std::shared_ptr<DeviceAllocator> allocator) {
  LOOM_CHECK(host.defined(), "toDevice: the tensor is undefined");
  LOOM_CHECK(host.device().isCpu(), "toDevice: tensor ", describe(host), " is on ", host.device(),
             ", expected a host tensor");
  Tensor dense = host.isContiguous() ? host : host.contiguous();
  Tensor out = emptyCuda(dense.sizes(), dense.dtype(), device, stream, std::move(allocator));
  copyHostToDevice(out.data(), dense.data(), size_t(dense.numel()) * dense.itemSize(), device,
                   stream);
  return out;
}

Tensor toDeviceSameLayout(const Tensor& host, int device, CUstream stream) {
  LOOM_CHECK(host.defined(), "toDeviceSameLayout: the tensor is undefined");
  LOOM_CHECK(host.device().isCpu(), "toDeviceSameLayout: tensor ", describe(host), " is on ",
             host.device(), ", expected a host tensor");
  const int64_t span = spannedElements(host);
  Tensor storage = emptyCuda({span}, host.dtype(), device, stream);
  if (span > 0) {
    copyHostToDevice(storage.data(), host.data(), size_t(span) * host.itemSize(), device, stream);
  }
  return Tensor(storage.storage(), host.dtype(), host.sizes(), host.strides());
}

Tensor toHost(const Tensor& device, CUstream stream) {
  LOOM_CHECK(device.defined(), "toHost: the tensor is undefined");
  LOOM_CHECK(device.device().isCuda(), "toHost: tensor ", describe(device), " is on ",
             device.device(), ", expected a CUDA tensor");
  int64_t span = spannedElements(device);
  size_t nbytes = size_t(span) * device.itemSize();
  auto storage = Storage::allocateHost(nbytes);
  copyDeviceToHost(storage->data(), device.data(), nbytes, device.device().index, stream);
  return Tensor(std::move(storage), device.dtype(), device.sizes(), device.strides());
}

void fillBytes(const Tensor& device, uint8_t value, CUstream stream) {
  LOOM_CHECK(device.defined() && device.device().isCuda(), "fillBytes: tensor ", describe(device),
             " is not a CUDA tensor");
  size_t nbytes = size_t(spannedElements(device)) * device.itemSize();
  if (nbytes == 0) return;
  const auto& api = detail::enterDevice(device.device().index, "filling a CUDA tensor");
  detail::checkResult(api.cuMemsetD8Async(devicePtr(device.data()), value, nbytes, stream),
                      "cuMemsetD8Async");
}

}  // namespace loom::cuda
