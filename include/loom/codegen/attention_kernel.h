// SPDX-License-Identifier: Apache-2.0
// The fused attention forward kernel's source (issue 30): runtime/attention.cuh wrapped in a
// __global__ function for one dtype and head dim, compiled by NVRTC or by the host backend alike.
//
//   if (!fusedAttentionUnsupported(DataType::BFloat16, 128, 128)) {
//     GeneratedKernel k = fusedAttentionFwdKernel(DataType::BFloat16, 128);
//     // launch fusedAttentionFwdLaunch(...) with one AttentionFwdParams (exec/fused_attention.h)
//   }
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "loom/codegen/kernel_codegen.h"
#include "loom/tensor/data_type.h"

namespace loom::codegen {

/// The kernel's tile: query rows per CTA, keys per shared-memory tile, threads per query row.
inline constexpr int64_t kAttentionBlockM = 32;
inline constexpr int64_t kAttentionBlockN = 32;
inline constexpr int64_t kAttentionThreadsPerRow = 8;
inline constexpr int64_t kAttentionThreads = kAttentionBlockM * kAttentionThreadsPerRow;

/// Why the fused kernel cannot compute attention of these operands (nullopt: it can). It takes
/// f32, bf16 and f16, and head dims E = Ev of 64 or 128 (each a kernel of its own); anything else
/// runs as the composite.
std::optional<std::string> fusedAttentionUnsupported(DataType dtype, int64_t head_dim,
                                                     int64_t value_dim);

/// The fused kernels: the forward, and the backward's two (dq per block of query rows; dk and dv
/// per block of keys, so that neither needs atomics).
enum class FusedAttentionPass { Forward, BackwardDq, BackwardDkDv };

/// The kernel of `pass` for `dtype` and `head_dim` (one fusedAttentionUnsupported accepts): one
/// parameter, loom::AttentionFwdParams (Forward) or loom::AttentionBwdParams, launched with
/// kAttentionThreads threads per CTA and fusedAttentionSharedBytes() of dynamic shared memory.
GeneratedKernel fusedAttentionKernel(FusedAttentionPass pass, DataType dtype, int64_t head_dim);

/// The forward's kernel: fusedAttentionKernel(FusedAttentionPass::Forward, ...).
inline GeneratedKernel fusedAttentionFwdKernel(DataType dtype, int64_t head_dim) {
  return fusedAttentionKernel(FusedAttentionPass::Forward, dtype, head_dim);
}

/// Dynamic shared memory of one CTA of `pass`: a K and a V tile in f32 (Forward, BackwardDq), or
/// a q and a dO tile and the tile rows' D and log_sumexp (BackwardDkDv).
size_t fusedAttentionSharedBytes(FusedAttentionPass pass, int64_t head_dim);

}  // namespace loom::codegen
