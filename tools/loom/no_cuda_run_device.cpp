// SPDX-License-Identifier: Apache-2.0
// RunDevice and `loom codegen`'s NVRTC report (run_device.h) in a build without the CUDA
// backend: there is no GPU to run on, and no NVRTC to compile with.
#include "loom/support/error.h"
#include "tools/loom/run_device.h"

namespace loom::tools {

namespace detail {
// Unavailable (the CLI's exit status 3), as a GPU missing from the machine is.
std::unique_ptr<RunDevice> makeGpuRunDevice(int gpu) {
  ::loom::detail::throwUnavailable(
      __FILE__, __LINE__,
      ::loom::detail::concat("running on cuda:", gpu,
                             " needs the CUDA backend, and this Loom build has none (cuda.h was "
                             "not found at configure time)"));
}
}  // namespace detail

std::string nvrtcReport(const codegen::GeneratedKernel&, const std::string&) {
  return "// built without the CUDA backend: not compiled with NVRTC\n";
}

}  // namespace loom::tools
