// SPDX-License-Identifier: Apache-2.0
// Private: the table of driver entry points looked up in libcuda.so.1, and helpers to call them.
//
// cuda.h supplies only types here. Its macros map an API name to the current versioned symbol
// (cuMemAlloc -> cuMemAlloc_v2), so both the member types and the looked-up names follow the
// header's versions: the table member `cuMemAlloc` is really `cuMemAlloc_v2`, and so is its symbol.
#pragma once

#include <cuda.h>

#include <string>
#include <string_view>

#include "loom/backend/cuda/driver.h"

#define LOOM_CUDA_DRIVER_FUNCTIONS(X)                                                          \
  X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString)                        \
  X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetAttribute) X(cuDeviceGetName)                \
  X(cuDeviceTotalMem) X(cuDevicePrimaryCtxRetain) X(cuCtxGetCurrent) X(cuCtxSetCurrent)        \
  X(cuCtxSynchronize) X(cuCtxGetDevice) X(cuMemAllocAsync) X(cuMemFreeAsync) X(cuDeviceGetDefaultMemPool)        \
  X(cuMemPoolSetAttribute) X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) X(cuMemsetD8Async)        \
  X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize) X(cuModuleLoadData)              \
  X(cuModuleUnload) X(cuModuleGetFunction) X(cuFuncSetAttribute) X(cuFuncGetAttribute)         \
  X(cuLaunchKernel) X(cuMemcpyDtoDAsync) X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord)   \
  X(cuEventSynchronize) X(cuEventElapsedTime) X(cuEventQuery) X(cuLaunchCooperativeKernel)     \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor) X(cuMemcpy2DAsync)

namespace loom::cuda::detail {

struct DriverApi {
#define LOOM_CUDA_DECLARE_ENTRY(name) decltype(&::name) name = nullptr;
  LOOM_CUDA_DRIVER_FUNCTIONS(LOOM_CUDA_DECLARE_ENTRY)
#undef LOOM_CUDA_DECLARE_ENTRY
};

/// The process's driver table; throws UnavailableError ("...: a GPU is required for <purpose>").
const DriverApi& driverApi(std::string_view purpose);

/// "CUDA_ERROR_OUT_OF_MEMORY (out of memory)".
std::string resultText(CUresult result);

/// Throws CudaError "<what> failed: <result text>" unless the result is CUDA_SUCCESS.
void checkResult(CUresult result, std::string_view what);

/// Makes the device's primary context current; returns the driver table.
const DriverApi& enterDevice(int device, std::string_view purpose);

}  // namespace loom::cuda::detail
