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

/// The f32 FMA kernels' tile: query rows per CTA, keys per shared-memory tile, threads per query
/// row. (The tensor-core kernels': runtime/attention_mma.cuh and attention_bwd_mma.cuh, four warps:
/// the forward 128 rows at head dim 64 without dropout, else 64, the backward 64 rows or keys.)
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

/// Whether `pass` for `dtype` runs on tensor cores: every bf16 and f16 pass (mma.sync m16n8k16,
/// runtime/attention_mma.cuh for the forward, attention_bwd_mma.cuh for the backward's two, at
/// both head dims the fused kernels take); f32 uses f32 FMA (attention.cuh).
bool fusedAttentionUsesMma(FusedAttentionPass pass, DataType dtype);

/// One CTA of a fused attention kernel at `head_dim` (and, for the tensor-core forward, with or
/// without dropout: fusedAttentionKernel()'s variants): the query rows it takes (keys for
/// BackwardDkDv) and its threads.
struct FusedAttentionTile {
  int64_t rows = 0;
  int64_t threads = 0;
};
FusedAttentionTile fusedAttentionTile(FusedAttentionPass pass, DataType dtype, int64_t head_dim,
                                      bool dropout = false);

/// Whether `pass` for `dtype` has a kernel of its own for dropout: the tensor-core forward does
/// (the draw's registers beside its accumulators); every other kernel reads AttentionFwdParams /
/// AttentionBwdParams::dropout when it runs.
bool fusedAttentionDropoutVariant(FusedAttentionPass pass, DataType dtype, bool dropout);

/// The kernel of `pass` for `dtype` and `head_dim` (one fusedAttentionUnsupported accepts): one
/// parameter, loom::AttentionFwdParams (Forward) or loom::AttentionBwdParams, launched with one
/// CTA per fusedAttentionTile() rows and fusedAttentionSharedBytes() of dynamic shared memory.
/// `dropout`: whether the launch draws dropout (its params' dropout), which picks the variant
/// where fusedAttentionDropoutVariant says there is one.
GeneratedKernel fusedAttentionKernel(FusedAttentionPass pass, DataType dtype, int64_t head_dim,
                                     bool dropout = false);

/// The forward's kernel: fusedAttentionKernel(FusedAttentionPass::Forward, ...).
inline GeneratedKernel fusedAttentionFwdKernel(DataType dtype, int64_t head_dim,
                                               bool dropout = false) {
  return fusedAttentionKernel(FusedAttentionPass::Forward, dtype, head_dim, dropout);
}

/// Dynamic shared memory of one CTA of `pass`: for f32 a K and a V tile (Forward, BackwardDq)
/// or a q and a dO tile and the tile rows' D and log_sumexp (BackwardDkDv); for the tensor-core
/// kernels 16-bit rows padded by 8: two buffers of K and V tiles (Forward, BackwardDq), or the
/// CTA's K and V, two buffers of q and dO tiles and of their rows' D and log_sumexp
/// (BackwardDkDv). Every one fits sm_86's 99 KB of opt-in shared memory.
size_t fusedAttentionSharedBytes(FusedAttentionPass pass, DataType dtype, int64_t head_dim);

}  // namespace loom::codegen
