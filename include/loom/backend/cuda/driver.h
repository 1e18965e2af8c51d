// SPDX-License-Identifier: Apache-2.0
// The CUDA driver, opened lazily: availability queries that never throw, device properties, errors.
//
// libcuda.so.1 is loaded with dlopen on first use, never linked, so every Loom program loads and
// runs on a machine without a GPU or driver. Whatever needs a GPU throws loom::UnavailableError
// naming what needed it. Each device is used through its primary context (shared with the CUDA
// runtime and with frameworks in the same process), made current on the calling thread on demand.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "loom/support/error.h"

// The driver's handle types, declared as cuda.h declares them so this header does not need it.
struct CUstream_st;
typedef struct CUstream_st* CUstream;

namespace loom::cuda {

/// A CUDA driver call failed (out of memory, launch failure, ...). code() is the CUresult.
class CudaError : public Error {
 public:
  CudaError(std::string what, std::string message, int code)
      : Error(std::move(what), std::move(message)), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

/// True when the driver loads, initializes and sees at least one GPU. Never throws.
bool cudaAvailable() noexcept;

/// Number of visible GPUs; 0 when there is no driver. Never throws.
int deviceCount() noexcept;

/// Why CUDA is not usable here ("no CUDA driver (libcuda.so.1) found"); empty when it is.
std::string unavailableReason() noexcept;

/// Throws UnavailableError "<reason>: a GPU is required for <purpose>" when CUDA is not usable.
void requireCuda(std::string_view purpose);

/// Tries to open a driver library by file name without touching the process-wide driver; returns
/// the reason it is unusable, or an empty string. For tests and diagnostics.
std::string probeDriverLibrary(const char* libraryName) noexcept;

struct DeviceProperties {
  int index = 0;
  std::string name;
  int major = 0;  ///< compute capability
  int minor = 0;
  int multiprocessors = 0;
  int maxThreadsPerBlock = 0;
  size_t maxSharedMemoryPerBlockOptin = 0;  ///< dynamic shared memory a kernel may opt into
  size_t totalMemory = 0;
  size_t l2CacheBytes = 0;
  int memoryClockKhz = 0;      ///< the memory's peak clock
  int memoryBusWidthBits = 0;  ///< the global memory bus

  /// "sm_90" for compute capability 9.0.
  std::string arch() const;
  /// The memory's theoretical peak in bytes per second (double data rate: 2 * clock * bus
  /// width); 0 when the driver reports neither.
  double peakMemoryBytesPerSecond() const {
    return 2.0 * double(memoryClockKhz) * 1e3 * double(memoryBusWidthBits) / 8.0;
  }
};

/// Properties of one GPU. Throws UnavailableError without a driver, UserError for a bad index.
DeviceProperties deviceProperties(int device);

/// Retains the device's primary context and makes it current on this thread.
void makeCurrent(int device);

/// Waits for all work on the device.
void synchronizeDevice(int device);

}  // namespace loom::cuda
