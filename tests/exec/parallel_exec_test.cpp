// SPDX-License-Identifier: Apache-2.0
// Execution tests for parallel correctness and memory (tests/exec/parallel_cases.h): run by
// KernelExecutor and compared with the reference evaluator on the unscheduled clone. Built twice:
// the emu executable runs them on the host backend, the gpu one (LOOM_EXEC_TEST_CUDA) on CUDA.
#include <gtest/gtest.h>

#include "exec/parallel_cases.h"
#include "exec/exec_test_util.h"

namespace loom::test {
namespace {

class ParallelExecTest : public testing::TestWithParam<ExecCase> {};

// Each case's kernel matches the reference evaluator (see expectMatchesReference).
TEST_P(ParallelExecTest, MatchesReference) { expectMatchesReference(GetParam()); }

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
