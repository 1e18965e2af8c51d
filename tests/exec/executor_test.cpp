// SPDX-License-Identifier: Apache-2.0
// Execution tests: hand-scheduled fusions run by KernelExecutor and compared with the reference
// evaluator on the unscheduled clone. Built twice: the emu executable runs them on the host
// backend, the gpu executable (LOOM_EXEC_TEST_CUDA) on CUDA, skipping without a GPU.
#include <gtest/gtest.h>

#include "exec/exec_test_util.h"

namespace loom::test {
namespace {

class ExecTest : public testing::TestWithParam<ExecCase> {};

// Each case's kernel matches the reference evaluator (see expectMatchesReference).
TEST_P(ExecTest, MatchesReference) { expectMatchesReference(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Cases, ExecTest, testing::ValuesIn(execCases()),
                         [](const testing::TestParamInfo<ExecCase>& info) { return info.param.name; });

}  // namespace
}  // namespace loom::test
