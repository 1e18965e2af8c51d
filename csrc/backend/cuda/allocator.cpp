// SPDX-License-Identifier: Apache-2.0
// The default stream-ordered device allocator.
#include "loom/backend/cuda/allocator.h"

#include <cstdint>
#include <iostream>
#include <mutex>
#include <set>

#include "backend/cuda/driver_api.h"

namespace loom::cuda {

namespace {

// Keeps freed blocks in the device's default pool: its default release threshold (0) hands memory
// back to the OS at every synchronization, which makes each later allocation a slow driver call.
// Best effort: a failure only costs speed.
void keepPoolMemory(const detail::DriverApi& api, CUdevice dev) {
  static std::mutex mutex;
  static std::set<CUdevice> done;
  std::lock_guard lock(mutex);
  if (!done.insert(dev).second) return;
  CUmemoryPool pool = nullptr;
  if (api.cuDeviceGetDefaultMemPool(&pool, dev) != CUDA_SUCCESS) return;
  cuuint64_t threshold = UINT64_MAX;
  (void)api.cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold);
}

}  // namespace

void* StreamOrderedAllocator::allocate(size_t nbytes, CUstream stream) {
  if (nbytes == 0) return nullptr;
  const auto& api = detail::driverApi("allocating GPU memory");
  CUdevice dev = 0;
  detail::checkResult(api.cuCtxGetDevice(&dev), "cuCtxGetDevice (allocate needs a current context)");
  keepPoolMemory(api, dev);
  CUdeviceptr dptr = 0;
  detail::checkResult(api.cuMemAllocAsync(&dptr, nbytes, stream),
                      ::loom::detail::concat("cuMemAllocAsync of ", nbytes, " bytes on GPU ", dev));
  return reinterpret_cast<void*>(static_cast<uintptr_t>(dptr));
}

void StreamOrderedAllocator::free(void* ptr, CUstream stream) noexcept {
  if (ptr == nullptr) return;
  try {
    const auto& api = detail::driverApi("freeing GPU memory");
    CUresult r = api.cuMemFreeAsync(static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(ptr)), stream);
    if (r != CUDA_SUCCESS && r != CUDA_ERROR_DEINITIALIZED) {
      std::cerr << "loom: cuMemFreeAsync failed: " << detail::resultText(r) << "\n";
    }
  } catch (const std::exception& e) {
    std::cerr << "loom: freeing GPU memory failed: " << e.what() << "\n";
  }
}

std::shared_ptr<DeviceAllocator> defaultAllocator() {
  static const std::shared_ptr<DeviceAllocator> allocator =
      std::make_shared<StreamOrderedAllocator>();
  return allocator;
}

}  // namespace loom::cuda
