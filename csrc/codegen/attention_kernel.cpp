// SPDX-License-Identifier: Apache-2.0
// The fused attention forward kernel's source: runtime/attention.cuh and a __global__ wrapper.
#include "loom/codegen/attention_kernel.h"

#include <fmt/format.h>

#include "loom/codegen/runtime_library.h"
#include "loom/support/error.h"

namespace loom::codegen {

std::optional<std::string> fusedAttentionUnsupported(DataType dtype, int64_t head_dim,
                                                     int64_t value_dim) {
  if (dtype != DataType::Float32 && dtype != DataType::BFloat16 && dtype != DataType::Float16) {
    return fmt::format("the fused attention kernel takes f32, bf16 or f16, not {}",
                       dataTypeName(dtype));
  }
  if (head_dim != value_dim) {
    return fmt::format(
        "the fused attention kernel needs one head dim for query/key and value, "
        "got E {} and Ev {}",
        head_dim, value_dim);
  }
  if (head_dim != 64 && head_dim != 128) {
    return fmt::format("the fused attention kernel has head dims 64 and 128, not {}", head_dim);
  }
  return std::nullopt;
}

namespace {

// runtime/attention_mma.cuh's tile (attentionFwdMmaRows(), kAttentionMmaKeys,
// kAttentionMmaThreads) and runtime/attention_bwd_mma.cuh's (kAttentionBwdMmaBlock,
// attentionBwdMmaTile()).
constexpr int64_t mmaFwdRows(int64_t head_dim, bool dropout) {
  return head_dim <= 64 && !dropout ? 128 : 64;
}
constexpr int64_t kMmaKeys = 64;
constexpr int64_t kMmaThreads = 128;
constexpr int64_t kMmaBwdBlock = 64;
constexpr int64_t mmaBwdTile(int64_t head_dim) { return head_dim <= 64 ? 64 : 32; }

// The tensor-core kernels' shared memory (the runtime's attention*SharedHalves/Bytes()).
constexpr size_t mmaSharedBytes(FusedAttentionPass pass, int64_t head_dim) {
  const int64_t row_bytes = (head_dim + 8) * 2;  // a 16-bit row padded by 8
  switch (pass) {
    case FusedAttentionPass::Forward:
      return size_t(4 * kMmaKeys * row_bytes);  // two buffers of K and V
    case FusedAttentionPass::BackwardDq:
      return size_t(4 * mmaBwdTile(head_dim) * row_bytes);  // two buffers of K and V
    case FusedAttentionPass::BackwardDkDv:
      // The block's K and V, two buffers of q and dO, two of the tile rows' D and lse (f32).
      return size_t((2 * kMmaBwdBlock + 4 * mmaBwdTile(head_dim)) * row_bytes +
                    4 * mmaBwdTile(head_dim) * 4);
  }
  return 0;
}

// Every tensor-core kernel fits sm_86's 99 KB of opt-in shared memory per CTA (sm_80: 163 KB,
// sm_90: 227 KB), so the choice needs no device query.
static_assert(mmaSharedBytes(FusedAttentionPass::Forward, 128) <= 99 * 1024);
static_assert(mmaSharedBytes(FusedAttentionPass::BackwardDq, 128) <= 99 * 1024);
static_assert(mmaSharedBytes(FusedAttentionPass::BackwardDkDv, 128) <= 99 * 1024);
static_assert(mmaSharedBytes(FusedAttentionPass::BackwardDkDv, 64) <= 99 * 1024);

}  // namespace

bool fusedAttentionUsesMma(FusedAttentionPass /*pass*/, DataType dtype) {
  return dtype == DataType::BFloat16 || dtype == DataType::Float16;
}

FusedAttentionTile fusedAttentionTile(FusedAttentionPass pass, DataType dtype, int64_t head_dim,
                                      bool dropout) {
  if (fusedAttentionUsesMma(pass, dtype)) {
    return {pass == FusedAttentionPass::Forward ? mmaFwdRows(head_dim, dropout) : kMmaBwdBlock,
            kMmaThreads};
  }
  return {pass == FusedAttentionPass::BackwardDkDv ? kAttentionBlockN : kAttentionBlockM,
          kAttentionThreads};
}

size_t fusedAttentionSharedBytes(FusedAttentionPass pass, DataType dtype, int64_t head_dim) {
  if (fusedAttentionUsesMma(pass, dtype)) return mmaSharedBytes(pass, head_dim);
  const int64_t floats = pass == FusedAttentionPass::BackwardDkDv
                             ? 2 * kAttentionBlockM * head_dim + 2 * kAttentionBlockM
                             : 2 * kAttentionBlockN * head_dim;
  return size_t(floats) * sizeof(float);
}

bool fusedAttentionDropoutVariant(FusedAttentionPass pass, DataType dtype, bool dropout) {
  return dropout && pass == FusedAttentionPass::Forward && fusedAttentionUsesMma(pass, dtype);
}

GeneratedKernel fusedAttentionKernel(FusedAttentionPass pass, DataType dtype, int64_t head_dim,
                                     bool dropout) {
  auto why = fusedAttentionUnsupported(dtype, head_dim, head_dim);
  LOOM_ASSERT(!why, "fusedAttentionKernel called for what it does not take: ", *why);
  // The dk/dv kernel gives each thread group a key, the others a query row: both 32 a CTA.
  static_assert(kAttentionBlockM == kAttentionBlockN, "one thread count for every pass");
  const bool mma = fusedAttentionUsesMma(pass, dtype);
  const bool drop = fusedAttentionDropoutVariant(pass, dtype, dropout);
  const char* kind = pass == FusedAttentionPass::Forward
                         ? (mma ? (drop ? "fwd_mma_dropout" : "fwd_mma") : "fwd")
                     : pass == FusedAttentionPass::BackwardDq ? (mma ? "bwd_dq_mma" : "bwd_dq")
                                                              : (mma ? "bwd_dkdv_mma" : "bwd_dkdv");
  const char* block = pass == FusedAttentionPass::Forward      ? "attentionFwdBlock"
                      : pass == FusedAttentionPass::BackwardDq ? "attentionBwdDqBlock"
                                                               : "attentionBwdDkDvBlock";
  const char* mma_block = pass == FusedAttentionPass::Forward      ? "attentionFwdMmaBlock"
                          : pass == FusedAttentionPass::BackwardDq ? "attentionBwdDqMmaBlock"
                                                                   : "attentionBwdDkDvMmaBlock";
  const char* params =
      pass == FusedAttentionPass::Forward ? "AttentionFwdParams" : "AttentionBwdParams";
  GeneratedKernel g;
  g.name = fmt::format("loom_attention_{}_{}_d{}", kind, dataTypeName(dtype), head_dim);
  if (mma) {
    // The forward's block takes its shared memory as 16-bit values and whether it draws dropout,
    // the backward's its shared memory as bytes.
    g.kernelText = fmt::format(
        "extern \"C\" __global__ void __launch_bounds__({threads}) {name}(loom::{params} p) {{\n"
        "  extern __shared__ __align__(16) char loom_smem[];\n"
        "  loom::{block}<{type}, {dim}{drop}>(p, reinterpret_cast<{smem}*>(loom_smem));\n"
        "}}\n",
        fmt::arg("threads", kMmaThreads), fmt::arg("name", g.name), fmt::arg("params", params),
        fmt::arg("block", mma_block), fmt::arg("type", cTypeName(dtype)), fmt::arg("dim", head_dim),
        fmt::arg("drop", pass != FusedAttentionPass::Forward ? ""
                         : drop                              ? ", true"
                                                             : ", false"),
        fmt::arg("smem", pass == FusedAttentionPass::Forward ? "unsigned short" : "unsigned char"));
  } else {
    g.kernelText = fmt::format(
        "extern \"C\" __global__ void __launch_bounds__({threads}) {name}(loom::{params} p) {{\n"
        "  extern __shared__ __align__(16) char loom_smem[];\n"
        "  loom::{block}<{type}, {dim}, {m}, {n}, {tpr}>(p, reinterpret_cast<float*>(loom_smem));"
        "\n"
        "}}\n",
        fmt::arg("threads", kAttentionThreads), fmt::arg("name", g.name),
        fmt::arg("params", params), fmt::arg("block", block), fmt::arg("type", cTypeName(dtype)),
        fmt::arg("dim", head_dim), fmt::arg("m", kAttentionBlockM), fmt::arg("n", kAttentionBlockN),
        fmt::arg("tpr", kAttentionThreadsPerRow));
  }
  // The files the kernels use (types for the conversions, math and random for the dropout's
  // Philox draw, the argument structs; mma.cuh and attention_mma.cuh for the tensor-core
  // kernels, with attention_bwd_mma.cuh and attention.cuh's backward helpers for the backward),
  // in the library's order.
  const bool bwd = pass != FusedAttentionPass::Forward;
  for (const RuntimeFile& f : runtimeLibraryFiles()) {
    const bool wanted =
        f.name == "types.cuh" || f.name == "math.cuh" || f.name == "random.cuh" ||
        f.name == "attention_params.cuh" ||
        (mma ? f.name == "mma.cuh" || f.name == "attention_mma.cuh" ||
                   (bwd && (f.name == "attention.cuh" || f.name == "attention_bwd_mma.cuh"))
             : f.name == "attention.cuh");
    if (!wanted) continue;
    g.source += "// ---- runtime/";
    g.source += f.name;
    g.source += " ----\n";
    g.source += f.text;
  }
  g.source += "\n";
  g.source += g.kernelText;
  return g;
}

}  // namespace loom::codegen
