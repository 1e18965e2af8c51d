// SPDX-License-Identifier: Apache-2.0
// FusionExecutorCache::run from 8 threads at once on the host backend: every key compiles once,
// hits run concurrently (each run in its own scratch and launch plan), and every output matches
// the reference evaluator, which the threads also run concurrently on the cache's fusion.
// Built and run under ThreadSanitizer by `./test.sh --tsan` (label `threads`).
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "loom/eval/compare.h"
#include "loom/eval/reference_evaluator.h"
#include "loom/ir/ir.h"
#include "loom/ops/ops.h"
#include "loom/runtime/fusion_executor_cache.h"
#include "runtime/runtime_test_util.h"

namespace loom::runtime {
namespace {

using ir::Fusion;
using ir::FusionGuard;
using ir::TensorView;
using test::hostOptions;
using test::randomTensor;

constexpr int kThreads = 8;

// Softmax over dim 1 (normalization scheduler) and the variance over dim 0 of the same input (a
// Welford: the inner-outer-persistent scheduler, which takes softmax with a plain sum over dim 0
// in one kernel, leaves it to the reduction scheduler), so more than one kernel.
std::unique_ptr<Fusion> twoReductionsFusion() {
  auto f = std::make_unique<Fusion>();
  FusionGuard g(f.get());
  TensorView* x = ops::TensorBuilder().rank(2).build();
  f->addInput(x);
  f->addOutput(ops::softmax(x, 1));
  f->addOutput(ops::varMean(x, {0}).var);
  return f;
}

// Runs `iterations` runs per thread, thread t's run i on shape (t + i) % shapes.size() with its
// own random inputs, checking each result against the reference; returns the failures.
int hammer(FusionExecutorCache& cache, const std::vector<std::vector<int64_t>>& shapes,
           int iterations) {
  std::atomic<int> failures{0};
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Start together, so the first misses race.
      ready.fetch_add(1);
      while (ready.load() < kThreads) std::this_thread::yield();
      for (int i = 0; i < iterations; ++i) {
        const std::vector<int64_t>& shape = shapes[size_t(t + i) % shapes.size()];
        std::vector<eval::Argument> args{randomTensor(shape, uint64_t(1000 * t + i + 1))};
        try {
          std::vector<Tensor> got = cache.run(args);
          std::vector<Tensor> want = eval::evaluateFusion(cache.fusion(), args);
          if (got.size() != want.size()) {
            ADD_FAILURE() << "thread " << t << " run " << i << ": " << got.size() << " outputs";
            failures.fetch_add(1);
            continue;
          }
          for (size_t o = 0; o < got.size(); ++o) {
            auto err = eval::expectClose(got[o], want[o],
                                         eval::defaultTolerance(got[o].dtype(), shape[0]),
                                         "output " + std::to_string(o));
            if (err.has_value()) {
              ADD_FAILURE() << "thread " << t << " run " << i << ": " << *err;
              failures.fetch_add(1);
            }
          }
        } catch (const std::exception& e) {
          ADD_FAILURE() << "thread " << t << " run " << i << ": " << e.what();
          failures.fetch_add(1);
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  return failures.load();
}

// Three shapes over 8 threads: the first runs of each shape miss concurrently and compile once,
// the rest are concurrent hits on shared runtimes.
TEST(FusionExecutorCacheThreads, EightThreadsOneCache) {
  FusionExecutorCache cache(twoReductionsFusion(), hostOptions());
  const std::vector<std::vector<int64_t>> shapes{{8, 64}, {16, 130}, {33, 70}};
  constexpr int kIterations = 6;
  EXPECT_EQ(hammer(cache, shapes, kIterations), 0);
  EXPECT_EQ(cache.numKeys(), 3);
  EXPECT_EQ(cache.misses(), 3) << "a key was compiled more than once";
  EXPECT_EQ(cache.hits(), kThreads * kIterations - 3);
  ASSERT_NE(cache.lastRuntime(), nullptr);
  EXPECT_GE(cache.lastRuntime()->numKernels(), 2);
}

// One key only: every thread runs the same compiled kernels at the same time (plans and scratch
// are taken per run, so the launches must not share argument buffers or grid work space).
TEST(FusionExecutorCacheThreads, EightThreadsOneKey) {
  FusionExecutorCache cache(twoReductionsFusion(), hostOptions());
  constexpr int kIterations = 8;
  EXPECT_EQ(hammer(cache, {{24, 96}}, kIterations), 0);
  EXPECT_EQ(cache.numKeys(), 1);
  EXPECT_EQ(cache.misses(), 1);
  EXPECT_EQ(cache.hits(), kThreads * kIterations - 1);
}

// Bad inputs from several threads at once are UserErrors in each thread; nothing is cached for
// them and the cache keeps working.
TEST(FusionExecutorCacheThreads, ErrorsInThreads) {
  FusionExecutorCache cache(twoReductionsFusion(), hostOptions());
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<eval::Argument> bad{Tensor::empty({4, 4, 4}, DataType::Float32)};
      try {
        cache.run(bad);
      } catch (const UserError& e) {
        if (std::string(e.what()).find("to be bound to a tensor of rank 2,") != std::string::npos)
          errors.fetch_add(1);
      }
      (void)t;
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(errors.load(), kThreads);
  EXPECT_EQ(cache.numKeys(), 0);
  EXPECT_EQ(hammer(cache, {{4, 32}}, 2), 0);
}

}  // namespace
}  // namespace loom::runtime
