// SPDX-License-Identifier: Apache-2.0
// Device runtime: the fused scaled dot-product attention forward (issue 30), written by hand.
//
// One CTA per (n, h, block of kBlockM query rows); kThreadsPerRow threads share a row, each
// holding every kThreadsPerRow-th element of its q row and of its output accumulator (f32, FMA, no
// tensor cores). K and V go through shared memory in tiles of kBlockN keys; the scores of a tile
// are reduced across the row's threads with shuffles and folded into the online softmax (running
// max m and sum l), so the scores [L, S] never reach global memory. The math is the composite's
// (csrc/ops/attention.cpp): scores = (q . k) * scale, causal keeps key j <= row i, log_sumexp =
// m + log(l) (-inf for a row that sees no key, whose output is 0), dropout keeps P[i, j] when the
// f32 Philox number at the row-major index of [N, H, L, S] is below (float)(1 - p) and scales it
// by (float)(1 / (1 - p)): exactly ops::dropout's mask, so the kernel, the composite and the
// reference evaluator drop the same entries. Generated kernels never call this file; codegen's
// fusedAttentionFwdKernel() wraps it in a __global__ function that owns the shared memory.
#ifndef LOOM_RUNTIME_ATTENTION_CUH
#define LOOM_RUNTIME_ATTENTION_CUH

