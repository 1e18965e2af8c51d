// SPDX-License-Identifier: Apache-2.0
// The fused attention kernels (runtime/attention.cuh, attention_mma.cuh, attention_bwd_mma.cuh;
// issue 30: the forward and the backward's two) compile with NVRTC for sm_90 without spills, for
// every dtype and head dim they take (the tensor-core forward with and without dropout): checked
// where CI has NVRTC but no GPU (the gpu tier runs them).
#include <gtest/gtest.h>

#include "loom/backend/cuda/nvrtc.h"
#include "loom/codegen/attention_kernel.h"

namespace loom::runtime {
namespace {

TEST(FusedAttentionNvrtc, EveryKernelCompilesWithoutSpills) {
  if (!cuda::nvrtcAvailable())
    GTEST_SKIP() << "NVRTC unavailable: " << cuda::nvrtcUnavailableReason();
  cuda::NvrtcCompiler compiler(std::nullopt);
  for (DataType dtype : {DataType::Float32, DataType::BFloat16, DataType::Float16}) {
    for (int64_t e : {64, 128}) {
      for (auto pass :
           {codegen::FusedAttentionPass::Forward, codegen::FusedAttentionPass::BackwardDq,
            codegen::FusedAttentionPass::BackwardDkDv}) {
        // The tensor-core forward has a kernel with the dropout draw and one without.
        for (bool dropout : {false, true}) {
          if (dropout && !codegen::fusedAttentionDropoutVariant(pass, dtype, true)) continue;
          codegen::GeneratedKernel g = codegen::fusedAttentionKernel(pass, dtype, e, dropout);
          SCOPED_TRACE(g.name);
          // bf16 and f16 run every pass's products on tensor cores; f32 on FMA.
          const bool mma = dtype != DataType::Float32;
          EXPECT_EQ(codegen::fusedAttentionUsesMma(pass, dtype), mma);
          EXPECT_EQ(g.source.find("mma.sync.aligned.m16n8k16") != std::string::npos, mma);
          cuda::CompileResult r =
              compiler.compile(g.source, cuda::CompileOptions::forArch("sm_90", g.name));
          ASSERT_NE(r.kernel(g.name), nullptr) << r.log;
          EXPECT_FALSE(r.hasSpills()) << r.log;
        }
      }
    }
  }
}

}  // namespace
}  // namespace loom::runtime
