// SPDX-License-Identifier: Apache-2.0
// Device runtime: the fused attention kernels' argument structs, which the host packs
// (exec::FusedAttention includes this file as C++) and runtime/attention.cuh reads. Plain members
// only, so natural alignment lays each out alike on x86-64 and the GPU.
#ifndef LOOM_RUNTIME_ATTENTION_PARAMS_CUH
#define LOOM_RUNTIME_ATTENTION_PARAMS_CUH

namespace loom {

/// What the host passes (packed by exec::FusedAttention; standard layout, no pointers inside
/// other than the tensors'). Strides are in elements; the batch dims are [N, H].
struct AttentionFwdParams {
  const void* q;
  const void* k;
  const void* v;
  void* out;        ///< [N, H, L, E] contiguous, the inputs' dtype
  float* lse;       ///< [N, H, L] contiguous
  long long qs[4];  ///< q's strides [N, H, L, E]
  long long ks[4];
  long long vs[4];
  long long heads;  ///< H
  long long rows;   ///< L
  long long keys;   ///< S
  float scale;
  int causal;      ///< key j is seen by row i when j <= i
  int dropout;     ///< 0: no dropout (keep and inv_keep unused)
  float keep;      ///< (float)(1 - p): the composite compares its f32 draw with this
  float inv_keep;  ///< (float)(1 / (1 - p))
  unsigned long long seed;
  unsigned long long offset;
};

/// The backward's arguments (packed by exec::FusedAttention). Strides in elements; lse is the
/// forward's [N, H, L] f32; dq, dk and dv are contiguous in the inputs' dtype.
struct AttentionBwdParams {
  const void* q;
  const void* k;
  const void* v;
  const void* o;
  const void* dout;
  const float* lse;
  void* dq;
  void* dk;
  void* dv;
  /// [N, H, L] f32 scratch for D = rowsum(dO * O): the tensor-core dq kernel writes it, the
  /// tensor-core dk/dv kernel, launched after it, reads it (the f32 kernels sum D themselves).
  float* delta;
  long long qs[4];
  long long ks[4];
  long long vs[4];
  long long os[4];
  long long dos[4];
  long long lses[3];
  long long heads;
  long long rows;
  long long keys;
  float scale;
  int causal;
  int dropout;
  float keep;
  float inv_keep;
  unsigned long long seed;
  unsigned long long offset;
};

}  // namespace loom

#endif  // LOOM_RUNTIME_ATTENTION_PARAMS_CUH
