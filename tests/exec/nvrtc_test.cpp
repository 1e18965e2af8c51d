// SPDX-License-Identifier: Apache-2.0
// Every kernel the execution cases generate (exec, reduction, parallel and norm case lists) compiles
// with NVRTC for sm_90 without spills.
#include "loom/backend/cuda/nvrtc.h"

#include <gtest/gtest.h>

#include "exec/exec_cases.h"
#include "exec/norm_cases.h"
#include "exec/parallel_cases.h"
#include "exec/reduction_cases.h"
#include "loom/codegen/kernel_codegen.h"
#include "loom/lower/lower.h"
#include "loom/ops/ops.h"

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

// Rows sorted by one thread (runtime sort.cuh, argsortRow / topkRow) compile for every dtype a
// sort takes, with both index types.
TEST(NvrtcSortTest, SortRowsCompileForEveryDtype) {
  if (!cuda::nvrtcAvailable())
    GTEST_SKIP() << "NVRTC unavailable: " << cuda::nvrtcUnavailableReason();
  for (DataType dt : {DataType::Float32, DataType::Float64, DataType::Float16, DataType::BFloat16,
                      DataType::Int32, DataType::Int64, DataType::Bool}) {
    for (DataType index : {DataType::Int32, DataType::Int64}) {
      SCOPED_TRACE(std::string(dataTypeName(dt)) + " index " + std::string(dataTypeName(index)));
      ir::Fusion fusion;
      ir::FusionGuard guard(&fusion);
      auto* x = ops::TensorBuilder().rank(2).dtype(dt).build();
      fusion.addInput(x);
      ir::TensorView* order = ops::argsort(x, 1, /*descending=*/true);
      ops::TopKResult top = ops::topk(x, 3, 1);
      for (ir::TensorView* out : {order, top.values, top.indices}) {
        fusion.addOutput(out);
        out->axis(0)->parallelize(ir::ParallelType::TIDx);
      }
      auto kernel = lower::lowerFusion(fusion, DumpOptions());
      kernel->indexType = index;
      codegen::GeneratedKernel g = codegen::generateKernel(*kernel);
      cuda::NvrtcCompiler compiler(std::nullopt);
      cuda::CompileResult r =
          compiler.compile(g.source, cuda::CompileOptions::forArch("sm_90", g.name));
      ASSERT_NE(r.kernel(g.name), nullptr) << r.log;
    }
  }
}

std::string caseName(const testing::TestParamInfo<ExecCase>& info) { return info.param.name; }

INSTANTIATE_TEST_SUITE_P(Cases, NvrtcTest, testing::ValuesIn(execCases()), caseName);
INSTANTIATE_TEST_SUITE_P(Reductions, NvrtcTest, testing::ValuesIn(reductionCases()), caseName);
INSTANTIATE_TEST_SUITE_P(Parallel, NvrtcTest, testing::ValuesIn(parallelCases()), caseName);
INSTANTIATE_TEST_SUITE_P(Norm, NvrtcTest, testing::ValuesIn(normCases()), caseName);

}  // namespace
}  // namespace loom::test
