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

// runtime/attention_mma.cuh's tile (kAttentionMmaRows, kAttentionMmaKeys, kAttentionMmaThreads).
constexpr int64_t kMmaRows = 64;
constexpr int64_t kMmaKeys = 64;
constexpr int64_t kMmaThreads = 128;

}  // namespace

bool fusedAttentionUsesMma(FusedAttentionPass pass, DataType dtype) {
  return pass == FusedAttentionPass::Forward &&
         (dtype == DataType::BFloat16 || dtype == DataType::Float16);
}

FusedAttentionTile fusedAttentionTile(FusedAttentionPass pass, DataType dtype) {
  if (fusedAttentionUsesMma(pass, dtype)) return {kMmaRows, kMmaThreads};
  return {pass == FusedAttentionPass::BackwardDkDv ? kAttentionBlockN : kAttentionBlockM,
          kAttentionThreads};
}

size_t fusedAttentionSharedBytes(FusedAttentionPass pass, DataType dtype, int64_t head_dim) {
  if (fusedAttentionUsesMma(pass, dtype)) {
    return size_t(4 * kMmaKeys * (head_dim + 8)) * 2;  // two buffers of K and V, 16-bit
  }
  const int64_t floats = pass == FusedAttentionPass::BackwardDkDv
                             ? 2 * kAttentionBlockM * head_dim + 2 * kAttentionBlockM
                             : 2 * kAttentionBlockN * head_dim;
  return size_t(floats) * sizeof(float);
}

GeneratedKernel fusedAttentionKernel(FusedAttentionPass pass, DataType dtype, int64_t head_dim) {
  auto why = fusedAttentionUnsupported(dtype, head_dim, head_dim);
  LOOM_ASSERT(!why, "fusedAttentionKernel called for what it does not take: ", *why);
  // The dk/dv kernel gives each thread group a key, the others a query row: both 32 a CTA.
  static_assert(kAttentionBlockM == kAttentionBlockN, "one thread count for every pass");
  const bool mma = fusedAttentionUsesMma(pass, dtype);
  const char* kind = pass == FusedAttentionPass::Forward      ? (mma ? "fwd_mma" : "fwd")
                     : pass == FusedAttentionPass::BackwardDq ? "bwd_dq"
                                                              : "bwd_dkdv";
  const char* block = pass == FusedAttentionPass::Forward      ? "attentionFwdBlock"
                      : pass == FusedAttentionPass::BackwardDq ? "attentionBwdDqBlock"
                                                               : "attentionBwdDkDvBlock";
  const char* params =
      pass == FusedAttentionPass::Forward ? "AttentionFwdParams" : "AttentionBwdParams";
  GeneratedKernel g;
  g.name = fmt::format("loom_attention_{}_{}_d{}", kind, dataTypeName(dtype), head_dim);
  if (mma) {
    g.kernelText = fmt::format(
        "extern \"C\" __global__ void __launch_bounds__({threads}) {name}(loom::{params} p) {{\n"
        "  extern __shared__ __align__(16) char loom_smem[];\n"
        "  loom::attentionFwdMmaBlock<{type}, {dim}>(p, reinterpret_cast<unsigned short*>("
        "loom_smem));\n"
        "}}\n",
        fmt::arg("threads", kMmaThreads), fmt::arg("name", g.name), fmt::arg("params", params),
        fmt::arg("type", cTypeName(dtype)), fmt::arg("dim", head_dim));
  } else {
    g.kernelText = fmt::format(
        "extern \"C\" __global__ void __launch_bounds__({threads}) {name}(loom::{params} p) {{\n"
        "  extern __shared__ __align__(16) char loom_smem[];\n"
        "  loom::{block}<{type}, {dim}, {m}, {n}, {tpr}>(p, reinterpret_cast<float*>(loom_smem));"
        "\n"
        "}}\n",
        fmt::arg("threads", kAttentionThreads), fmt::arg("name", g.name),
        fmt::arg("params", params), fmt::arg("block", block), fmt::arg("type", cTypeName(dtype)),
        fmt::arg("dim", head_dim), fmt::arg("m", kAttentionBlockM),
        fmt::arg("n", kAttentionBlockN), fmt::arg("tpr", kAttentionThreadsPerRow));
  }
  // The files the kernels use (types for the conversions, math and random for the dropout's
  // Philox draw, the argument structs; mma.cuh and attention_mma.cuh for the tensor-core
  // forward), in the library's order.
  for (const RuntimeFile& f : runtimeLibraryFiles()) {
    const bool wanted = f.name == "types.cuh" || f.name == "math.cuh" ||
                        f.name == "random.cuh" || f.name == "attention_params.cuh" ||
                        (mma ? f.name == "mma.cuh" || f.name == "attention_mma.cuh"
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
