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

}  // namespace
}  // namespace loom::test
