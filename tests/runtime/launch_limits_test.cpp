// SPDX-License-Identifier: Apache-2.0
// A kernel whose first build cannot run its block (on a GPU: too many registers per thread for
// the block's thread count, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES) is built again with its
// registers bounded for the block, and runs. The device here is the host backend with a GPU's
// limit stood in: an unbounded kernel runs at most 64 threads per block, a bounded one 1024.
#include <gtest/gtest.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "loom/eval/compare.h"
#include "loom/eval/reference_evaluator.h"
#include "loom/exec/compute_device.h"
#include "loom/ir/ir.h"
#include "loom/ops/ops.h"
#include "loom/runtime/fusion_executor_cache.h"
#include "runtime/runtime_test_util.h"

namespace loom::runtime {
namespace {

class LimitedKernel final : public exec::LoadedKernel {
 public:
  LimitedKernel(std::unique_ptr<exec::LoadedKernel> inner, bool bounded, size_t shared_limit)
      : inner_(std::move(inner)), bounded_(bounded), shared_limit_(shared_limit) {}
  void launch(const exec::LaunchParams& lp, void** args, CUstream stream) const override {
    const int64_t threads = int64_t(lp.block[0]) * lp.block[1] * lp.block[2];
    ASSERT_LE(threads, maxThreadsPerBlock()) << "a launch the device would refuse";
    if (shared_limit_ > 0) {
      ASSERT_LE(lp.sharedBytes, shared_limit_) << "a launch the device would refuse: "
                                               << lp.toString();
    }
    ASSERT_LE(lp.grid[1], 65535u);
    ASSERT_LE(lp.grid[2], 65535u);
    inner_->launch(lp, args, stream);
  }
  int64_t maxThreadsPerBlock() const override { return bounded_ ? 1024 : 64; }
  int64_t maxResidentBlocks(int64_t threads, size_t shared) const override {
    return inner_->maxResidentBlocks(threads, shared);
  }

 private:
  std::unique_ptr<exec::LoadedKernel> inner_;
  bool bounded_;
  size_t shared_limit_;
};

// The real parts' limits (CUDA's device attributes on an H100 SXM and an H200: sm_90, 132 SMs,
// 1024 threads per block, 227 KB of dynamic shared memory per block when opted in).
cuda::DeviceProperties hopper(std::string name, size_t memory) {
  cuda::DeviceProperties p;
  p.name = std::move(name);
  p.major = 9;
  p.minor = 0;
  p.multiprocessors = 132;
  p.maxThreadsPerBlock = 1024;
  p.maxSharedMemoryPerBlockOptin = 232448;
  p.totalMemory = memory;
  return p;
}
cuda::DeviceProperties h100() { return hopper("NVIDIA H100 80GB HBM3", size_t(80) << 30); }
cuda::DeviceProperties h200() { return hopper("NVIDIA H200", size_t(141) << 30); }

// The host device, but kernels built without __launch_bounds__ run at most 64 threads a block;
// with `gpu` given, it also reports that GPU's properties (the schedulers size launches from
// them) and refuses launches past its shared memory, as the driver would.
class LimitedDevice final : public exec::ComputeDevice {
 public:
  explicit LimitedDevice(std::optional<cuda::DeviceProperties> gpu = std::nullopt)
      : host_(exec::makeComputeDevice(exec::Backend::Host)), gpu_(std::move(gpu)) {}

