// SPDX-License-Identifier: Apache-2.0
// KernelExecutor launch plans on the host backend: a plan per input signature that stays
// correct across sizes, scalar values and layouts, and the device rules for arguments (checked
// with fake CUDA tensors, so no GPU is needed).
#include <gtest/gtest.h>

#include "loom/runtime/fusion_executor_cache.h"
#include "runtime/plan_test_util.h"

namespace loom::test {
namespace {

using exec::Backend;
using exec::KernelExecutor;

// A CUDA-labelled tensor over host memory: enough for the device checks, never launched on.
Tensor fakeCuda(const Tensor& host, int index = 0) {
  return Tensor::fromBlob(host.data(), host.sizes(), host.strides(), host.dtype(),
                          Device::cuda(index));
}

// Sizes A, then B, then A again: each run matches the reference (outputs poisoned), A's plan is
// found again, and B got a plan of its own.
TEST(LaunchPlan, SizesABAMatchReference) {
  auto f = scaledAddFusion(false);
  auto reference = f->clone();
  schedulePointwise(*f);
  KernelExecutor ke;
  ke.compile(*f, Backend::Host, {.poisonOutputs = true});
  std::vector<eval::Argument> a{randomTensor({8, 125}, 1), randomTensor({8, 125}, 2)};
  std::vector<eval::Argument> b{randomTensor({3, 50}, 3), randomTensor({3, 50}, 4)};
  std::vector<eval::Argument> a2{randomTensor({8, 125}, 5), randomTensor({8, 125}, 6)};
  expectMatches(*reference, a, ke.run(a), 1, "A");
  EXPECT_EQ(ke.lastLaunch().grid[0], 8u);  // 1000 elements / 128
  expectMatches(*reference, b, ke.run(b), 1, "B");
  EXPECT_EQ(ke.lastLaunch().grid[0], 2u);  // 150 / 128
  expectMatches(*reference, a2, ke.run(a2), 1, "A again");
  EXPECT_EQ(ke.lastLaunch().grid[0], 8u);
  EXPECT_EQ(ke.planMisses(), 2);
  EXPECT_EQ(ke.planHits(), 1);
  EXPECT_EQ(ke.numPlans(), 2);
}

// Scalar input values are part of the signature: a changed scalar changes the result.
TEST(LaunchPlan, ChangedScalarChangesResult) {
  auto f = scaledAddFusion(true);
  auto reference = f->clone();
  schedulePointwise(*f);
  KernelExecutor ke;
  ke.compile(*f, Backend::Host, {.poisonOutputs = true});
  Tensor x = randomTensor({4, 64}, 7);
  Tensor y = randomTensor({4, 64}, 8);
  std::vector<eval::Argument> first{x, y, 1.5};
  std::vector<eval::Argument> second{x, y, -3.0};
  std::vector<Tensor> o1 = ke.run(first);
  std::vector<Tensor> o2 = ke.run(second);
  expectMatches(*reference, first, o1, 1, "alpha 1.5");
  expectMatches(*reference, second, o2, 1, "alpha -3");
  EXPECT_NE(o1[0].getDoubleLinear(0), o2[0].getDoubleLinear(0));
  std::vector<Tensor> o3 = ke.run(first);  // the first plan again
  expectMatches(*reference, first, o3, 1, "alpha 1.5 again");
  EXPECT_EQ(ke.planHits(), 1);
}

// A transposed (strided) input after a contiguous one of the same sizes gets its own plan with
// its strides, and the contiguous layout still finds its plan afterwards. The input is declared
// non-contiguous, which both layouts satisfy.
TEST(LaunchPlan, StridedInputAfterContiguous) {
  auto f = scaledAddFusion(false);
  f->inputs()[0]->as<ir::TensorView>()->setContiguity({false, false});
  auto reference = f->clone();
  schedulePointwise(*f);
  KernelExecutor ke;
  ke.compile(*f, Backend::Host, {.poisonOutputs = true});
  std::vector<eval::Argument> dense{randomTensor({24, 40}, 9), randomTensor({24, 40}, 10)};
  Tensor base = randomTensor({40, 24}, 11);
  std::vector<int64_t> swap{1, 0};
  std::vector<eval::Argument> strided{base.permute(swap), randomTensor({24, 40}, 12)};
  expectMatches(*reference, dense, ke.run(dense), 1, "contiguous");
  expectMatches(*reference, strided, ke.run(strided), 1, "transposed");
  expectMatches(*reference, dense, ke.run(dense), 1, "contiguous again");
  EXPECT_EQ(ke.planMisses(), 2);
  EXPECT_EQ(ke.planHits(), 1);
}

// Only the last kMaxPlans signatures are kept; an evicted one is planned again, correctly.
TEST(LaunchPlan, KeepsTheLastFewSignatures) {
  auto f = scaledAddFusion(false);
  auto reference = f->clone();
  schedulePointwise(*f);
  KernelExecutor ke;
  ke.compile(*f, Backend::Host);
  for (int64_t n = 1; n <= int64_t(KernelExecutor::kMaxPlans) + 1; ++n) {
    std::vector<eval::Argument> args{randomTensor({2, n}, 13), randomTensor({2, n}, 14)};
    (void)ke.run(args);
  }
  EXPECT_EQ(ke.numPlans(), int64_t(KernelExecutor::kMaxPlans));
  std::vector<eval::Argument> first{randomTensor({2, 1}, 15), randomTensor({2, 1}, 16)};
  expectMatches(*reference, first, ke.run(first), 1, "evicted size");
  EXPECT_EQ(ke.planHits(), 0);
}

// A grid reduction run twice on the host backend gives the right sums both times: the plan's
// semaphores are back at zero after each launch.
TEST(LaunchPlan, GridReductionRunsTwice) {
  auto f = gridSumFusion();
  auto reference = f->clone();
  scheduleGridSum(*f);
  KernelExecutor ke;
  ke.compile(*f, Backend::Host, {.poisonOutputs = true});
  for (uint64_t seed : {17u, 18u, 19u}) {
    std::vector<eval::Argument> args{randomTensor({3, 1000}, seed)};
    expectMatches(*reference, args, ke.run(args), 1000, "run " + std::to_string(seed));
  }
  EXPECT_EQ(ke.planHits(), 2);
}

// Inputs that fail validation leave no plan behind, and the error is the full-path one.
TEST(LaunchPlan, InvalidInputsLeaveNoPlan) {
  auto f = scaledAddFusion(false);
  schedulePointwise(*f);
  KernelExecutor ke;
  ke.compile(*f, Backend::Host);
  std::vector<eval::Argument> bad{randomTensor({4, 8}, 20),
                                  Tensor::empty({4, 8}, DataType::Float64)};
  std::string msg = userErrorOf([&] { ke.run(bad); });
  EXPECT_NE(msg.find("input 1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("to be bound to a tensor of dtype"), std::string::npos) << msg;
  EXPECT_EQ(ke.numPlans(), 0);
  msg = userErrorOf([&] { ke.run(bad); });  // still checked: nothing was cached
  EXPECT_NE(msg.find("to be bound to a tensor of dtype"), std::string::npos) << msg;
}

// A CUDA tensor given to the host backend is a UserError naming the input and what was expected.
TEST(LaunchPlan, CudaTensorOnHostBackendIsRejected) {
  auto f = scaledAddFusion(false);
  schedulePointwise(*f);
  KernelExecutor ke;
  ke.compile(*f, Backend::Host);
  Tensor x = randomTensor({4, 8}, 22);
  std::vector<eval::Argument> args{x, fakeCuda(x)};
  std::string msg = userErrorOf([&] { ke.run(args); });
  EXPECT_NE(msg.find("input 1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("is a CUDA tensor"), std::string::npos) << msg;
  EXPECT_NE(msg.find("expected a host (cpu) tensor"), std::string::npos) << msg;
  EXPECT_EQ(ke.numPlans(), 0);
}

// On the cuda backend, host and CUDA tensors may not be mixed, and CUDA tensors must be on
// GPU 0; both are reported before any GPU is touched.
TEST(LaunchPlan, MixedOrForeignDevicesOnCudaAreRejected) {
#ifndef LOOM_HAVE_CUDA_BACKEND
  GTEST_SKIP() << "built without the CUDA backend";
#else
  auto f = scaledAddFusion(false);
  schedulePointwise(*f);
  KernelExecutor ke;
  ke.compile(*f, Backend::Cuda);
  Tensor x = randomTensor({4, 8}, 23);
  std::vector<eval::Argument> mixed{fakeCuda(x), x};
  std::string msg = userErrorOf([&] { ke.run(mixed); });
  EXPECT_NE(msg.find("input 1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("is on cpu but input 0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("all CUDA tensors"), std::string::npos) << msg;
  std::vector<eval::Argument> other_gpu{fakeCuda(x, 1), fakeCuda(x, 1)};
  msg = userErrorOf([&] { ke.run(other_gpu); });
  EXPECT_NE(msg.find("input 0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("is on cuda:1: expected a CUDA tensor on GPU 0"), std::string::npos) << msg;
  // An executor of GPU 2 (ExecutorOptions::device) expects its inputs there.
  KernelExecutor ke2;
  ke2.compile(*f, Backend::Cuda, {.device = 2});
  msg = userErrorOf([&] { ke2.run(other_gpu); });
  EXPECT_NE(msg.find("is on cuda:1: expected a CUDA tensor on GPU 2"), std::string::npos) << msg;
  msg = userErrorOf([&] { KernelExecutor().compile(*f, Backend::Cuda, {.device = -1}); });
  EXPECT_NE(msg.find("ExecutorOptions::device must be a GPU index (>= 0), got -1"),
            std::string::npos)
      << msg;
#endif
}

// FusionExecutorCache applies the same device rules on a miss, and caches nothing for them.
TEST(LaunchPlan, CacheRejectsCudaTensorsOnHost) {
  runtime::RuntimeOptions opts;
  opts.backend = Backend::Host;
  runtime::FusionExecutorCache cache(scaledAddFusion(false), opts);
  Tensor x = randomTensor({4, 8}, 24);
  std::vector<eval::Argument> args{fakeCuda(x), fakeCuda(x)};
  std::string msg = userErrorOf([&] { cache.run(args); });
  EXPECT_NE(msg.find("input 0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("expected a host (cpu) tensor"), std::string::npos) << msg;
  EXPECT_EQ(cache.numKeys(), 0);
}

// The cache's hit path reaches the executor's plan: the second run with the same layout is a
// cache hit and a plan hit, and is still correct.
TEST(LaunchPlan, CacheHitUsesThePlan) {
  runtime::RuntimeOptions opts;
  opts.backend = Backend::Host;
  opts.executor.poisonOutputs = true;
  runtime::FusionExecutorCache cache(scaledAddFusion(true), opts);
  std::vector<eval::Argument> a{randomTensor({6, 64}, 25), randomTensor({6, 64}, 26), 0.5};
  std::vector<eval::Argument> b{randomTensor({6, 64}, 27), randomTensor({6, 64}, 28), 0.5};
  expectMatches(cache.fusion(), a, cache.run(a), 1, "first");
  expectMatches(cache.fusion(), b, cache.run(b), 1, "second");
  EXPECT_EQ(cache.hits(), 1);
  const runtime::FusionKernelRuntime* rt = cache.lastRuntime();
  ASSERT_NE(rt, nullptr);
  ASSERT_EQ(rt->numKernels(), 1);
  EXPECT_EQ(rt->executor(0).planHits(), 1);
  EXPECT_EQ(rt->executor(0).planMisses(), 1);
}

// Repeated cached runs with the same inputs grow nothing: one key, one runtime, one plan; every
// later run is a cache hit and a plan hit; the kernel record's strings are the ones filled at construction (not
// rebuilt per run); and each run returns fresh outputs, so earlier results stay intact.
TEST(LaunchPlan, RepeatedCachedRunsGrowNothing) {
  runtime::RuntimeOptions opts;
  opts.backend = Backend::Host;
  runtime::FusionExecutorCache cache(scaledAddFusion(true), opts);
  std::vector<eval::Argument> a{randomTensor({4, 96}, 31), randomTensor({4, 96}, 32), 1.5};
  std::vector<Tensor> first = cache.run(a);
  const runtime::FusionKernelRuntime* rt = cache.lastRuntime();
  ASSERT_NE(rt, nullptr);
  ASSERT_EQ(rt->lastRun().size(), 1u);
  const char* scheduler = rt->lastRun()[0].scheduler.data();
  const char* params = rt->lastRun()[0].params.data();
  const std::string params_text = rt->lastRun()[0].params;
  constexpr int kRuns = 20;
  std::vector<Tensor> last;
  for (int i = 0; i < kRuns; ++i) {
    last = cache.run(a);
    ASSERT_EQ(last.size(), 1u);
    EXPECT_NE(last[0].data(), first[0].data()) << "run " << i << " reused an earlier output";
  }
  EXPECT_EQ(cache.misses(), 1);
  EXPECT_EQ(cache.hits(), kRuns);
  EXPECT_EQ(cache.numKeys(), 1);
  EXPECT_EQ(cache.numRuntimes(), 1);
  EXPECT_EQ(cache.lastRuntime(), rt);
  EXPECT_EQ(rt->executor(0).planHits(), kRuns);
  EXPECT_EQ(rt->executor(0).planMisses(), 1);
  EXPECT_EQ(rt->executor(0).numPlans(), 1);
  EXPECT_EQ(rt->lastRun()[0].scheduler.data(), scheduler);
  EXPECT_EQ(rt->lastRun()[0].params.data(), params);
  EXPECT_EQ(rt->lastRun()[0].params, params_text);
  EXPECT_GE(rt->lastRun()[0].seconds, 0.0);
  // Both the first and the last output hold correct values (no output buffer was shared).
  expectMatches(cache.fusion(), a, first, 1, "first run");
  expectMatches(cache.fusion(), a, last, 1, "last run");
}

// runInto reuses the caller's vector (no new buffer once it has room) and gives what run() gives.
TEST(LaunchPlan, RunIntoReusesTheOutputVector) {
  auto f = scaledAddFusion(false);
  auto reference = f->clone();
  schedulePointwise(*f);
  KernelExecutor ke;
  ke.compile(*f, Backend::Host, {.poisonOutputs = true});
  std::vector<eval::Argument> a{randomTensor({5, 70}, 41), randomTensor({5, 70}, 42)};
  std::vector<Tensor> outs;
  ke.runInto(a, outs);
  ASSERT_EQ(outs.size(), 1u);
  const Tensor* buffer = outs.data();
  void* first_data = outs[0].data();
  ke.runInto(a, outs);
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_EQ(outs.data(), buffer);
  EXPECT_NE(outs[0].data(), first_data);  // a fresh output tensor each run
  expectMatches(*reference, a, outs, 1, "runInto");
  EXPECT_EQ(ke.planHits(), 1);
  EXPECT_EQ(ke.planMisses(), 1);
}

// A ComputeDevice names its backend and GPU, and says where its tensors live; asking for a GPU
// in a build without the CUDA backend, or for a negative index, is a user error.
TEST(ComputeDevice, NamesBackendIndexAndTensorPlace) {
  std::shared_ptr<const exec::ComputeDevice> host = exec::makeComputeDevice(Backend::Host);
  EXPECT_EQ(host->backend(), Backend::Host);
  EXPECT_EQ(host->name(), "host");
  EXPECT_EQ(host->tensorDevice(), Device::cpu());
  EXPECT_FALSE(host->gpuProperties().has_value());
  Tensor x = randomTensor({4, 8}, 51);
  std::vector<eval::Argument> on_host{x};
  EXPECT_FALSE(host->copiesArguments(on_host));
  std::string msg = userErrorOf([&] { exec::makeComputeDevice(Backend::Cuda, -1); });
  EXPECT_NE(msg.find("a GPU index must be >= 0, got -1"), std::string::npos) << msg;
#ifdef LOOM_HAVE_CUDA_BACKEND
  // Naming a GPU touches no driver; using it does.
  std::shared_ptr<const exec::ComputeDevice> gpu = exec::makeComputeDevice(Backend::Cuda, 3);
  EXPECT_EQ(gpu->backend(), Backend::Cuda);
  EXPECT_EQ(gpu->index(), 3);
  EXPECT_EQ(gpu->name(), "cuda:3");
  EXPECT_EQ(gpu->tensorDevice(), Device::cuda(3));
  EXPECT_TRUE(gpu->copiesArguments(on_host));
  std::vector<eval::Argument> resident{fakeCuda(x, 3)};
  EXPECT_FALSE(gpu->copiesArguments(resident));
#else
  msg = userErrorOf([&] { exec::makeComputeDevice(Backend::Cuda, 0); });
  EXPECT_NE(msg.find("has no CUDA backend"), std::string::npos) << msg;
#endif
}

// The executor and the cache take a device object; every segment's executor uses that one, and
// its argument rules are the device's.
TEST(ComputeDevice, ExecutorAndCacheRunOnTheGivenDevice) {
  auto f = scaledAddFusion(false);
  auto reference = f->clone();
  std::shared_ptr<const exec::ComputeDevice> host = exec::makeComputeDevice(Backend::Host);
  auto scheduled = f->clone();
  schedulePointwise(*scheduled);
  KernelExecutor ke;
  ke.compile(*scheduled, host, {.poisonOutputs = true});
  EXPECT_EQ(&ke.device(), host.get());
  std::vector<eval::Argument> a{randomTensor({6, 33}, 52), randomTensor({6, 33}, 53)};
  expectMatches(*reference, a, ke.run(a), 1, "executor on the host device");

  runtime::RuntimeOptions opts;
  opts.device = host;
  opts.executor.poisonOutputs = true;
  runtime::FusionExecutorCache cache(f->clone(), opts);
  expectMatches(*reference, a, cache.run(a), 1, "cache on the host device");
  ASSERT_NE(cache.lastRuntime(), nullptr);
  for (int64_t s = 0; s < cache.lastRuntime()->numKernels(); ++s) {
    EXPECT_EQ(&cache.lastRuntime()->executor(s).device(), host.get()) << "segment " << s;
  }
#ifdef LOOM_HAVE_CUDA_BACKEND
  // An executor of cuda:2 wants its CUDA inputs there; that is checked before any GPU is used.
  KernelExecutor on_gpu2;
  on_gpu2.compile(*scheduled, exec::makeComputeDevice(Backend::Cuda, 2));
  std::vector<eval::Argument> on_gpu1{fakeCuda(std::get<Tensor>(a[0]), 1),
                                      fakeCuda(std::get<Tensor>(a[1]), 1)};
  std::string msg = userErrorOf([&] { on_gpu2.run(on_gpu1); });
  EXPECT_NE(msg.find("is on cuda:1: expected a CUDA tensor on GPU 2"), std::string::npos) << msg;
#endif
}

}  // namespace
}  // namespace loom::test
