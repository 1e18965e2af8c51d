// SPDX-License-Identifier: Apache-2.0
// Fusions scheduled by the inner-persistent scheduler, lowered and run on the host backend, and
// compared with the reference evaluator on the unscheduled original.
#include <gtest/gtest.h>

#include <memory>

#include "loom/eval/compare.h"
#include "loom/eval/reference_evaluator.h"
#include "loom/exec/kernel_executor.h"
#include "loom/ir/ir.h"
#include "loom/ops/ops.h"
#include "loom/scheduler/normalization.h"

namespace loom::scheduler {
namespace {

using namespace loom::ir;

Tensor randomTensor(std::vector<int64_t> sizes, uint64_t seed) {
  Tensor t = Tensor::empty(std::move(sizes), DataType::Float32);
  fillRandom(t, seed);
  return t;
}

// Schedules a copy of `original`, runs it (outputs poisoned) and compares; "" when it matches.
std::string runScheduled(const Fusion& original, const std::vector<eval::Argument>& args,
                         int64_t reduction_size) {
  std::unique_ptr<Fusion> f = original.clone();
  SchedulerRuntimeInfo info(*f, args);
  auto params = innerPersistentHeuristics(*f, info);
  scheduleInnerPersistent(*f, *params);
  exec::KernelExecutor ke;
  ke.compile(*f, exec::Backend::Host, {.poisonOutputs = true});
  std::vector<Tensor> outs = ke.run(args);
  std::vector<Tensor> expected = eval::evaluateFusion(original, args);
  for (size_t i = 0; i < outs.size(); ++i) {
    auto tol = eval::defaultTolerance(expected[i].dtype(), reduction_size);
    if (auto msg = eval::expectClose(outs[i].contiguous(), expected[i], tol,
                                     "output " + std::to_string(i))) {
      return *msg + "\n" + params->toString() + "\n" + ke.generated().kernelText;
    }
  }
  return "";
}

// Softmax scheduled with a persistent batch, vectorized input loads and a block reduction runs
// on the host backend and matches the reference.
TEST(InnerPersistentExec, Softmax) {
  Fusion f;
  {
    FusionGuard guard(&f);
    auto* x = ops::TensorBuilder().shape({-1, -1}).build();
    f.addInput(x);
    f.addOutput(ops::softmax(x, 1));
  }
  EXPECT_EQ(runScheduled(f, {randomTensor({6, 1000}, 1)}, 1000), "");
}

// Narrow rows share a block (TIDy) and a prime width leaves a masked remainder.
TEST(InnerPersistentExec, SoftmaxNarrowPrimeRows) {
  Fusion f;
  {
    FusionGuard guard(&f);
    auto* x = ops::TensorBuilder().shape({-1, -1}).build();
    f.addInput(x);
    f.addOutput(ops::softmax(x, 1));
  }
  EXPECT_EQ(runScheduled(f, {randomTensor({300, 13}, 2)}, 13), "");
}

}  // namespace
}  // namespace loom::scheduler
