// SPDX-License-Identifier: Apache-2.0
// The GPU side of ComputeDevice in a build without the CUDA backend (cuda.h was not found at
// configure time, or LOOM_ENABLE_CUDA=OFF): there are no GPUs, and asking for one says why.
#include "exec/gpu_device.h"
#include "loom/support/error.h"

namespace loom::exec::detail {

std::shared_ptr<const ComputeDevice> makeGpuDevice(int /*index*/) {
  LOOM_THROW("this Loom build has no CUDA backend (cuda.h was not found at configure time)");
}

int driverGpuCount() noexcept { return 0; }

std::string driverUnavailableReason() noexcept {
  return "this Loom build has no CUDA backend (cuda.h was not found at configure time)";
}

}  // namespace loom::exec::detail
