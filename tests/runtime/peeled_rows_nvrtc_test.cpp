// SPDX-License-Identifier: Apache-2.0
// The peeled kernels of the 50257-wide sweep shapes (issue 29: layer_norm, rms_norm, softmax and
// var_mean of [1335, 50257] in fp32 and bf16, as the heuristic schedules them for an H100) compile
// with NVRTC for sm_90 without spills: checked where CI has NVRTC but no GPU. Prints each
// kernel's registers and parameters for the GPU timing that decides the heuristic.
#include <gtest/gtest.h>

#include <iostream>

#include "loom/backend/cuda/nvrtc.h"
#include "loom/codegen/kernel_codegen.h"
#include "loom/ir/ir.h"
#include "loom/lower/lower.h"
#include "loom/ops/ops.h"
#include "loom/scheduler/normalization.h"
#include "loom/segmenter/welford_translation.h"

namespace loom::runtime {
namespace {

std::unique_ptr<ir::Fusion> vocabularyFusion(const std::string& what, DataType dtype) {
  auto f = std::make_unique<ir::Fusion>();
  ir::FusionGuard guard(f.get());
  auto* x = ops::TensorBuilder().shape({1335, 50257}).dtype(dtype).build();
  auto* w = ops::TensorBuilder().shape({50257}).dtype(dtype).build();
  f->addInput(x);
  if (what == "softmax") {
    f->addOutput(ops::softmax(x, 1));
  } else if (what == "var_mean") {
    auto r = ops::varMean(x, {1});
    f->addOutput(r.var);
    f->addOutput(r.mean);
    segmenter::translateWelfordInFusion(*f);
  } else if (what == "rms_norm") {
    f->addInput(w);
    f->addOutput(ops::rmsNorm(x, 1, w, 1e-5));
  } else {
    auto* b = ops::TensorBuilder().shape({50257}).dtype(dtype).build();
    f->addInput(w);
    f->addInput(b);
    auto r = ops::layerNorm(x, 1, w, b);
    f->addOutput(r.y);
    f->addOutput(r.mean);
    f->addOutput(r.rstd);
  }
  return f;
}

TEST(PeeledRowsNvrtc, VocabularyKernelsCompileWithoutSpills) {
  if (!cuda::nvrtcAvailable()) {
    GTEST_SKIP() << "NVRTC unavailable: " << cuda::nvrtcUnavailableReason();
  }
  scheduler::DeviceInfo h100;
  h100.l2_bytes = 50 * 1024 * 1024;
  cuda::NvrtcCompiler compiler(std::nullopt);
  for (const char* what : {"layer_norm", "rms_norm", "softmax", "var_mean"}) {
    for (DataType dtype : {DataType::Float32, DataType::BFloat16}) {
      SCOPED_TRACE(std::string(what) + " " + std::string(dataTypeName(dtype)));
      auto f = vocabularyFusion(what, dtype);
      scheduler::SchedulerRuntimeInfo info(*f, eval::ExpressionEvaluator{}, h100);
      auto params = scheduler::innerPersistentHeuristics(*f, info);
      EXPECT_TRUE(params->peel) << params->toString();
      scheduler::scheduleInnerPersistent(*f, *params);
      auto kernel = lower::lowerFusion(*f, DumpOptions(), {.peelVectorRows = params->peel});
      kernel->indexType = DataType::Int32;  // what the executor picks for these sizes
      // As built first, and as the executor builds it again when a block's registers exceed
      // the SM's (registers bounded for its threads).
      std::cout << what << " " << dataTypeName(dtype) << ":";
      for (bool bounded : {false, true}) {
        codegen::CodegenOptions options;
        options.boundBlockThreads = bounded;
        codegen::GeneratedKernel g = codegen::generateKernel(*kernel, options);
        EXPECT_NE(g.source.find("loom::misalignment<"), std::string::npos);
        cuda::CompileResult r =
            compiler.compile(g.source, cuda::CompileOptions::forArch("sm_90", g.name));
        const cuda::KernelResources* res = r.kernel(g.name);
        ASSERT_NE(res, nullptr) << r.log;
        EXPECT_FALSE(r.hasSpills()) << r.log;
        std::cout << " " << res->registers << (bounded ? " bounded;" : " registers,");
      }
      std::cout << " " << params->toString();
    }
  }
}

}  // namespace
}  // namespace loom::runtime
