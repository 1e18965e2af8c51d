// SPDX-License-Identifier: Apache-2.0
// One GPU as a ComputeDevice: kernels compiled by NVRTC for its architecture and loaded there;
// tensors are CUDA tensors on it, host tensors are copied in and out. Built only with the CUDA
// backend (no_cuda_device.cpp stands in otherwise).
#include <iostream>
#include <memory>

#include "exec/gpu_device.h"
#include "loom/backend/cuda/event.h"
#include "loom/backend/cuda/memory.h"
#include "loom/backend/cuda/module.h"
#include "loom/backend/cuda/nvrtc.h"
#include "loom/backend/cuda/stream.h"
#include "loom/support/error.h"

namespace loom::exec {

namespace {

class CudaKernel final : public LoadedKernel {
 public:
  CudaKernel(std::unique_ptr<cuda::Module> module, const std::string& name, int device)
      : module_(std::move(module)), function_(module_->function(name)), device_(device) {}
  void launch(const LaunchParams& lp, void** args, CUstream stream) const override {
    cuda::LaunchConfig config(cuda::Dim3(lp.grid[0], lp.grid[1], lp.grid[2]),
                              cuda::Dim3(lp.block[0], lp.block[1], lp.block[2]), lp.sharedBytes);
    config.cooperative = lp.cooperative;
    function_.launch(config, args, cuda::Stream::borrow(stream, device_));
  }
  int64_t maxResidentBlocks(int64_t threadsPerBlock, size_t sharedBytes) const override {
    return int64_t(function_.maxActiveBlocksPerMultiprocessor(int(threadsPerBlock), sharedBytes)) *
           cuda::deviceProperties(device_).multiprocessors;
  }
  int64_t maxThreadsPerBlock() const override { return function_.maxThreadsPerBlock(); }
  int64_t registersPerThread() const override { return function_.numRegisters(); }

 private:
  std::unique_ptr<cuda::Module> module_;
  cuda::Function function_;
  int device_;
};

class CudaDevice final : public ComputeDevice {
 public:
  explicit CudaDevice(int index) : index_(index) {}

  Backend backend() const override { return Backend::Cuda; }
  int index() const override { return index_; }
  Device tensorDevice() const override { return Device::cuda(index_); }
  std::optional<cuda::DeviceProperties> gpuProperties() const override {
    if (!cuda::cudaAvailable()) return std::nullopt;
    return cuda::deviceProperties(index_);
  }
  codegen::CodegenOptions codegenOptions() const override {
    codegen::CodegenOptions o;
    // Without a driver nothing is known; run() says a GPU is required before anything is built.
    if (cuda::cudaAvailable()) o.multiprocessors = cuda::deviceProperties(index_).multiprocessors;
    return o;
  }
  void require(std::string_view purpose) const override { cuda::requireCuda(purpose); }

  std::unique_ptr<LoadedKernel> load(const codegen::GeneratedKernel& kernel,
                                     PhaseTimer& timer) const override {
    static cuda::NvrtcCompiler compiler;
    cuda::CompileOptions options = cuda::CompileOptions::forArch("", kernel.name);
    options.device = index_;  // its architecture
    cuda::CompileResult r = compiler.compile(kernel.source, options);
    timer.mark(r.cacheHit ? "cubin cache hit" : "nvrtc");
    // LOOM_DUMP=ptxas: the compiler prints each kernel's resources (cuda/nvrtc.h).
    auto loaded = std::make_unique<CudaKernel>(std::make_unique<cuda::Module>(r.cubin, index_),
                                               kernel.name, index_);
    timer.mark("module load");
    return loaded;
  }

  Tensor empty(std::span<const int64_t> sizes, DataType dtype, CUstream stream) const override {
    return cuda::emptyCuda(std::vector<int64_t>(sizes.begin(), sizes.end()), dtype, index_, stream);
  }
  void zero(const Tensor& fresh, CUstream stream) const override {
    cuda::fillBytes(fresh, 0, stream);
  }
  void poison(const Tensor& fresh, CUstream stream) const override {
    cuda::fillBytes(fresh, 0xff, stream);  // NaN in every float type, -1 in integers
  }