  exec::Backend backend() const override { return host_->backend(); }
  int index() const override { return host_->index(); }
  Device tensorDevice() const override { return host_->tensorDevice(); }
  std::optional<cuda::DeviceProperties> gpuProperties() const override {
    return gpu_ ? gpu_ : host_->gpuProperties();
  }
  codegen::CodegenOptions codegenOptions() const override { return host_->codegenOptions(); }
  void require(std::string_view purpose) const override { host_->require(purpose); }
  std::unique_ptr<exec::LoadedKernel> load(const codegen::GeneratedKernel& kernel,
                                           PhaseTimer& timer) const override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      texts_.push_back(kernel.kernelText);
    }
    const bool bounded = kernel.kernelText.find("__launch_bounds__(") != std::string::npos;
    return std::make_unique<LimitedKernel>(host_->load(kernel, timer), bounded,
                                           gpu_ ? gpu_->maxSharedMemoryPerBlockOptin : 0);
  }
  Tensor empty(std::span<const int64_t> sizes, DataType dtype, CUstream stream) const override {
    return host_->empty(sizes, dtype, stream);
  }
  void zero(const Tensor& fresh, CUstream stream) const override { host_->zero(fresh, stream); }
  void poison(const Tensor& fresh, CUstream stream) const override {
    host_->poison(fresh, stream);
  }
  void copyBytes(void* dst, const void* src, size_t bytes, CUstream stream) const override {
    host_->copyBytes(dst, src, bytes, stream);
  }
  void copyElements(const Tensor& dst, const Tensor& src, CUstream stream) const override {
    host_->copyElements(dst, src, stream);
  }
  Tensor copyForOutput(const Tensor& t, CUstream stream) const override {
    return host_->copyForOutput(t, stream);
  }
  void gemm(const exec::GemmProblem& problem, CUstream stream) const override {
    host_->gemm(problem, stream);
  }
  bool gemmReads(int64_t rows, int64_t cols, int64_t rs, int64_t cs) const override {
    return host_->gemmReads(rows, cols, rs, cs);
  }
  std::vector<eval::Argument> copyIn(const ir::Fusion& fusion,
                                     std::span<const eval::Argument> args,
                                     CUstream stream) const override {
    return host_->copyIn(fusion, args, stream);
  }
  void copyOut(std::vector<Tensor>& outputs, CUstream stream) const override {
    host_->copyOut(outputs, stream);
  }

  std::vector<std::string> texts() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return texts_;
  }

 private:
  std::shared_ptr<const exec::ComputeDevice> host_;
  std::optional<cuda::DeviceProperties> gpu_;
  mutable std::mutex mutex_;
  mutable std::vector<std::string> texts_;
};

// relu(x + y) in blocks of 128 threads (the override), on a device that runs 64 of the unbounded
// build: built twice, the second time with __launch_bounds__(128), and it matches the reference.
TEST(LaunchLimits, KernelIsRebuiltWithBoundedRegisters) {
  auto f = std::make_unique<ir::Fusion>();
  {
    ir::FusionGuard g(f.get());
    ir::TensorView* x = ops::TensorBuilder().rank(2).build();
    ir::TensorView* y = ops::TensorBuilder().rank(2).build();
    f->addInput(x);
    f->addInput(y);
    f->addOutput(ops::relu(ops::add(x, y)));
  }
  auto device = std::make_shared<LimitedDevice>();
  RuntimeOptions options = test::hostOptions();
  options.device = device;
  options.paramOverrides = {{"bdimx", 128}};
  FusionExecutorCache cache(std::move(f), options);
  std::vector<eval::Argument> args{test::randomTensor({8, 300}, 1), test::randomTensor({8, 300}, 2)};
  std::vector<Tensor> got = cache.run(args);
  std::vector<Tensor> expected = eval::evaluateFusion(cache.fusion(), args);
  ASSERT_EQ(got.size(), 1u);
  auto err = eval::expectClose(got[0], expected[0], eval::defaultTolerance(got[0].dtype(), 1),
                               "output 0");
  EXPECT_FALSE(err.has_value()) << *err;

  std::vector<std::string> texts = device->texts();
  ASSERT_EQ(texts.size(), 2u) << "one build, then one with bounded registers";
  EXPECT_EQ(texts[0].find("__launch_bounds__("), std::string::npos) << texts[0];
  EXPECT_NE(texts[1].find("__launch_bounds__(128) "), std::string::npos) << texts[1];

  // A cached run launches the bounded kernel without building anything.
  got = cache.run(args);
  EXPECT_EQ(device->texts().size(), 2u);
}

