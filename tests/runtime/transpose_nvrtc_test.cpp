// SPDX-License-Identifier: Apache-2.0
// The transpose scheduler's kernels (issue 37: x^T and gelu_tanh(x + bias)^T of the benchmark
// shapes, fp32 and bf16, as the heuristic schedules them for an H100) compile with NVRTC for
// sm_90 without spills, with 16-byte vector accesses on both sides and a block barrier between
// the shared tile's writes and reads: checked where CI has NVRTC but no GPU.
#include <gtest/gtest.h>

#include <iostream>

#include "loom/backend/cuda/nvrtc.h"
#include "loom/codegen/kernel_codegen.h"
#include "loom/ir/ir.h"
#include "loom/lower/lower.h"
#include "loom/ops/ops.h"
#include "loom/scheduler/transpose.h"

namespace loom::runtime {
namespace {

std::unique_ptr<ir::Fusion> transposeFusion(bool gelu_bias, int64_t rows, int64_t cols,
                                            DataType dtype) {
  auto f = std::make_unique<ir::Fusion>();
  ir::FusionGuard guard(f.get());
  auto* x = ops::TensorBuilder().shape({rows, cols}).dtype(dtype).build();
  f->addInput(x);
  ir::TensorView* y = x;
  if (gelu_bias) {
    auto* b = ops::TensorBuilder().shape({cols}).dtype(dtype).build();
    f->addInput(b);
    y = ops::biasGelu(x, b, ops::GeluApproximation::Tanh);
  }
  f->addOutput(ops::transpose(y, 0, 1));
  return f;
}

TEST(TransposeNvrtc, BenchmarkKernelsCompileWithoutSpills) {
  if (!cuda::nvrtcAvailable()) {
    GTEST_SKIP() << "NVRTC unavailable: " << cuda::nvrtcUnavailableReason();
  }
  scheduler::DeviceInfo h100;
  h100.l2_bytes = 50 * 1024 * 1024;
  cuda::NvrtcCompiler compiler(std::nullopt);
  for (bool gelu_bias : {false, true}) {
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{8192, 8192}, {16384, 768}}) {
      for (DataType dtype : {DataType::Float32, DataType::BFloat16}) {
        const std::string what = std::string(gelu_bias ? "gelu_bias_t " : "transpose ") +
                                 std::to_string(rows) + "x" + std::to_string(cols) + " " +
                                 std::string(dataTypeName(dtype));
        SCOPED_TRACE(what);
        auto f = transposeFusion(gelu_bias, rows, cols, dtype);
        scheduler::SchedulerRuntimeInfo info(*f, eval::ExpressionEvaluator{}, h100);
        auto params = scheduler::transposeHeuristics(*f, info);
        EXPECT_EQ(params->vectorize * int64_t(dataTypeSize(dtype)), 16) << params->toString();
        scheduler::scheduleTranspose(*f, *params);
        auto kernel = lower::lowerFusion(*f);
        kernel->indexType = DataType::Int32;  // what the executor picks for these sizes
        codegen::GeneratedKernel g = codegen::generateKernel(*kernel, {});
        // Both sides move 16-byte vectors; the tile is synchronized between them.
        EXPECT_NE(g.source.find("loom::loadVector"), std::string::npos);
        EXPECT_NE(g.source.find("loom::storeVector"), std::string::npos);
        EXPECT_NE(g.source.find("__syncthreads()"), std::string::npos);
        cuda::CompileResult r =
            compiler.compile(g.source, cuda::CompileOptions::forArch("sm_90", g.name));
        const cuda::KernelResources* res = r.kernel(g.name);
        ASSERT_NE(res, nullptr) << r.log;
        EXPECT_FALSE(r.hasSpills()) << r.log;
        std::cout << what << ": " << res->registers << " registers, " << kernel->sharedTensorBytes
                  << " shared bytes, " << params->toString();
      }
    }
  }
}

}  // namespace
}  // namespace loom::runtime