  void copyBytes(void* dst, const void* src, size_t bytes, CUstream stream) const override {
    if (bytes != 0) cuda::copyDeviceToDevice(dst, src, bytes, index_, stream);
  }
  void copyElements(const Tensor& dst, const Tensor& src, CUstream stream) const override {
    if (dst.device().isCpu() && src.device().isCpu()) {
      loom::copyElements(dst, src);
    } else {
      cuda::copyElements(dst, src, stream);
    }
  }
  Tensor copyForOutput(const Tensor& t, CUstream stream) const override {
    if (!t.device().isCuda()) return t.contiguous();
    // The memory the view spans is copied (gaps included), so strided and broadcast views need
    // no kernel and keep their strides.
    int64_t span = 1;
    for (int64_t d = 0; d < t.dim(); ++d) {
      if (t.size(d) == 0) span = 0;
    }
    for (int64_t d = 0; span != 0 && d < t.dim(); ++d) {
      LOOM_CHECK(t.stride(d) >= 0, "tensor ", describe(t), " has a negative stride on axis ", d,
                 "; returning it as an output needs non-negative strides");
      span += (t.size(d) - 1) * t.stride(d);
    }
    Tensor storage = cuda::emptyCuda({span}, t.dtype(), t.device().index, stream);
    cuda::copyDeviceToDevice(storage.data(), t.data(), size_t(span) * t.itemSize(),
                             t.device().index, stream);
    return Tensor(storage.storage(), t.dtype(), t.sizes(), t.strides());
  }

  void gemm(const GemmProblem& problem, CUstream stream) const override {
    detail::cudaGemm(problem, index_, stream);
  }
  bool gemmReads(int64_t rows, int64_t cols, int64_t rowStride, int64_t colStride) const override {
    return detail::cudaGemmReads(rows, cols, rowStride, colStride);
  }

  std::vector<eval::Argument> copyIn(const ir::Fusion& fusion, std::span<const eval::Argument> args,
                                     CUstream stream) const override {
    (void)checkArguments(fusion, args);
    std::vector<eval::Argument> device_args(args.begin(), args.end());
    for (eval::Argument& a : device_args) {
      Tensor* t = std::get_if<Tensor>(&a);
      if (t != nullptr && t->defined()) *t = cuda::toDeviceSameLayout(*t, index_, stream);
    }
    return device_args;
  }
  void copyOut(std::vector<Tensor>& outputs, CUstream stream) const override {
    for (Tensor& t : outputs) {
      if (t.defined()) t = cuda::toHost(t, stream);
    }
  }

  std::unique_ptr<StreamMark> markStream(CUstream stream) const override {
    auto mark = std::make_unique<EventMark>(cuda::Event::create(index_));
    mark->event.record(stream);
    return mark;
  }
  double secondsBetween(const StreamMark& start, const StreamMark& end) const override {
    const auto& a = dynamic_cast<const EventMark&>(start);
    const auto& b = dynamic_cast<const EventMark&>(end);
    b.event.synchronize();
    return double(cuda::Event::elapsedMs(a.event, b.event)) * 1e-3;
  }

 private:
  struct EventMark final : StreamMark {
    explicit EventMark(cuda::Event e) : event(std::move(e)) {}
    cuda::Event event;
  };
  int index_;
};

}  // namespace

namespace detail {

std::shared_ptr<const ComputeDevice> makeGpuDevice(int index) {
  return std::make_shared<CudaDevice>(index);
}

int driverGpuCount() noexcept { return cuda::cudaAvailable() ? cuda::deviceCount() : 0; }

std::string driverUnavailableReason() noexcept { return cuda::unavailableReason(); }

}  // namespace detail

}  // namespace loom::exec
