// SPDX-License-Identifier: Apache-2.0
// A kernel whose first build cannot run its block (on a GPU: too many registers per thread for
// the block's thread count, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES) is built again with its
// registers bounded for the block, and runs. The device here is the host backend with a GPU's
// limit stood in: an unbounded kernel runs at most 64 threads per block, a bounded one 1024.
#include <gtest/gtest.h>

#include <memory>
#include <mutex>
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
  LimitedKernel(std::unique_ptr<exec::LoadedKernel> inner, bool bounded)
      : inner_(std::move(inner)), bounded_(bounded) {}
  void launch(const exec::LaunchParams& lp, void** args, CUstream stream) const override {
    const int64_t threads = int64_t(lp.block[0]) * lp.block[1] * lp.block[2];
    ASSERT_LE(threads, maxThreadsPerBlock()) << "a launch the device would refuse";
    inner_->launch(lp, args, stream);
  }
  int64_t maxThreadsPerBlock() const override { return bounded_ ? 1024 : 64; }

 private:
  std::unique_ptr<exec::LoadedKernel> inner_;
  bool bounded_;
};

// The host device, but kernels built without __launch_bounds__ run at most 64 threads a block.
class LimitedDevice final : public exec::ComputeDevice {
 public:
  LimitedDevice() : host_(exec::makeComputeDevice(exec::Backend::Host)) {}

  exec::Backend backend() const override { return host_->backend(); }
  int index() const override { return host_->index(); }
  Device tensorDevice() const override { return host_->tensorDevice(); }
  std::optional<cuda::DeviceProperties> gpuProperties() const override {
    return host_->gpuProperties();
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
    return std::make_unique<LimitedKernel>(host_->load(kernel, timer), bounded);
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
  Tensor copyForOutput(const Tensor& t, CUstream stream) const override {
    return host_->copyForOutput(t, stream);
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

}  // namespace
}  // namespace loom::runtime
