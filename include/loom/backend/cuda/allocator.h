// SPDX-License-Identifier: Apache-2.0
// Pluggable device memory allocation; the default is the driver's stream-ordered allocator.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "loom/backend/cuda/driver.h"

namespace loom::cuda {

/// Hands out device memory. Both calls are made with the device's context current on the calling
/// thread. free() may run on any thread (from the last Tensor's destructor) and must not throw.
class DeviceAllocator {
 public:
  virtual ~DeviceAllocator() = default;
  /// Memory of at least `nbytes`, usable by work queued on `stream` after this call.
  virtual void* allocate(size_t nbytes, CUstream stream) = 0;
  /// Returns memory once work queued on `stream` before this call has finished with it.
  virtual void free(void* ptr, CUstream stream) noexcept = 0;
  virtual std::string name() const = 0;
};

/// cuMemAllocAsync / cuMemFreeAsync from the device's default memory pool, which is told to keep
/// freed memory (release threshold = max) so that steady-state allocation does not reach the OS.
class StreamOrderedAllocator : public DeviceAllocator {
 public:
  void* allocate(size_t nbytes, CUstream stream) override;
  void free(void* ptr, CUstream stream) noexcept override;
  std::string name() const override { return "stream_ordered"; }
};

/// The process's shared StreamOrderedAllocator.
std::shared_ptr<DeviceAllocator> defaultAllocator();

/// The same allocator by reference (it lives for the process), for hot paths that would
/// otherwise copy the shared_ptr (two atomic operations) on every allocation.
DeviceAllocator& defaultAllocatorRef();

}  // namespace loom::cuda
