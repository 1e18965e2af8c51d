// SPDX-License-Identifier: Apache-2.0
// Where `loom run` keeps a run's tensors and how it times runs: on the host backend the tensors
// stay on the host and a run is timed by the wall clock; on a GPU they move there once and runs
// are timed with CUDA events. Also `loom codegen`'s NVRTC report. The GPU side is
// cuda_run_device.cpp in builds with the CUDA backend and no_cuda_run_device.cpp without (CMake
// picks the file, so no command tests for the backend).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "loom/codegen/kernel_codegen.h"
#include "loom/exec/compute_device.h"
#include "loom/tensor/tensor.h"

namespace loom::tools {

class RunDevice {
 public:
  virtual ~RunDevice() = default;

  /// A host tensor where the runs use it (a copy on the GPU; itself on the host).
  virtual Tensor place(const Tensor& host) const = 0;
  /// A run's output on the host (on a GPU this waits for the queued work).
  virtual Tensor fetch(const Tensor& t) const = 0;

  struct Timing {
    double hostSeconds = 0;    ///< the call itself
    double deviceSeconds = 0;  ///< the work: CUDA events around the call on a GPU; the call on
                               ///< the host
  };
  /// Runs `work` once and times it (on a GPU: events on its legacy stream, waited for).
  virtual Timing time(const std::function<void()>& work) const = 0;
};

/// The host's (`backend` Host) or GPU `gpu`'s (Cuda; an UnavailableError in a build without the
/// CUDA backend). `backend` is resolved (not Auto).
std::unique_ptr<RunDevice> makeRunDevice(exec::Backend backend, int gpu = 0);

namespace detail {
/// GPU `gpu` (cuda_run_device.cpp), or the UnavailableError of a build without the CUDA backend.
std::unique_ptr<RunDevice> makeGpuRunDevice(int gpu);
}  // namespace detail

/// `loom codegen`'s comment lines on compiling `kernel` with NVRTC for `arch`: each kernel's
/// registers, spills and stack, or why it was not compiled (no NVRTC, no CUDA backend).
std::string nvrtcReport(const codegen::GeneratedKernel& kernel, const std::string& arch);

}  // namespace loom::tools
