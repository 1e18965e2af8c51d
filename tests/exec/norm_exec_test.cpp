// SPDX-License-Identifier: Apache-2.0
// Execution tests of hand-scheduled layer_norm and of consumers of grid reduction results
// (norm_cases.h): each kernel's outputs, poisoned first, match the reference evaluator on the
// unscheduled clone. Built twice: emu (host backend) and gpu (CUDA, skipped without a GPU).
#include <gtest/gtest.h>

#include "exec/exec_test_util.h"
#include "exec/norm_cases.h"

namespace loom::test {
namespace {

class NormExecTest : public testing::TestWithParam<ExecCase> {};

// Each case's kernel matches the reference evaluator (see expectMatchesReference).
TEST_P(NormExecTest, MatchesReference) { expectMatchesReference(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Cases, NormExecTest, testing::ValuesIn(normCases()),
                         [](const testing::TestParamInfo<ExecCase>& info) { return info.param.name; });

}  // namespace
}  // namespace loom::test
