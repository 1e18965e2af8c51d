// SPDX-License-Identifier: Apache-2.0
// Private to the executor: the GPU side of ComputeDevice, defined by cuda_device.cpp in builds
// with the CUDA backend and by no_cuda_device.cpp without it (CMake picks the file, so no other
// source tests LOOM_HAVE_CUDA_BACKEND).
#pragma once

#include <memory>
#include <string>

#include "loom/exec/compute_device.h"

namespace loom::exec::detail {

/// GPU `index`; UserError in a build without the CUDA backend.
std::shared_ptr<const ComputeDevice> makeGpuDevice(int index);
/// GPUs the driver sees; 0 without a driver or a CUDA backend. Never throws.
int driverGpuCount() noexcept;
/// Why there is no usable GPU ("no CUDA driver (libcuda.so.1) found", a build without the CUDA
/// backend); empty when there is one. Never throws.
std::string driverUnavailableReason() noexcept;

/// The GPU's GEMM: `problem` as cuBLASLt calls (cuda_gemm.cpp), queued on `stream` of GPU
/// `index`; its operands must pass cudaGemmReads.
void cudaGemm(const GemmProblem& problem, int index, CUstream stream);
/// ComputeDevice::gemmReads of a GPU.
bool cudaGemmReads(int64_t rows, int64_t cols, int64_t rowStride, int64_t colStride);

}  // namespace loom::exec::detail
