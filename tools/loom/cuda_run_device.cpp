// SPDX-License-Identifier: Apache-2.0
// The GPU side of RunDevice and `loom codegen`'s NVRTC report (run_device.h), in builds with the
// CUDA backend.
#include <fmt/format.h>

#include <chrono>

#include "loom/backend/cuda/event.h"
#include "loom/backend/cuda/memory.h"
#include "loom/backend/cuda/nvrtc.h"
#include "tools/loom/run_device.h"

namespace loom::tools {
namespace {

class GpuRunDevice final : public RunDevice {
 public:
  explicit GpuRunDevice(int gpu) : gpu_(gpu) {}

  Tensor place(const Tensor& host) const override { return cuda::toDevice(host, gpu_); }
  Tensor fetch(const Tensor& t) const override { return cuda::toHost(t); }
  // The events are GPU 0's, as the CLI has always made them: for a rank that drives another GPU
  // they time GPU 0's legacy stream, not its own (left as it was: no GPU here to test a change).
  Timing time(const std::function<void()>& work) const override {
    cuda::Event start = cuda::Event::create(), stop = cuda::Event::create();
    start.record(nullptr);
    const auto t0 = std::chrono::steady_clock::now();
    work();
    const double host =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    stop.record(nullptr);
    stop.synchronize();
    return {host, double(cuda::Event::elapsedMs(start, stop)) * 1e-3};
  }

 private:
  int gpu_;
};

}  // namespace

namespace detail {
std::unique_ptr<RunDevice> makeGpuRunDevice(int gpu) { return std::make_unique<GpuRunDevice>(gpu); }
}  // namespace detail

std::string nvrtcReport(const codegen::GeneratedKernel& kernel, const std::string& arch) {
  if (!cuda::nvrtcAvailable()) {
    return fmt::format("// NVRTC not available ({}): not compiled\n",
                       cuda::nvrtcUnavailableReason());
  }
  cuda::NvrtcCompiler compiler;
  cuda::CompileResult r =
      compiler.compile(kernel.source, cuda::CompileOptions::forArch(arch, kernel.name));
  std::string out;
  for (const cuda::KernelResources& k : r.kernels) {
    out += fmt::format(
        "// {} {}: {} registers, {} bytes spill stores, {} bytes spill loads, {} bytes stack\n",
        r.arch, k.function, k.registers, k.spillStores, k.spillLoads, k.stackFrame);
  }
  return out;
}

}  // namespace loom::tools
