// SPDX-License-Identifier: Apache-2.0
// The default stream-ordered device allocator.
#include "loom/backend/cuda/allocator.h"

#include <atomic>
#include <cstdint>
#include <iostream>
#include <mutex>
#include <set>

#include "backend/cuda/driver_api.h"

namespace loom::cuda {

namespace {

// Devices whose pool setting is cached in a flag; beyond that a mutex-guarded set is used.
constexpr int kFlaggedDevices = 64;

// Keeps freed blocks in the device's default pool: its default release threshold (0) hands memory
// back to the OS at every synchronization, which makes each later allocation a slow driver call.
// Best effort: a failure only costs speed. Allocation is on the hot path, so a device already set
// up costs one atomic load, no lock.
void keepPoolMemory(const detail::DriverApi& api, CUdevice dev) {
  static std::atomic<bool> flagged[kFlaggedDevices] = {};
  if (dev >= 0 && dev < kFlaggedDevices && flagged[dev].load(std::memory_order_acquire)) return;
  static std::mutex mutex;
  static std::set<CUdevice> done;
  std::lock_guard lock(mutex);
  if (!done.insert(dev).second) return;
  CUmemoryPool pool = nullptr;
  if (api.cuDeviceGetDefaultMemPool(&pool, dev) == CUDA_SUCCESS) {
    cuuint64_t threshold = UINT64_MAX;
    (void)api.cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold);
  }
  if (dev >= 0 && dev < kFlaggedDevices) flagged[dev].store(true, std::memory_order_release);
}

}  // namespace

void* StreamOrderedAllocator::allocate(size_t nbytes, CUstream stream) {
  if (nbytes == 0) return nullptr;
  const auto& api = detail::driverApi("allocating GPU memory");
  CUdevice dev = 0;
  detail::checkResult(api.cuCtxGetDevice(&dev), "cuCtxGetDevice (allocate needs a current context)");
  keepPoolMemory(api, dev);
  CUdeviceptr dptr = 0;
  CUresult r = api.cuMemAllocAsync(&dptr, nbytes, stream);
  // The message is only built on failure: allocation is on every run's path.
  if (r != CUDA_SUCCESS) [[unlikely]] {
    detail::checkResult(r,
                        ::loom::detail::concat("cuMemAllocAsync of ", nbytes, " bytes on GPU ", dev));
  }
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
  // Never destroyed: tensors' deleters use it by reference (defaultAllocatorRef), and a tensor
  // held by a static may die after this function's statics would have.
  static const auto* allocator =
      new std::shared_ptr<DeviceAllocator>(std::make_shared<StreamOrderedAllocator>());
  return *allocator;
}

DeviceAllocator& defaultAllocatorRef() {
  static DeviceAllocator& allocator = *defaultAllocator();
  return allocator;
}

}  // namespace loom::cuda
