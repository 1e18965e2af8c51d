// SPDX-License-Identifier: Apache-2.0
// Every kernel the execution cases generate (exec, reduction, parallel and norm case lists) compiles
// with NVRTC for sm_90 without spills.
#include "loom/backend/cuda/nvrtc.h"

#include <gtest/gtest.h>

#include "exec/exec_cases.h"
#include "exec/norm_cases.h"
#include "exec/parallel_cases.h"
#include "exec/reduction_cases.h"
#include "exec/tma_cases.h"
#include "loom/codegen/kernel_codegen.h"
#include "loom/lower/lower.h"
#include "loom/ops/ops.h"
#include "loom/scheduler/registry.h"
#include "loom/scheduler/scatter.h"
#include "loom/scheduler/sort.h"

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

// The kernel of `fusion` scheduled by `type` with `params`, compiled for sm_90 with both index
// types.
void expectScheduledCompiles(ir::Fusion& fusion, scheduler::SchedulerType type,
                             const scheduler::HeuristicParams& params) {
  scheduler::schedulerFor(type).schedule(fusion, params);
  for (DataType index : {DataType::Int32, DataType::Int64}) {
    SCOPED_TRACE("index " + std::string(dataTypeName(index)));
    auto kernel = lower::lowerFusion(fusion, DumpOptions());
    kernel->indexType = index;
    codegen::GeneratedKernel g = codegen::generateKernel(*kernel);
    cuda::NvrtcCompiler compiler(std::nullopt);
    cuda::CompileResult r =
        compiler.compile(g.source, cuda::CompileOptions::forArch("sm_90", g.name));
    ASSERT_NE(r.kernel(g.name), nullptr) << r.log << "\n" << g.kernelText;
  }
}

// Rows sorted by a whole block (runtime sort.cuh, argsortRowBlock / topkRowBlock, bitonic in
// shared memory) compile for every dtype a sort takes.
TEST(NvrtcSortTest, BlockSortRowsCompileForEveryDtype) {
  if (!cuda::nvrtcAvailable())
    GTEST_SKIP() << "NVRTC unavailable: " << cuda::nvrtcUnavailableReason();
  for (DataType dt : {DataType::Float32, DataType::Float64, DataType::Float16, DataType::BFloat16,
                      DataType::Int32, DataType::Int64, DataType::Bool}) {
    for (bool topk : {false, true}) {
      SCOPED_TRACE(std::string(dataTypeName(dt)) + (topk ? " topk" : " argsort"));
      ir::Fusion fusion;
      ir::FusionGuard guard(&fusion);
      auto* x = ops::TensorBuilder().rank(2).dtype(dt).build();
      fusion.addInput(x);
      if (topk) {
        ops::TopKResult top = ops::topk(x, 3, 1);
        fusion.addOutput(top.values);
        fusion.addOutput(top.indices);
      } else {
        fusion.addOutput(ops::argsort(x, 1, /*descending=*/true));
      }
      scheduler::SortParams params;
      params.block_row = 1024;
      params.bdimx = 512;
      expectScheduledCompiles(fusion, scheduler::SchedulerType::Sort, params);
    }
  }
}

// The atomic scatter_add kernel (runtime scatter.cuh: grid barrier, atomicAdd; 16-bit dtypes
// through the f32 scratch) compiles for every dtype it takes.
TEST(NvrtcScatterTest, AtomicScatterAddCompilesForEveryDtype) {
  if (!cuda::nvrtcAvailable())
    GTEST_SKIP() << "NVRTC unavailable: " << cuda::nvrtcUnavailableReason();
  for (DataType dt : {DataType::Float32, DataType::Float64, DataType::Int32, DataType::Int64,
                      DataType::Float16, DataType::BFloat16}) {
    SCOPED_TRACE(dataTypeName(dt));
    ir::Fusion fusion;
    ir::FusionGuard guard(&fusion);
    auto* x = ops::TensorBuilder().rank(2).dtype(dt).build();
    auto* idx = ops::TensorBuilder().rank(2).dtype(DataType::Int64).build();
    auto* src = ops::TensorBuilder().rank(2).dtype(dt).build();
    for (ir::TensorView* tv : {x, idx, src}) fusion.addInput(tv);
    fusion.addOutput(ops::scatterAdd(x, 0, idx, src));
    scheduler::ScatterParams params;
    params.atomic = true;
    params.blocks = 264;
    params.bdimx = 256;
    expectScheduledCompiles(fusion, scheduler::SchedulerType::Scatter, params);
  }
}

std::string caseName(const testing::TestParamInfo<ExecCase>& info) { return info.param.name; }

INSTANTIATE_TEST_SUITE_P(Cases, NvrtcTest, testing::ValuesIn(execCases()), caseName);
INSTANTIATE_TEST_SUITE_P(Reductions, NvrtcTest, testing::ValuesIn(reductionCases()), caseName);
INSTANTIATE_TEST_SUITE_P(Parallel, NvrtcTest, testing::ValuesIn(parallelCases()), caseName);
INSTANTIATE_TEST_SUITE_P(Norm, NvrtcTest, testing::ValuesIn(normCases()), caseName);
INSTANTIATE_TEST_SUITE_P(Tma, NvrtcTest, testing::ValuesIn(tmaCases()), caseName);

}  // namespace
}  // namespace loom::test
