// SPDX-License-Identifier: Apache-2.0
// The host backend as a ComputeDevice: kernels compiled by the host compiler and run as fibers on
// the CPU (backend/host_module.h); tensors are host tensors.
#include <algorithm>
#include <cstring>
#include <memory>

#include "loom/backend/host_module.h"
#include "loom/exec/compute_device.h"
#include "loom/support/error.h"

namespace loom::exec {

namespace {

class HostKernel final : public LoadedKernel {
 public:
  explicit HostKernel(std::unique_ptr<backend::HostModule> module) : module_(std::move(module)) {}
  void launch(const LaunchParams& lp, void** args, CUstream /*stream*/) const override {
    backend::HostLaunchOptions options;
    options.cooperative = lp.cooperative;
    module_->launch(backend::Dim3(lp.grid[0], lp.grid[1], lp.grid[2]),
                    backend::Dim3(lp.block[0], lp.block[1], lp.block[2]), lp.sharedBytes, args,
                    options);
  }
  int64_t maxResidentBlocks(int64_t threadsPerBlock, size_t /*sharedBytes*/) const override {
    return backend::kMaxCooperativeThreads / std::max<int64_t>(threadsPerBlock, 1);
  }

 private:
  std::unique_ptr<backend::HostModule> module_;
};

class HostDevice final : public ComputeDevice {
 public:
  Backend backend() const override { return Backend::Host; }
  int index() const override { return 0; }
  Device tensorDevice() const override { return Device::cpu(); }
  std::optional<cuda::DeviceProperties> gpuProperties() const override { return std::nullopt; }
  codegen::CodegenOptions codegenOptions() const override { return {}; }
  void require(std::string_view /*purpose*/) const override {}

  std::unique_ptr<LoadedKernel> load(const codegen::GeneratedKernel& kernel,
                                     PhaseTimer& timer) const override {
    auto module = backend::HostModule::load(kernel.source, kernel.name);
    timer.mark("host compile or cache hit, and load");
    return std::make_unique<HostKernel>(std::move(module));
  }

  Tensor empty(std::span<const int64_t> sizes, DataType dtype, CUstream) const override {
    return Tensor::empty(std::vector<int64_t>(sizes.begin(), sizes.end()), dtype);
  }
  void zero(const Tensor& fresh, CUstream) const override {
    Tensor t = fresh;
    t.fill(0);
  }
  void poison(const Tensor& fresh, CUstream) const override {
    Tensor t = fresh;
    loom::poison(t);
  }
  void copyBytes(void* dst, const void* src, size_t bytes, CUstream) const override {
    if (bytes != 0) std::memcpy(dst, src, bytes);
  }
  void copyElements(const Tensor& dst, const Tensor& src, CUstream) const override {
    loom::copyElements(dst, src);
  }
  Tensor copyForOutput(const Tensor& t, CUstream) const override { return t.contiguous(); }
  void gemm(const GemmProblem& problem, CUstream) const override { hostGemm(problem); }
  bool gemmReads(int64_t, int64_t, int64_t, int64_t) const override { return true; }

  std::vector<eval::Argument> copyIn(const ir::Fusion& fusion,
                                     std::span<const eval::Argument> args,
                                     CUstream) const override {
    (void)checkArguments(fusion, args);
    return {args.begin(), args.end()};
  }
  void copyOut(std::vector<Tensor>& /*outputs*/, CUstream) const override {}
};

}  // namespace

namespace detail {

std::shared_ptr<const ComputeDevice> makeHostDevice() {
  static const std::shared_ptr<const ComputeDevice> host = std::make_shared<HostDevice>();
  return host;
}

}  // namespace detail

}  // namespace loom::exec
