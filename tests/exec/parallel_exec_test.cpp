// SPDX-License-Identifier: Apache-2.0
// Execution tests for parallel correctness and memory (tests/exec/parallel_cases.h): run by
// KernelExecutor and compared with the reference evaluator on the unscheduled clone. Built twice:
// the emu executable runs them on the host backend, the gpu one (LOOM_EXEC_TEST_CUDA) on CUDA.
#include <gtest/gtest.h>

#include "exec/parallel_cases.h"
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

class ParallelExecTest : public testing::TestWithParam<ExecCase> {};

// A scheduled kernel's outputs (poisoned before the launch) match the reference evaluator's
// outputs of the same fusion before scheduling, within the default tolerance.
TEST_P(ParallelExecTest, MatchesReference) {
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

INSTANTIATE_TEST_SUITE_P(Cases, ParallelExecTest, testing::ValuesIn(parallelCases()),
                         [](const testing::TestParamInfo<ExecCase>& info) { return info.param.name; });

// Mismatched TIDx extents launch the largest (128 threads) and the larger grid (8 blocks).
TEST(ParallelLaunch, MismatchedExtentsLaunchTheLargest) {
  if (testBackend() == exec::Backend::Cuda) GTEST_SKIP() << "launch shape checked on emu";
  ExecCase c = parallelCases()[1];
  ASSERT_EQ(c.name, "MismatchedTidxExtents");
  ir::Fusion fusion;
  ir::FusionGuard guard(&fusion);
  c.build(fusion);
  c.schedule(fusion);
  exec::KernelExecutor ke;
  ke.compile(fusion, exec::Backend::Host);
  ke.run(c.inputs());
  EXPECT_EQ(ke.lastLaunch().block[0], 128u);
  EXPECT_EQ(ke.lastLaunch().grid[0], 8u);
}

// A shared tensor's dynamic shared memory (4 x 32 floats) is part of the launch.
TEST(ParallelLaunch, SharedTensorBytesInLaunch) {
  if (testBackend() == exec::Backend::Cuda) GTEST_SKIP() << "launch shape checked on emu";
  ExecCase c = parallelCases()[2];
  ASSERT_EQ(c.name, "SharedStagedTranspose");
  ir::Fusion fusion;
  ir::FusionGuard guard(&fusion);
  c.build(fusion);
  c.schedule(fusion);
  exec::KernelExecutor ke;
  ke.compile(fusion, exec::Backend::Host);
  ke.run(c.inputs());
  EXPECT_EQ(ke.lastLaunch().sharedBytes, 128u * 4u);
  EXPECT_NE(ke.generated().kernelText.find("__syncthreads"), std::string::npos);
}

}  // namespace
}  // namespace loom::test
