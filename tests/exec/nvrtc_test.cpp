// SPDX-License-Identifier: Apache-2.0
// Every kernel the execution cases generate (exec, reduction, parallel and norm case lists) compiles
// with NVRTC for sm_90 without spills.
#include <gtest/gtest.h>

#include "exec/exec_cases.h"
#include "exec/norm_cases.h"
#include "exec/parallel_cases.h"
#include "exec/reduction_cases.h"
#include "loom/backend/cuda/nvrtc.h"
#include "loom/codegen/kernel_codegen.h"
#include "loom/lower/lower.h"

namespace loom::test {
namespace {

class NvrtcTest : public testing::TestWithParam<ExecCase> {};

// The generated source of each case compiles for sm_90 and ptxas reports no register spills.
TEST_P(NvrtcTest, CompilesForSm90WithoutSpills) {
  if (!cuda::nvrtcAvailable()) GTEST_SKIP() << "NVRTC unavailable: " << cuda::nvrtcUnavailableReason();
  const ExecCase& c = GetParam();
  ir::Fusion fusion;
  ir::FusionGuard guard(&fusion);
  c.build(fusion);
  c.schedule(fusion);
  auto kernel = lower::lowerFusion(fusion, DumpOptions());
  codegen::GeneratedKernel g = codegen::generateKernel(*kernel);
  cuda::NvrtcCompiler compiler(std::nullopt);
  cuda::CompileResult r = compiler.compile(g.source, cuda::CompileOptions::forArch("sm_90", g.name));
  const cuda::KernelResources* res = r.kernel(g.name);
  ASSERT_NE(res, nullptr) << r.log;
  EXPECT_FALSE(r.hasSpills()) << r.log;
  EXPECT_GT(res->registers, 0);
}

std::string caseName(const testing::TestParamInfo<ExecCase>& info) { return info.param.name; }

INSTANTIATE_TEST_SUITE_P(Cases, NvrtcTest, testing::ValuesIn(execCases()), caseName);
INSTANTIATE_TEST_SUITE_P(Reductions, NvrtcTest, testing::ValuesIn(reductionCases()), caseName);
INSTANTIATE_TEST_SUITE_P(Parallel, NvrtcTest, testing::ValuesIn(parallelCases()), caseName);
INSTANTIATE_TEST_SUITE_P(Norm, NvrtcTest, testing::ValuesIn(normCases()), caseName);

}  // namespace
}  // namespace loom::test
