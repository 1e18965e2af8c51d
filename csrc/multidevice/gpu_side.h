// SPDX-License-Identifier: Apache-2.0
// Private: what the communicator needs of the CUDA backend (GPU count, device copies), beside
// the NCCL and staged transports (team_transport.h). cuda_side.cpp defines it in builds with the
// CUDA backend, no_cuda_side.cpp without, where no CUDA tensor can be communicated (CMake picks
// the file, so no source tests for the backend).
#pragma once

#include <cstddef>

#include "loom/backend/cuda/driver.h"  // CUstream (only the handle type)
#include "loom/tensor/tensor.h"

namespace loom::multidevice::detail {

/// UserError naming `device` in a build without the CUDA backend; nothing otherwise.
void requireCudaBackend(Device device);

/// GPUs the CUDA driver sees (only after requireCudaBackend).
int gpuCount();

/// Copies `bytes` bytes between two buffers of GPU `device`, queued on `stream`.
void copyOnGpu(void* dst, const void* src, size_t bytes, int device, CUstream stream);

}  // namespace loom::multidevice::detail
