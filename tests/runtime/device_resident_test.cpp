// SPDX-License-Identifier: Apache-2.0
// Device-resident runs on the cuda backend (gpu label; skipped without a GPU): CUDA inputs give
// CUDA outputs with no copies, on the default or a created stream, through KernelExecutor and
// FusionExecutorCache (several segments), with grid reductions and aliased outputs.
#include <gtest/gtest.h>

#include <chrono>
#include <iostream>

#include "loom/runtime/fusion_executor_cache.h"
#include "runtime/plan_test_util.h"

#ifdef LOOM_HAVE_CUDA_BACKEND
#include "loom/backend/cuda/driver.h"
#include "loom/backend/cuda/memory.h"
#include "loom/backend/cuda/stream.h"
#endif

namespace loom::test {
namespace {

#ifdef LOOM_HAVE_CUDA_BACKEND

using exec::Backend;
using exec::KernelExecutor;

#define LOOM_REQUIRE_GPU()                                                        \
  do {                                                                            \
    if (!cuda::cudaAvailable()) GTEST_SKIP() << "no GPU: " << cuda::unavailableReason(); \
  } while (0)

std::vector<eval::Argument> onDevice(const std::vector<eval::Argument>& host, CUstream s = nullptr) {
  std::vector<eval::Argument> out = host;
  for (eval::Argument& a : out) {
    if (auto* t = std::get_if<Tensor>(&a)) *t = cuda::toDevice(*t, 0, s);
  }
  return out;
}

// Every output is a CUDA tensor on GPU 0; returns host copies (toHost waits for the stream).
std::vector<Tensor> backToHost(const std::vector<Tensor>& outs, CUstream s = nullptr) {
  std::vector<Tensor> host;
  for (const Tensor& t : outs) {
    EXPECT_TRUE(t.device().isCuda()) << describe(t);
    host.push_back(cuda::toHost(t, s));
  }
  return host;
}

// CUDA inputs give CUDA outputs that match the reference once copied back; the second run with
// the same layout uses the plan.
TEST(DeviceResident, InputsAndOutputsStayOnDevice) {
  LOOM_REQUIRE_GPU();
  auto f = scaledAddFusion(true);
  auto reference = f->clone();
  schedulePointwise(*f);
  KernelExecutor ke;
  ke.compile(*f, Backend::Cuda, {.poisonOutputs = true});
  for (uint64_t seed : {1u, 3u}) {
    std::vector<eval::Argument> host{randomTensor({8, 125}, seed), randomTensor({8, 125}, seed + 1),
                                     0.25 * double(seed)};
    std::vector<Tensor> outs = ke.run(onDevice(host));
    expectMatches(*reference, host, backToHost(outs), 1, "seed " + std::to_string(seed));
  }
  EXPECT_EQ(ke.planHits(), 0);  // the scalar changed: two plans
  std::vector<eval::Argument> host{randomTensor({8, 125}, 9), randomTensor({8, 125}, 10), 0.6};
  std::vector<eval::Argument> dev = onDevice(host);
  (void)ke.run(dev);
  std::vector<Tensor> outs = ke.run(dev);
  expectMatches(*reference, host, backToHost(outs), 1, "repeat");
  EXPECT_EQ(ke.planHits(), 1);
}

// Host tensors on the cuda backend are still copied in and out (host outputs).
TEST(DeviceResident, HostTensorsAreCopied) {
  LOOM_REQUIRE_GPU();
  auto f = scaledAddFusion(false);
  auto reference = f->clone();
  schedulePointwise(*f);
  KernelExecutor ke;
  ke.compile(*f, Backend::Cuda, {.poisonOutputs = true});
  std::vector<eval::Argument> host{randomTensor({5, 33}, 11), randomTensor({5, 33}, 12)};
  expectMatches(*reference, host, ke.run(host), 1, "host tensors");
}

// Everything of a run goes on the stream in ExecutorOptions; after synchronizing it, the
// results are right.
TEST(DeviceResident, NonDefaultStream) {
  LOOM_REQUIRE_GPU();
  cuda::Stream stream = cuda::Stream::create(0);
  auto f = scaledAddFusion(false);
  auto reference = f->clone();
  schedulePointwise(*f);
  KernelExecutor ke;
  ke.compile(*f, Backend::Cuda, {.poisonOutputs = true, .stream = stream.handle()});
  std::vector<eval::Argument> host{randomTensor({64, 1000}, 13), randomTensor({64, 1000}, 14)};
  std::vector<eval::Argument> dev = onDevice(host, stream.handle());
  std::vector<Tensor> outs;
  for (int i = 0; i < 3; ++i) outs = ke.run(dev);
  stream.synchronize();
  expectMatches(*reference, host, backToHost(outs, stream.handle()), 1, "stream");
}

// A grid reduction run several times in a row on the device is right every time: the
// semaphores kept with the plan are back at zero after each launch.
TEST(DeviceResident, GridReductionRepeats) {
  LOOM_REQUIRE_GPU();
  auto f = gridSumFusion();
  auto reference = f->clone();
  scheduleGridSum(*f);
  KernelExecutor ke;
  ke.compile(*f, Backend::Cuda, {.poisonOutputs = true});
  for (uint64_t seed : {15u, 16u, 17u}) {
    std::vector<eval::Argument> host{randomTensor({3, 1000}, seed)};
    std::vector<Tensor> outs = ke.run(onDevice(host));
    expectMatches(*reference, host, backToHost(outs), 1000, "run " + std::to_string(seed));
  }
  EXPECT_EQ(ke.planHits(), 2);
}

// An output that is also an input comes back as a device copy: equal values, its own memory.
TEST(DeviceResident, OutputAliasingAnInputIsCopied) {
  LOOM_REQUIRE_GPU();
  auto f = aliasFusion();
  auto reference = f->clone();
  scheduleAlias(*f);
  KernelExecutor ke;
  ke.compile(*f, Backend::Cuda, {.poisonOutputs = true});
  std::vector<eval::Argument> host{randomTensor({200}, 18)};
  std::vector<eval::Argument> dev = onDevice(host);
  std::vector<Tensor> outs = ke.run(dev);
  ASSERT_EQ(outs.size(), 2u);
  EXPECT_NE(outs[1].data(), std::get<Tensor>(dev[0]).data());
  expectMatches(*reference, host, backToHost(outs), 1, "aliased");
}

// sum(sum(x, 2)^2, 0) takes two segments; with CUDA tensors the intermediate stays on the
// device, the result is a CUDA tensor on the given stream, and a second run is a cache hit.
TEST(DeviceResident, MultiSegmentCacheOnStream) {
  LOOM_REQUIRE_GPU();
  cuda::Stream stream = cuda::Stream::create(0);
  auto f = std::make_unique<ir::Fusion>();
  {
    ir::FusionGuard g(f.get());
    ir::TensorView* x = ops::TensorBuilder().rank(3).build();
    f->addInput(x);
    ir::TensorView* mid = ops::sum(x, {2});
    f->addOutput(ops::sum(ops::mul(mid, mid), {0}));
  }
  runtime::RuntimeOptions opts;
  opts.backend = Backend::Cuda;
  opts.executor.stream = stream.handle();
  runtime::FusionExecutorCache cache(std::move(f), opts);
  for (uint64_t seed : {19u, 20u}) {
    std::vector<eval::Argument> host{randomTensor({6, 5, 7}, seed)};
    std::vector<Tensor> outs = cache.run(onDevice(host, stream.handle()));
    ASSERT_EQ(cache.lastRuntime()->numKernels(), 2);
    expectMatches(cache.fusion(), host, backToHost(outs, stream.handle()), 35,
                  "seed " + std::to_string(seed));
  }
  EXPECT_EQ(cache.hits(), 1);
  EXPECT_EQ(cache.lastRuntime()->lastRun().size(), 2u);
  // Host tensors through the same cache: copied in once, host outputs.
  std::vector<eval::Argument> host{randomTensor({6, 5, 7}, 21)};
  expectMatches(cache.fusion(), host, cache.run(host), 35, "host tensors");
}

// The cached path of a single-kernel fusion with device tensors costs little host time per run.
// The bound is loose (the goal is 5 us, measured by the benchmarks); this catches an accidental
// return to the full path (validation, evaluation, compilation) on every run.
TEST(DeviceResident, CachedRunHostTimeIsSmall) {
  LOOM_REQUIRE_GPU();
  cuda::Stream stream = cuda::Stream::create(0);
  runtime::RuntimeOptions opts;
  opts.backend = Backend::Cuda;
  opts.executor.stream = stream.handle();
  runtime::FusionExecutorCache cache(scaledAddFusion(false), opts);
  std::vector<eval::Argument> host{randomTensor({256, 256}, 22), randomTensor({256, 256}, 23)};
  std::vector<eval::Argument> dev = onDevice(host, stream.handle());
  for (int i = 0; i < 20; ++i) (void)cache.run(dev);
  stream.synchronize();
  constexpr int kRuns = 500;  // below the launch queue depth, so launches never block
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kRuns; ++i) (void)cache.run(dev);
  auto stop = std::chrono::steady_clock::now();
  stream.synchronize();
  double us = std::chrono::duration<double, std::micro>(stop - start).count() / kRuns;
  std::cout << "cached FusionExecutorCache::run: " << us << " us host time per run\n";
  EXPECT_LT(us, 50.0);
  EXPECT_EQ(cache.misses(), 1);
  // The executor alone (what the cache adds is the key and the slot bookkeeping).
  auto f = scaledAddFusion(false);
  schedulePointwise(*f);
  KernelExecutor ke;
  ke.compile(*f, Backend::Cuda, {.stream = stream.handle()});
  for (int i = 0; i < 20; ++i) (void)ke.run(dev);
  stream.synchronize();
  start = std::chrono::steady_clock::now();
  for (int i = 0; i < kRuns; ++i) (void)ke.run(dev);
  stop = std::chrono::steady_clock::now();
  stream.synchronize();
  us = std::chrono::duration<double, std::micro>(stop - start).count() / kRuns;
  std::cout << "cached KernelExecutor::run: " << us << " us host time per run\n";
  EXPECT_LT(us, 50.0);
  // For reading the numbers above: what one output allocation and free costs by itself.
  start = std::chrono::steady_clock::now();
  for (int i = 0; i < kRuns; ++i) (void)cuda::emptyCuda({256, 256}, DataType::Float32, 0, stream.handle());
  stop = std::chrono::steady_clock::now();
  stream.synchronize();
  us = std::chrono::duration<double, std::micro>(stop - start).count() / kRuns;
  std::cout << "emptyCuda + free: " << us << " us host time\n";
}

#else

// Without the CUDA backend there is nothing to run; the suite reports that instead of passing.
TEST(DeviceResident, NeedsTheCudaBackend) { GTEST_SKIP() << "built without the CUDA backend"; }

#endif

}  // namespace
}  // namespace loom::test