namespace loom {

/// What the host passes (packed by exec::FusedAttention; standard layout, no pointers inside
/// other than the tensors'). Strides are in elements; the batch dims are [N, H].
struct AttentionFwdParams {
  const void* q;
  const void* k;
  const void* v;
  void* out;           ///< [N, H, L, E] contiguous, the inputs' dtype
  float* lse;          ///< [N, H, L] contiguous
  long long qs[4];     ///< q's strides [N, H, L, E]
  long long ks[4];
  long long vs[4];
  long long heads;     ///< H
  long long rows;      ///< L
  long long keys;      ///< S
  float scale;
  int causal;          ///< key j is seen by row i when j <= i
  int dropout;         ///< 0: no dropout (keep and inv_keep unused)
  float keep;          ///< (float)(1 - p): the composite compares its f32 draw with this
  float inv_keep;      ///< (float)(1 / (1 - p))
  unsigned long long seed;
  unsigned long long offset;
};

/// The shared floats attentionFwdBlock needs: a K and a V tile.
template <int kHeadDim, int kBlockN>
constexpr int attentionFwdSharedFloats() {
  return 2 * kBlockN * kHeadDim;
}

/// One CTA's work: rows [blockIdx.x * kBlockM, +kBlockM) of head blockIdx.y of batch blockIdx.z,
/// with kBlockM * kThreadsPerRow threads. `smem` holds attentionFwdSharedFloats() floats.
template <typename T, int kHeadDim, int kBlockM, int kBlockN, int kThreadsPerRow>
__device__ __forceinline__ void attentionFwdBlock(const AttentionFwdParams& p, float* smem) {
  static_assert(kHeadDim % kThreadsPerRow == 0, "the head dim splits evenly across a row");
  static_assert(32 % kThreadsPerRow == 0, "a row's threads are lanes of one warp");
  constexpr int kPerThread = kHeadDim / kThreadsPerRow;
  constexpr int kThreads = kBlockM * kThreadsPerRow;
  const float kNegInf = -__int_as_float(0x7f800000);

  const int tid = (int)threadIdx.x;
  const int part = tid % kThreadsPerRow;  // this thread's dims: part, part + kThreadsPerRow, ...
  const long long n = blockIdx.z, h = blockIdx.y;
  const long long row = (long long)blockIdx.x * kBlockM + tid / kThreadsPerRow;
  const bool live = row < p.rows;
  const long long bh = n * p.heads + h;  // the (n, h) batch's linear index

  const T* q = (const T*)p.q + n * p.qs[0] + h * p.qs[1];
  const T* k = (const T*)p.k + n * p.ks[0] + h * p.ks[1];
  const T* v = (const T*)p.v + n * p.vs[0] + h * p.vs[1];

  float qr[kPerThread], acc[kPerThread];
#pragma unroll
  for (int t = 0; t < kPerThread; ++t) {
    const int d = part + t * kThreadsPerRow;
    qr[t] = live ? toFloat(q[row * p.qs[2] + d * p.qs[3]]) : 0.0f;
    acc[t] = 0.0f;
  }
  float m = kNegInf, l = 0.0f;

  float* ktile = smem;
  float* vtile = smem + kBlockN * kHeadDim;
  // Causal: keys past the block's last row are hidden from every row of it, so those tiles are
  // skipped (the bound is the same for every thread of the CTA, which keeps the syncs uniform).
  const long long last_row = (long long)blockIdx.x * kBlockM + kBlockM - 1;
  const long long end = p.causal && last_row + 1 < p.keys ? last_row + 1 : p.keys;
  for (long long j0 = 0; j0 < end; j0 += kBlockN) {
    __syncthreads();  // the previous tile is no longer read
    for (int idx = tid; idx < kBlockN * kHeadDim; idx += kThreads) {
      const int j = idx / kHeadDim, d = idx % kHeadDim;
      const long long key = j0 + j;
      ktile[idx] = key < p.keys ? toFloat(k[key * p.ks[2] + d * p.ks[3]]) : 0.0f;
      vtile[idx] = key < p.keys ? toFloat(v[key * p.vs[2] + d * p.vs[3]]) : 0.0f;
    }
    __syncthreads();

    float s[kBlockN];
    float tile_max = kNegInf;
#pragma unroll
    for (int j = 0; j < kBlockN; ++j) {
      float dot = 0.0f;
#pragma unroll
      for (int t = 0; t < kPerThread; ++t) {
        dot = fmaf(qr[t], ktile[j * kHeadDim + part + t * kThreadsPerRow], dot);
      }
#pragma unroll
      for (int w = kThreadsPerRow / 2; w > 0; w /= 2) {
        dot += __shfl_xor_sync(0xffffffffu, dot, w, kThreadsPerRow);
      }
      const long long key = j0 + j;
      const bool seen = key < p.keys && (!p.causal || key <= row);
      s[j] = seen ? dot * p.scale : kNegInf;
      tile_max = fmaxf(tile_max, s[j]);
    }
    const float m_new = fmaxf(m, tile_max);
    if (m_new == kNegInf) continue;  // nothing seen yet: l and acc stay 0
    // Rescale what the earlier tiles summed to the new max (m = -inf: they summed nothing).
    const float alpha = m == kNegInf ? 0.0f : expf(m - m_new);
    l *= alpha;
#pragma unroll
    for (int t = 0; t < kPerThread; ++t) acc[t] *= alpha;
#pragma unroll
    for (int j = 0; j < kBlockN; ++j) {
      float pj = s[j] == kNegInf ? 0.0f : expf(s[j] - m_new);
      l += pj;  // the softmax denominator counts dropped entries too
      if (p.dropout && pj != 0.0f) {
        const unsigned long long index =
            ((unsigned long long)bh * p.rows + row) * p.keys + (unsigned long long)(j0 + j);
        const float u = (float)loom_rng_uniform(p.seed, p.offset, index, 24, 0.0, 1.0);
        pj = u < p.keep ? pj * p.inv_keep : 0.0f;
      }
#pragma unroll
      for (int t = 0; t < kPerThread; ++t) {
        acc[t] = fmaf(pj, vtile[j * kHeadDim + part + t * kThreadsPerRow], acc[t]);
      }
    }
    m = m_new;
  }

  if (!live) return;
  T* out = (T*)p.out + (bh * p.rows + row) * kHeadDim;
  const float inv_l = l > 0.0f ? 1.0f / l : 0.0f;  // a row that sees no key: output 0
#pragma unroll
  for (int t = 0; t < kPerThread; ++t) {
    out[part + t * kThreadsPerRow] = fromFloat<T>(acc[t] * inv_l);
  }
  if (part == 0) p.lse[bh * p.rows + row] = m == kNegInf ? kNegInf : m + logf(l);
}

}  // namespace loom

#endif  // LOOM_RUNTIME_ATTENTION_CUH
