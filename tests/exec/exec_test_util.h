// SPDX-License-Identifier: Apache-2.0
// The shared body of the execution tests: the backend a test binary targets, and "run a
// hand-scheduled case and compare it with the reference evaluator on the unscheduled clone".
#pragma once

#include <gtest/gtest.h>

#include "backend_available.h"

#include "exec/exec_cases.h"
#include "loom/eval/compare.h"
#include "loom/eval/reference_evaluator.h"
#include "loom/exec/kernel_executor.h"
#ifdef LOOM_HAVE_CUDA_BACKEND
#include "loom/backend/cuda/driver.h"
#endif

namespace loom::test {

/// Host for the emu executables, CUDA for the gpu ones (built with LOOM_EXEC_TEST_CUDA).
inline exec::Backend testBackend() {
#ifdef LOOM_EXEC_TEST_CUDA
  return exec::Backend::Cuda;
#else
  return exec::Backend::Host;
#endif
}

/// A scheduled kernel's outputs (poisoned before the launch) match the reference evaluator's
/// outputs of the same fusion before scheduling, within the default tolerance. Skips on the gpu
/// executables when no GPU is present.
inline void expectMatchesReference(const ExecCase& c) {
  if (auto why = test::backendUnavailable(testBackend())) GTEST_SKIP() << *why;
  ir::Fusion fusion;
  ir::FusionGuard guard(&fusion);
  c.build(fusion);
  std::unique_ptr<ir::Fusion> reference = fusion.clone();
  c.schedule(fusion);
  std::vector<eval::Argument> inputs = c.inputs();
  exec::KernelExecutor ke;
  ke.compile(fusion, testBackend(), {.poisonOutputs = true});
  std::vector<Tensor> outs = ke.run(inputs);
  std::vector<Tensor> expected = eval::evaluateFusion(*reference, inputs);
  ASSERT_EQ(outs.size(), expected.size());
  for (size_t i = 0; i < outs.size(); ++i) {
    auto tol = eval::defaultTolerance(expected[i].dtype(), c.reductionSize);
    auto msg = eval::expectClose(outs[i].contiguous(), expected[i], tol, "output " + std::to_string(i));
    EXPECT_FALSE(msg.has_value()) << *msg << "\n" << ke.generated().kernelText;
  }
}

}  // namespace loom::test
