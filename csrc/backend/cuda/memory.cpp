// SPDX-License-Identifier: Apache-2.0
// CUDA tensors: allocation through a DeviceAllocator, host<->device copies, byte fills.
#include "loom/backend/cuda/memory.h"

#include <cstdint>
#include <cstring>
#include <iostream>
#include <type_traits>

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
