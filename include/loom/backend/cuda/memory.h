// SPDX-License-Identifier: Apache-2.0
// CUDA loom::Tensors: allocation through a DeviceAllocator and copies between host and device.
//
// Copies are queued on the given stream (null: the legacy default stream). A copy to the host
// waits for the stream, since the caller reads the result right away; a copy to the device waits
// too, so the caller may free or reuse its host buffer as soon as the call returns.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "loom/backend/cuda/allocator.h"
#include "loom/tensor/tensor.h"

namespace loom::cuda {

/// New contiguous, uninitialized tensor on GPU `device`. The storage's deleter returns the memory
/// to `allocator` (default: defaultAllocator()) on the same stream.
Tensor emptyCuda(std::vector<int64_t> sizes, DataType dtype, int device = 0,
                 CUstream stream = nullptr, std::shared_ptr<DeviceAllocator> allocator = nullptr);

/// A contiguous device copy of a host tensor (which may be strided).
Tensor toDevice(const Tensor& host, int device = 0, CUstream stream = nullptr,
                std::shared_ptr<DeviceAllocator> allocator = nullptr);

/// A device copy of a host tensor with the same sizes and strides: the memory the view spans is
/// copied, gaps included, so permuted, padded and broadcast (stride 0) layouts stay what they
/// were. Strides must be non-negative. What executors use for host arguments, so that a kernel
/// sees the layout the caller passed (and its declared contiguity is checked against it).
Tensor toDeviceSameLayout(const Tensor& host, int device = 0, CUstream stream = nullptr);

/// A host copy of a device tensor with the same sizes and strides (the memory the view spans is
/// copied, so gaps come along); call contiguous() on it for a dense one.
Tensor toHost(const Tensor& device, CUstream stream = nullptr);

/// Sets every byte of the memory a device tensor spans to `value` (0xff poisons floats with NaN).
void fillBytes(const Tensor& device, uint8_t value, CUstream stream = nullptr);

/// Raw copies; `device` is the GPU that owns the device pointer.
void copyHostToDevice(void* dst, const void* src, size_t nbytes, int device, CUstream stream);
void copyDeviceToHost(void* dst, const void* src, size_t nbytes, int device, CUstream stream);
/// Queued on `stream` and not waited for (both buffers stay on the device).
void copyDeviceToDevice(void* dst, const void* src, size_t nbytes, int device, CUstream stream);
/// Copies the elements of CUDA tensor `src` into CUDA tensor `dst` on the same GPU (the same sizes
/// and dtype), each through its own non-negative strides, leaving the bytes between `dst`'s
/// elements alone: pitched 2-D copies (cuMemcpy2DAsync), no kernel. Queued on `stream`.
void copyElements(const Tensor& dst, const Tensor& src, CUstream stream);

}  // namespace loom::cuda
