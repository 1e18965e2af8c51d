// SPDX-License-Identifier: Apache-2.0
// KernelExecutor::compile() while other threads run the executor (host backend): compile waits for
// the runs in flight and swaps the new kernel in, so every run computes with one whole kernel
// (before, compile() freed the kernel and its module under a launch: a crash, or an error read
// from freed memory). Label `threads`: ./test.sh --tsan runs it under ThreadSanitizer.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "backend_available.h"
#include "loom/eval/compare.h"
#include "loom/eval/reference_evaluator.h"
#include "loom/exec/kernel_executor.h"
#include "loom/ir/ir.h"
#include "loom/ops/ops.h"
#include "loom/transform/cache.h"
#include "user_error_of.h"

namespace loom::exec {
namespace {

using ir::Fusion;
using ir::FusionGuard;
using ir::ParallelType;

constexpr int kRunners = 4;
constexpr int64_t kElements = 4096;

// out = x + 1 (add) or x * 2 (mul), one element per thread, 128 threads per block. The reference
// is the unscheduled clone.
struct Pointwise {
  std::unique_ptr<Fusion> scheduled;
  std::unique_ptr<Fusion> reference;
};

Pointwise pointwise(bool add) {
  Pointwise p;
  p.scheduled = std::make_unique<Fusion>();
  FusionGuard guard(p.scheduled.get());
  auto* x = ops::TensorBuilder().shape({-1}).build();
  p.scheduled->addInput(x);
  auto* out = add ? ops::add(x, 1.0) : ops::mul(x, 2.0);
  p.scheduled->addOutput(out);
  p.reference = p.scheduled->clone();
  out->split(0, 128);
  out->axis(0)->parallelize(ParallelType::BIDx);
  out->axis(1)->parallelize(ParallelType::TIDx);
  return p;
}

Tensor randomInput(uint64_t seed, int64_t elements = kElements) {
  Tensor t = Tensor::empty({elements}, DataType::Float32);
  fillRandom(t, seed);
  return t;
}

// "" when `got` is what one of `references` computes from `input`, else why not.
std::string matchesOne(const Tensor& got, const Tensor& input,
                       const std::vector<const Fusion*>& references) {
  std::string why;
  for (const Fusion* ref : references) {
    std::vector<eval::Argument> args{input};
    std::vector<Tensor> want = eval::evaluateFusion(*ref, args);
    auto err =
        eval::expectClose(got, want.at(0), eval::defaultTolerance(DataType::Float32, 1), "output");
    if (!err.has_value()) return "";
    why += *err + "\n";
  }
  return why;
}

// Four threads run the executor in a loop while the main thread compiles it again and again,
// alternating two kernels. Every run returns what one of the two computes (never a crash, a
// half-swapped kernel or an error), and once the compiles stop a run computes the last one.
TEST(KernelExecutorThreads, CompileWaitsForRunsInFlight) {
  if (auto why = test::backendUnavailable(Backend::Host)) GTEST_SKIP() << *why;
  Pointwise add = pointwise(true);
  Pointwise mul = pointwise(false);
  const std::vector<const Fusion*> references{add.reference.get(), mul.reference.get()};
  KernelExecutor ke;
  ke.compile(*add.scheduled, Backend::Host, {.poisonOutputs = true});
  {  // Build both modules once (the host compiler's cache), so the loop below races launches.
    std::vector<eval::Argument> args{randomInput(1)};
    ke.run(args);
    ke.compile(*mul.scheduled, Backend::Host, {.poisonOutputs = true});
    ke.run(args);
  }

  std::atomic<bool> stop{false};
  std::atomic<int> ready{0};
  std::atomic<int64_t> runs{0};
  std::atomic<int> failures{0};
  std::vector<std::thread> runners;
  for (int t = 0; t < kRunners; ++t) {
    runners.emplace_back([&, t] {
      ready.fetch_add(1);
      for (uint64_t i = 0; !stop.load(); ++i) {
        Tensor x = randomInput(uint64_t(1000 * t) + i + 2);
        try {
          std::vector<eval::Argument> args{x};
          std::vector<Tensor> out = ke.run(args);
          std::string why = matchesOne(out.at(0), x, references);
          if (!why.empty()) {
            ADD_FAILURE() << "runner " << t << " run " << i << ":\n" << why;
            failures.fetch_add(1);
          }
        } catch (const std::exception& e) {
          ADD_FAILURE() << "runner " << t << " run " << i << ": " << e.what();
          failures.fetch_add(1);
        }
        runs.fetch_add(1);
      }
    });
  }
  while (ready.load() < kRunners) std::this_thread::yield();
  constexpr int kCompiles = 16;
  for (int c = 0; c < kCompiles; ++c) {
    // Let some runs start on the current kernel before replacing it.
    const int64_t before = runs.load();
    while (runs.load() < before + 2) std::this_thread::yield();
    ke.compile(c % 2 == 0 ? *add.scheduled : *mul.scheduled, Backend::Host,
               {.poisonOutputs = true});
  }
  stop.store(true);
  for (std::thread& r : runners) r.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GE(runs.load(), 2 * kCompiles);

  // The last compile (c = 15) was the mul kernel: every run now computes it.
  Tensor x = randomInput(7);
  std::vector<eval::Argument> args{x};
  EXPECT_EQ(matchesOne(ke.run(args).at(0), x, {mul.reference.get()}), "");
}

// A compile() that throws (lowering refuses the schedule) leaves the executor as it was: it still
// runs the kernel it had, also for sizes it has no launch plan for yet (a plan made from the
// refused fusion would bind the wrong inputs).
TEST(KernelExecutorThreads, FailedCompileKeepsThePreviousKernel) {
  if (auto why = test::backendUnavailable(Backend::Host)) GTEST_SKIP() << *why;
  Pointwise add = pointwise(true);
  KernelExecutor ke;
  ke.compile(*add.scheduled, Backend::Host, {.poisonOutputs = true});

  // A global intermediate written by the blocks of its loop and read by all of them (no
  // grid-wide barrier): lowering refuses it.
  Fusion bad;
  {
    FusionGuard guard(&bad);
    auto* x = ops::TensorBuilder().shape({4, 32}).build();
    bad.addInput(x);
    auto* out = ops::exp(x);
    bad.addOutput(out);
    auto* c = transform::cacheAfter(x, ir::MemoryType::Global);
    c->axis(0)->parallelize(ParallelType::BIDx);
    c->axis(1)->parallelize(ParallelType::TIDx);
    out->axis(1)->parallelize(ParallelType::TIDx);
  }
  EXPECT_NE(test::userErrorOf([&] { ke.compile(bad, Backend::Host); }).find("no grid-wide barrier"),
            std::string::npos);

  for (int64_t elements : {kElements, int64_t(1000)}) {
    Tensor x = randomInput(3, elements);
    std::vector<eval::Argument> args{x};
    EXPECT_EQ(matchesOne(ke.run(args).at(0), x, {add.reference.get()}), "") << elements;
  }
}

}  // namespace
}  // namespace loom::exec
