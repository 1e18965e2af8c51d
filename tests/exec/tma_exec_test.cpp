// SPDX-License-Identifier: Apache-2.0
// Execution tests for bulk (TMA) copies (tests/exec/tma_cases.h): run by KernelExecutor and
// compared with the reference evaluator on the unscheduled clone. Built twice: the emu executable
// runs them on the host backend, the gpu one (LOOM_EXEC_TEST_CUDA) on CUDA.
#include <gtest/gtest.h>

#include "exec/exec_test_util.h"
#include "exec/tma_cases.h"

namespace loom::test {
namespace {

class TmaExecTest : public testing::TestWithParam<ExecCase> {};

// Each case's kernel matches the reference evaluator (see expectMatchesReference).
TEST_P(TmaExecTest, MatchesReference) { expectMatchesReference(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Cases, TmaExecTest, testing::ValuesIn(tmaCases()),
                         [](const testing::TestParamInfo<ExecCase>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace loom::test
