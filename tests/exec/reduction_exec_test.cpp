// SPDX-License-Identifier: Apache-2.0
// Reduction execution tests (Welford, grid, outer): hand-scheduled fusions run by KernelExecutor
// and compared with the reference evaluator on the unscheduled clone. Built twice: the emu executable runs them on the host
// backend, the gpu executable (LOOM_EXEC_TEST_CUDA) on CUDA, skipping without a GPU.
#include <gtest/gtest.h>

#include "exec/reduction_cases.h"
#include "exec/exec_test_util.h"

namespace loom::test {
namespace {

class ReductionExecTest : public testing::TestWithParam<ExecCase> {};

// Each case's kernel matches the reference evaluator (see expectMatchesReference).
TEST_P(ReductionExecTest, MatchesReference) { expectMatchesReference(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Cases, ReductionExecTest, testing::ValuesIn(reductionCases()),
                         [](const testing::TestParamInfo<ExecCase>& info) { return info.param.name; });

// sum(x, dim 1) with the reduced axis on TIDx and the rows on BIDx, for 0-size inputs. No rows:
// the output is empty and nothing is launched. An empty reduced axis would need a launch of 0
// threads that still writes 4 zeros: a user error naming the axis and the tensor, not a crash.
TEST(ReductionExecEdge, ZeroExtentLaunchDims) {
  if (testBackend() == exec::Backend::Cuda) {
#ifdef LOOM_HAVE_CUDA_BACKEND
    if (!cuda::cudaAvailable()) GTEST_SKIP() << "no GPU: " << cuda::unavailableReason();
#else
    GTEST_SKIP() << "built without the CUDA backend";
#endif
  }
  ir::Fusion fusion;
  ir::FusionGuard guard(&fusion);
  auto* x = ops::TensorBuilder().rank(2).build();
  fusion.addInput(x);
  auto* out = ops::sum(x, {1});
  fusion.addOutput(out);
  out->axis(0)->parallelize(ir::ParallelType::BIDx);
  out->axis(1)->parallelize(ir::ParallelType::TIDx);
  exec::KernelExecutor ke;
  ke.compile(fusion, testBackend(), {.poisonOutputs = true});

  std::vector<eval::Argument> no_rows{randomTensor({0, 7}, 1)};
  std::vector<Tensor> outs = ke.run(no_rows);
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_EQ(outs[0].sizes(), (std::vector<int64_t>{0}));

  std::vector<eval::Argument> no_columns{randomTensor({4, 0}, 2)};
  try {
    (void)ke.run(no_columns);
    ADD_FAILURE() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("its TIDx extent is 0 but T1 has 4 elements to write"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace loom::test
