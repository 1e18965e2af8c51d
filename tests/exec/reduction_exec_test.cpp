// SPDX-License-Identifier: Apache-2.0
// Reduction execution tests (Welford, grid, outer): hand-scheduled fusions run by KernelExecutor
// and compared with the reference evaluator on the unscheduled clone. Built twice: the emu executable runs them on the host
// backend, the gpu executable (LOOM_EXEC_TEST_CUDA) on CUDA, skipping without a GPU.
#include <gtest/gtest.h>

#include "exec/reduction_cases.h"
#include "loom/eval/compare.h"
#include "loom/eval/reference_evaluator.h"
#include "loom/exec/kernel_executor.h"
#ifdef LOOM_HAVE_CUDA_BACKEND
#include "loom/backend/cuda/driver.h"
#endif

namespace loom::test {
namespace {

exec::Backend testBackend() {
#ifdef LOOM_EXEC_TEST_CUDA
  return exec::Backend::Cuda;
#else
  return exec::Backend::Host;
#endif
}

class ReductionExecTest : public testing::TestWithParam<ExecCase> {};

// A scheduled kernel's outputs (poisoned before the launch) match the reference evaluator's
// outputs of the same fusion before scheduling, within the default tolerance.
TEST_P(ReductionExecTest, MatchesReference) {
  if (testBackend() == exec::Backend::Cuda) {
#ifdef LOOM_HAVE_CUDA_BACKEND
    if (!cuda::cudaAvailable()) GTEST_SKIP() << "no GPU: " << cuda::unavailableReason();
#else
    GTEST_SKIP() << "built without the CUDA backend";
#endif
  }
  const ExecCase& c = GetParam();
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

INSTANTIATE_TEST_SUITE_P(Cases, ReductionExecTest, testing::ValuesIn(reductionCases()),
                         [](const testing::TestParamInfo<ExecCase>& info) { return info.param.name; });

}  // namespace
}  // namespace loom::test
