// SPDX-License-Identifier: Apache-2.0
// Every code block of docs/cpp-api.md, compiled and run: the text between `// [snippet NAME]` and
// `// [end snippet]` is what the document shows under `<!-- snippet: NAME -->`, and
// check_snippets.sh (test loom_docs_snippets_match) fails when the two differ. Checks outside the
// markers keep each snippet honest without cluttering the tutorial.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "loom/loom.h"

namespace {

using namespace loom;

// The tutorial's fusion: y = relu(x * 2 + bias) over x [rows, cols] and bias [cols], and the
// row sums of y.
std::unique_ptr<ir::Fusion> buildFusion() {
  // [snippet build-fusion]
  auto fusion = std::make_unique<ir::Fusion>();
  {
    ir::FusionGuard guard(fusion.get());  // ops add their IR to this fusion
    // -1: a size known only at run time; the default dtype is Float32.
    ir::TensorView* x = ops::TensorBuilder().shape({-1, -1}).build();
    ir::TensorView* bias = ops::TensorBuilder().shape({-1}).build();
    fusion->addInput(x);
    fusion->addInput(bias);

    ir::TensorView* b = ops::broadcast(bias, {true, false});  // [cols] -> [1, cols]
    ir::TensorView* y = ops::relu(ops::add(ops::mul(x, 2.0), b));
    fusion->addOutput(y);
    fusion->addOutput(ops::sum(y, {1}));  // [rows]
  }
  // [end snippet]
  return fusion;
}

TEST(CppApiDoc, HostTensorsRunThroughFusionExecutorCache) {
  std::unique_ptr<ir::Fusion> fusion = buildFusion();
  // [snippet host-tensors]
  Tensor x = Tensor::empty({4, 8}, DataType::Float32);  // contiguous, uninitialized
  for (int64_t i = 0; i < 4; ++i) {
    for (int64_t j = 0; j < 8; ++j) x.setDouble({{i, j}}, double(i - j));
  }
  Tensor bias = Tensor::empty({8}, DataType::Float32);
  bias.fill(0.5);

  // Memory the framework owns: a view, no copy; the deleter (none here) runs on the last release.
  std::vector<float> data(8, 0.5f);
  Tensor borrowed = Tensor::fromBlob(data.data(), {8}, {1}, DataType::Float32, Device::cpu());
  // [end snippet]
  EXPECT_EQ(borrowed.getDouble({{3}}), 0.5);

  // [snippet run-cache]
  runtime::RuntimeOptions options;
  options.backend = exec::Backend::Host;  // Auto: a GPU when there is one, else the host
  runtime::FusionExecutorCache cache(std::move(fusion), options);

  std::vector<eval::Argument> args = {x, bias};
  std::vector<Tensor> outs = cache.run(args);  // segments, schedules and compiles on a miss
  outs = cache.run(args);                      // a hit: the compiled kernels run again
  // [end snippet]
  EXPECT_EQ(cache.hits(), 1);

  // [snippet read-outputs]
  const Tensor& y = outs[0];             // [4, 8] f32, on the host like the inputs
  const Tensor& sums = outs[1];          // [4]
  double y03 = y.getDouble({{0, 3}});    // relu(0 * 2 - 3 * 2 + 0.5) = 0
  double y30 = y.getDouble({{3, 0}});    // relu(3 * 2 + 0.5) = 6.5
  const float* raw = y.dataAs<float>();  // row-major: y is contiguous
  double s3 = sums.getDoubleLinear(3);

  // The reference evaluator (double precision) is the oracle Loom's own tests compare with.
  std::vector<Tensor> expected = eval::evaluateFusion(cache.fusion(), args);
  std::optional<std::string> mismatch = eval::expectClose(
      sums, expected[1], eval::defaultTolerance(DataType::Float32, /*reduction_size=*/8), "sums");
  // [end snippet]
  EXPECT_EQ(y03, 0.0);
  EXPECT_EQ(y30, 6.5);
  EXPECT_EQ(raw[3 * 8], 6.5f);
  EXPECT_EQ(s3, 6.5 + 4.5 + 2.5 + 0.5);
  EXPECT_FALSE(mismatch.has_value()) << *mismatch;
  EXPECT_FALSE(eval::expectClose(y, expected[0], eval::defaultTolerance(DataType::Float32), "y"));
  EXPECT_TRUE(y.isContiguous());
}

#ifdef LOOM_HAVE_CUDA_BACKEND
TEST(CppApiDoc, CudaTensorsStayOnTheGpu) {
  if (exec::gpuCount() == 0) GTEST_SKIP() << "no GPU";
  std::unique_ptr<ir::Fusion> fusion = buildFusion();
  Tensor x = Tensor::empty({4, 8}, DataType::Float32);
  fillRandom(x, 1);
  Tensor bias = Tensor::empty({8}, DataType::Float32);
  fillRandom(bias, 2);
  // [snippet cuda-tensors]
  // Built with the CUDA backend (LOOM_HAVE_CUDA_BACKEND, Loom_HAVE_CUDA_BACKEND in CMake):
  Tensor x_gpu = cuda::toDevice(x);  // a copy on cuda:0
  Tensor bias_gpu = cuda::toDevice(bias);

  runtime::RuntimeOptions gpu_options;
  gpu_options.backend = exec::Backend::Cuda;
  gpu_options.executor.stream = nullptr;  // the CUstream every launch is queued on
  runtime::FusionExecutorCache gpu_cache(std::move(fusion), gpu_options);

  std::vector<eval::Argument> gpu_args = {x_gpu, bias_gpu};
  std::vector<Tensor> gpu_outs = gpu_cache.run(gpu_args);  // CUDA tensors, not synchronized
  Tensor y_host = cuda::toHost(gpu_outs[0]);               // waits for the stream
  // [end snippet]
  std::vector<eval::Argument> host_args = {x, bias};
  std::vector<Tensor> expected = eval::evaluateFusion(gpu_cache.fusion(), host_args);
  EXPECT_FALSE(
      eval::expectClose(y_host, expected[0], eval::defaultTolerance(DataType::Float32), "y"));
}
#endif

TEST(CppApiDoc, HandScheduledKernelExecutor) {
  Tensor x = Tensor::empty({4, 8}, DataType::Float32);
  fillRandom(x, 3);
  // [snippet kernel-executor]
  ir::Fusion scheduled;
  {
    ir::FusionGuard guard(&scheduled);
    ir::TensorView* in = ops::TensorBuilder().shape({-1, -1}).build();
    scheduled.addInput(in);
    ir::TensorView* out = ops::add(ops::mul(in, 2.0), 1.0);
    scheduled.addOutput(out);

    // The schedule, on the output: [rows, cols] -> [rows * cols / 128, 128] on blocks x threads.
    out->flatten()->split(0, 128);
    out->axis(0)->parallelize(ir::ParallelType::BIDx);
    out->axis(1)->parallelize(ir::ParallelType::TIDx);
    transform::propagateTransforms(out);  // every tensor split like `out`
    transform::parallelizeAllLike(out);
    transform::inlineMost(scheduled);  // intermediates computed where they are used
  }
  exec::KernelExecutor ke;
  ke.compile(scheduled, exec::Backend::Host);  // lower, generate CUDA C++, compile
  std::vector<eval::Argument> inputs = {x};
  std::vector<Tensor> result = ke.run(inputs);
  // [end snippet]
  for (int64_t i = 0; i < x.numel(); ++i) {
    EXPECT_EQ(result[0].getDoubleLinear(i), double(float(x.getDoubleLinear(i) * 2.0 + 1.0)));
  }
  EXPECT_EQ(ke.lastLaunch().block[0], 128u);
}

TEST(CppApiDoc, InPlaceOutputs) {
  runtime::RuntimeOptions options;
  options.backend = exec::Backend::Host;
  Tensor param = Tensor::empty({16}, DataType::Float32);
  Tensor grad = Tensor::empty({16}, DataType::Float32);
  fillRandom(param, 4);
  fillRandom(grad, 5);
  const Tensor before = param.contiguous();
  // [snippet in-place]
  auto step = std::make_unique<ir::Fusion>();
  {
    ir::FusionGuard guard(step.get());
    ir::TensorView* p = ops::TensorBuilder().shape({-1}).build();
    ir::TensorView* g = ops::TensorBuilder().shape({-1}).build();
    step->addInput(p);
    step->addInput(g);
    // p -= 0.5 * g, written into p's memory (made an output too).
    step->aliasOutputToInput(ops::sub(p, ops::mul(g, 0.5)), p);
  }
  runtime::FusionExecutorCache stepper(std::move(step), options);
  std::vector<eval::Argument> pg = {param, grad};
  std::vector<Tensor> updated = stepper.run(pg);  // updated[0] is `param`, updated
  // [end snippet]
  EXPECT_EQ(updated[0].data(), param.data());
  for (int64_t i = 0; i < 16; ++i) {
    EXPECT_EQ(param.getDoubleLinear(i),
              double(float(before.getDoubleLinear(i) - float(grad.getDoubleLinear(i) * 0.5f))));
  }
  EXPECT_TRUE(stepper.lastRuntime()->segmented().inPlaceWrites().at(0).inPlace());
}

TEST(CppApiDoc, PrintAndParseTheTextForm) {
  std::unique_ptr<ir::Fusion> fusion = buildFusion();
  // [snippet text-form]
  std::string text = ir::printFusion(*fusion);  // what `loom print` shows; .fus files hold it
  std::unique_ptr<ir::Fusion> parsed = ir::parseFusion(text, "my_fusion.fus");
  bool same = ir::structurallyEqual(*fusion, *parsed);  // true
  bool stable = ir::printFusion(*parsed) == text;       // true: printing is canonical
  // [end snippet]
  EXPECT_TRUE(same);
  EXPECT_TRUE(stable);
  EXPECT_NE(text.find("sum"), std::string::npos) << text;
}

TEST(CppApiDoc, Version) {
  // [snippet version]
#if LOOM_VERSION < 100  // 0.1.0
#error "this code needs Loom 0.1.0 or newer"
#endif
  std::string version = LOOM_VERSION_STRING;  // "0.1.0"
  // [end snippet]
  EXPECT_EQ(version, std::to_string(LOOM_VERSION_MAJOR) + "." + std::to_string(LOOM_VERSION_MINOR) +
                         "." + std::to_string(LOOM_VERSION_PATCH));
}

}  // namespace
