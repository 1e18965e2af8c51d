// SPDX-License-Identifier: Apache-2.0
// The communicator's view of the CUDA backend (gpu_side.h) in builds that have it.
#include "loom/backend/cuda/memory.h"
#include "multidevice/gpu_side.h"

namespace loom::multidevice::detail {

void requireCudaBackend(Device) {}

int gpuCount() { return cuda::deviceCount(); }

void copyOnGpu(void* dst, const void* src, size_t bytes, int device, CUstream stream) {
  cuda::copyDeviceToDevice(dst, src, bytes, device, stream);
}

}  // namespace loom::multidevice::detail