std::unique_ptr<ir::Fusion> normalizationFusion(const std::string& family, int64_t rows,
                                                int64_t width, DataType dtype) {
  auto f = std::make_unique<ir::Fusion>();
  ir::FusionGuard g(f.get());
  ir::TensorView* x = ops::TensorBuilder().shape({rows, width}).dtype(dtype).build();
  ir::TensorView* w = ops::TensorBuilder().shape({width}).dtype(dtype).build();
  f->addInput(x);
  if (family == "softmax") {
    f->addOutput(ops::softmax(x, -1));
  } else {
    f->addInput(w);
    f->addOutput(ops::rmsNorm(x, 1, w, 1e-5));
  }
  return f;
}

// On the limits of the real H100 and H200, rows from 16K to 128K wide (in registers, in shared
// memory, and past it, read again per pass) launch within the device's threads and shared
// memory per block and match the reference; each is one kernel.
TEST(LaunchLimits, WideRowsFitTheHopperParts) {
  for (const cuda::DeviceProperties& gpu : {h100(), h200()}) {
    auto device = std::make_shared<LimitedDevice>(gpu);
    for (const char* family : {"softmax", "rms_norm"}) {
      for (DataType dtype : {DataType::Float32, DataType::BFloat16}) {
        for (int64_t width : {16384, 50257, 131072}) {
          SCOPED_TRACE(gpu.name + " " + family + " " + std::string(dataTypeName(dtype)) + " " +
                       std::to_string(width));
          RuntimeOptions options = test::hostOptions();
          options.device = device;
          options.executor.poisonOutputs = true;
          FusionExecutorCache cache(normalizationFusion(family, 9, width, dtype), options);
          std::vector<eval::Argument> args;
          for (ir::Val* in : cache.fusion().inputs()) {
            Tensor t = Tensor::empty(in->as<ir::TensorView>()->rank() == 2
                                         ? std::vector<int64_t>{9, width}
                                         : std::vector<int64_t>{width},
                                     dtype);
            fillRandom(t, uint64_t(args.size()) + 7);
            args.emplace_back(std::move(t));
          }
          std::vector<Tensor> got = cache.run(args);
          std::vector<Tensor> expected = eval::evaluateFusion(cache.fusion(), args);
          auto err = eval::expectClose(got.at(0), expected.at(0),
                                       eval::defaultTolerance(dtype, width), "output 0");
          EXPECT_FALSE(err.has_value()) << *err;
          EXPECT_EQ(cache.lastRuntime()->numKernels(), 1);
        }
      }
    }
  }
}

// A schedule that asks for more shared memory than the GPU has is refused before the launch,
// with the sizes, not left to the driver (CUDA_ERROR_INVALID_VALUE): a hand override keeps a
// softmax row of 4096 floats in shared memory on a part that has 8 KB.
TEST(LaunchLimits, SharedMemoryPastTheDeviceIsRefusedBeforeLaunch) {
  cuda::DeviceProperties small = h200();
  small.name = "a GPU with 8 KB of shared memory";
  small.maxSharedMemoryPerBlockOptin = 8192;
  auto device = std::make_shared<LimitedDevice>(small);
  RuntimeOptions options = test::hostOptions();
  options.device = device;
  options.paramOverrides = {{"shared_memory", 1}};
  FusionExecutorCache cache(normalizationFusion("softmax", 4, 4096, DataType::Float32), options);
  std::vector<eval::Argument> args{test::randomTensor({4, 4096}, 3)};
  try {
    cache.run(args);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("bytes of shared memory per block"), std::string::npos) << what;
    EXPECT_NE(what.find("allows at most 8192"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace loom::runtime
