// SPDX-License-Identifier: Apache-2.0
// Device runtime: the fused scaled dot-product attention, forward and backward (issue 30).
//
// Forward: one CTA per (n, h, block of kBlockM query rows); kThreadsPerRow threads share a row, each
// holding every kThreadsPerRow-th element of its q row and of its output accumulator (f32, FMA, no
// tensor cores). K and V go through shared memory in tiles of kBlockN keys; the scores of a tile
// are reduced across the row's threads with shuffles and folded into the online softmax (running
// max m and sum l), so the scores [L, S] never reach global memory. The math is the composite's
// (csrc/ops/attention.cpp): scores = (q . k) * scale, causal keeps key j <= row i, log_sumexp =
// m + log(l) (-inf for a row that sees no key, whose output is 0), dropout keeps P[i, j] when the
// f32 Philox number at the row-major index of [N, H, L, S] is below (float)(1 - p) and scales it
// by (float)(1 / (1 - p)): exactly ops::dropout's mask, so the kernel, the composite and the
// reference evaluator drop the same entries. Backward: P recomputed per tile from log_sumexp, in
// two kernels that need no atomics (dq per block of query rows, dk and dv per block of keys).
// Generated kernels never call this file; codegen's fusedAttentionKernel() wraps each block
// function in a __global__ function that owns the shared memory.
#ifndef LOOM_RUNTIME_ATTENTION_CUH
#define LOOM_RUNTIME_ATTENTION_CUH

namespace loom {

/// The shared floats attentionFwdBlock needs: a K and a V tile.
template <int kHeadDim, int kBlockN>
constexpr int attentionFwdSharedFloats() {
  return 2 * kBlockN * kHeadDim;
}

namespace detail {

/// Rows [first, first + kTile) of two [rows, kHeadDim] operands of one (n, h) batch, as f32, into
/// the shared tiles at and bt (rows from `limit` on as zeros); as and bs are the operands' strides
/// in [N, H, rows, E] order. Every thread of the CTA takes part.
template <typename T, int kHeadDim, int kTile, int kThreads>
__device__ __forceinline__ void loadTilePair(float* at, const T* a, const long long* as, float* bt,
                                             const T* b, const long long* bs, long long first,
                                             long long limit, int tid) {
  for (int idx = tid; idx < kTile * kHeadDim; idx += kThreads) {
    const int r = idx / kHeadDim, d = idx % kHeadDim;
    const long long row = first + r;
    at[idx] = row < limit ? toFloat(a[row * as[2] + d * as[3]]) : 0.0f;
    bt[idx] = row < limit ? toFloat(b[row * bs[2] + d * bs[3]]) : 0.0f;
  }
}

}  // namespace detail

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
    detail::loadTilePair<T, kHeadDim, kBlockN, kThreads>(ktile, k, p.ks, vtile, v, p.vs, j0, p.keys,
                                                         tid);
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


namespace detail {

/// The sum of a value over the kThreadsPerRow lanes that share a row (every lane gets it).
template <int kThreadsPerRow>
__device__ __forceinline__ float rowSum(float x) {
#pragma unroll
  for (int w = kThreadsPerRow / 2; w > 0; w /= 2)
    x += __shfl_xor_sync(0xffffffffu, x, w, kThreadsPerRow);
  return x;
}

/// The composite's dropout decision for entry (row, key) of batch bh: its f32 Philox draw at the
/// row-major index of [N, H, L, S] below (float)(1 - p).
__device__ __forceinline__ bool attentionKeeps(const AttentionBwdParams& p, long long bh,
                                               long long row, long long key) {
  const unsigned long long index =
      ((unsigned long long)bh * p.rows + row) * p.keys + (unsigned long long)key;
  return (float)loom_rng_uniform(p.seed, p.offset, index, 24, 0.0, 1.0) < p.keep;
}

/// The backward's five operands of batch (n, h): q, k, v, o and dO at their [N, H] offsets.
template <typename T>
struct BwdOperands {
  const T* q;
  const T* k;
  const T* v;
  const T* o;
  const T* dout;
};
template <typename T>
__device__ __forceinline__ BwdOperands<T> bwdOperands(const AttentionBwdParams& p, long long n,
                                                      long long h) {
  return {(const T*)p.q + n * p.qs[0] + h * p.qs[1], (const T*)p.k + n * p.ks[0] + h * p.ks[1],
          (const T*)p.v + n * p.vs[0] + h * p.vs[1], (const T*)p.o + n * p.os[0] + h * p.os[1],
          (const T*)p.dout + n * p.dos[0] + h * p.dos[1]};
}

/// log_sumexp as the composite uses it for P = exp(s - lse): a row that saw no key (-inf) gets
/// +inf, so its P is 0, not NaN.
__device__ __forceinline__ float safeLse(float lse) {
  return lse == -__int_as_float(0x7f800000) ? __int_as_float(0x7f800000) : lse;
}

}  // namespace detail

/// The backward's dq for rows [blockIdx.x * kBlockM, +kBlockM) of (n, h) = (blockIdx.z,
/// blockIdx.y), laid out as the forward: P recomputed per key tile from lse, dP = dropout(dO v^T),
/// D = rowsum(dO * O), dS = P (dP - D), dq = dS k * scale. `smem`: a K and a V tile.
template <typename T, int kHeadDim, int kBlockM, int kBlockN, int kThreadsPerRow>
__device__ __forceinline__ void attentionBwdDqBlock(const AttentionBwdParams& p, float* smem) {
  constexpr int kPerThread = kHeadDim / kThreadsPerRow;
  constexpr int kThreads = kBlockM * kThreadsPerRow;
  const int tid = (int)threadIdx.x;
  const int part = tid % kThreadsPerRow;
  const long long n = blockIdx.z, h = blockIdx.y;
  const long long row = (long long)blockIdx.x * kBlockM + tid / kThreadsPerRow;
  const bool live = row < p.rows;
  const long long bh = n * p.heads + h;
  const auto [q, k, v, o, dout] = detail::bwdOperands<T>(p, n, h);

  float qr[kPerThread], dor[kPerThread], dq[kPerThread];
  float d_part = 0.0f;
#pragma unroll
  for (int t = 0; t < kPerThread; ++t) {
    const int d = part + t * kThreadsPerRow;
    qr[t] = live ? toFloat(q[row * p.qs[2] + d * p.qs[3]]) : 0.0f;
    dor[t] = live ? toFloat(dout[row * p.dos[2] + d * p.dos[3]]) : 0.0f;
    const float ov = live ? toFloat(o[row * p.os[2] + d * p.os[3]]) : 0.0f;
    d_part = fmaf(dor[t], ov, d_part);
    dq[t] = 0.0f;
  }
  const float drow = detail::rowSum<kThreadsPerRow>(d_part);
  const float lse = live ? detail::safeLse(p.lse[n * p.lses[0] + h * p.lses[1] + row * p.lses[2]])
                         : __int_as_float(0x7f800000);

  float* ktile = smem;
  float* vtile = smem + kBlockN * kHeadDim;
  const long long last_row = (long long)blockIdx.x * kBlockM + kBlockM - 1;
  const long long end = p.causal && last_row + 1 < p.keys ? last_row + 1 : p.keys;
  for (long long j0 = 0; j0 < end; j0 += kBlockN) {
    __syncthreads();
    detail::loadTilePair<T, kHeadDim, kBlockN, kThreads>(ktile, k, p.ks, vtile, v, p.vs, j0, p.keys,
                                                         tid);
    __syncthreads();
    for (int j = 0; j < kBlockN; ++j) {
      float s = 0.0f, dp = 0.0f;
#pragma unroll
      for (int t = 0; t < kPerThread; ++t) {
        s = fmaf(qr[t], ktile[j * kHeadDim + part + t * kThreadsPerRow], s);
        dp = fmaf(dor[t], vtile[j * kHeadDim + part + t * kThreadsPerRow], dp);
      }
      s = detail::rowSum<kThreadsPerRow>(s);
      dp = detail::rowSum<kThreadsPerRow>(dp);
      const long long key = j0 + j;
      const bool seen = live && key < p.keys && (!p.causal || key <= row);
      const float pij = seen ? expf(s * p.scale - lse) : 0.0f;
      if (pij == 0.0f) continue;
      if (p.dropout) dp = detail::attentionKeeps(p, bh, row, key) ? dp * p.inv_keep : 0.0f;
      const float ds = pij * (dp - drow);
#pragma unroll
      for (int t = 0; t < kPerThread; ++t) {
        dq[t] = fmaf(ds, ktile[j * kHeadDim + part + t * kThreadsPerRow], dq[t]);
      }
    }
  }
  if (!live) return;
  T* out = (T*)p.dq + (bh * p.rows + row) * kHeadDim;
#pragma unroll
  for (int t = 0; t < kPerThread; ++t)
    out[part + t * kThreadsPerRow] = fromFloat<T>(dq[t] * p.scale);
}

/// The backward's dk and dv for keys [blockIdx.x * kBlockN, +kBlockN) of (n, h): kThreadsPerRow
/// threads per key, query tiles of kBlockM rows (q, dO, D and lse) through shared memory;
/// dv = dropout(P)^T dO, dk = dS^T q * scale. Causal: query tiles wholly before the block's first
/// key are skipped. `smem`: a q and a dO tile, then kBlockM floats of D and of lse.
template <typename T, int kHeadDim, int kBlockM, int kBlockN, int kThreadsPerRow>
__device__ __forceinline__ void attentionBwdDkDvBlock(const AttentionBwdParams& p, float* smem) {
  constexpr int kPerThread = kHeadDim / kThreadsPerRow;
  constexpr int kThreads = kBlockN * kThreadsPerRow;
  const int tid = (int)threadIdx.x;
  const int part = tid % kThreadsPerRow;
  const long long n = blockIdx.z, h = blockIdx.y;
  const long long key = (long long)blockIdx.x * kBlockN + tid / kThreadsPerRow;
  const bool live = key < p.keys;
  const long long bh = n * p.heads + h;
  const auto [q, k, v, o, dout] = detail::bwdOperands<T>(p, n, h);

  float kr[kPerThread], vr[kPerThread], dk[kPerThread], dv[kPerThread];
#pragma unroll
  for (int t = 0; t < kPerThread; ++t) {
    const int d = part + t * kThreadsPerRow;
    kr[t] = live ? toFloat(k[key * p.ks[2] + d * p.ks[3]]) : 0.0f;
    vr[t] = live ? toFloat(v[key * p.vs[2] + d * p.vs[3]]) : 0.0f;
    dk[t] = 0.0f;
    dv[t] = 0.0f;
  }

  float* qtile = smem;
  float* dotile = smem + kBlockM * kHeadDim;
  float* dtile = dotile + kBlockM * kHeadDim;
  float* lsetile = dtile + kBlockM;
  const long long first_key = (long long)blockIdx.x * kBlockN;
  const long long start = p.causal ? first_key / kBlockM * kBlockM : 0;
  for (long long i0 = start; i0 < p.rows; i0 += kBlockM) {
    __syncthreads();
    detail::loadTilePair<T, kHeadDim, kBlockM, kThreads>(qtile, q, p.qs, dotile, dout, p.dos, i0,
                                                         p.rows, tid);
    // D = rowsum(dO * O) and lse of the tile's rows, kThreadsPerRow threads a row.
    for (int r0 = 0; r0 < kBlockM; r0 += kBlockN) {
      const int r = r0 + tid / kThreadsPerRow;
      const long long row = i0 + r;
      float part_sum = 0.0f;
      for (int d = part; d < kHeadDim; d += kThreadsPerRow) {
        if (r < kBlockM && row < p.rows) {
          part_sum = fmaf(toFloat(dout[row * p.dos[2] + d * p.dos[3]]),
                          toFloat(o[row * p.os[2] + d * p.os[3]]), part_sum);
        }
      }
      const float total = detail::rowSum<kThreadsPerRow>(part_sum);
      if (part == 0 && r < kBlockM) {
        dtile[r] = total;
        lsetile[r] = row < p.rows
                         ? detail::safeLse(p.lse[n * p.lses[0] + h * p.lses[1] + row * p.lses[2]])
                         : __int_as_float(0x7f800000);
      }
    }
    __syncthreads();
    for (int r = 0; r < kBlockM; ++r) {
      const long long row = i0 + r;
      float s = 0.0f, dp = 0.0f;
#pragma unroll
      for (int t = 0; t < kPerThread; ++t) {
        s = fmaf(kr[t], qtile[r * kHeadDim + part + t * kThreadsPerRow], s);
        dp = fmaf(vr[t], dotile[r * kHeadDim + part + t * kThreadsPerRow], dp);
      }
      s = detail::rowSum<kThreadsPerRow>(s);
      dp = detail::rowSum<kThreadsPerRow>(dp);
      const bool seen = live && row < p.rows && (!p.causal || key <= row);
      const float pij = seen ? expf(s * p.scale - lsetile[r]) : 0.0f;
      if (pij == 0.0f) continue;
      float pd = pij;
      if (p.dropout) {
        const bool keep = detail::attentionKeeps(p, bh, row, key);
        pd = keep ? pij * p.inv_keep : 0.0f;
        dp = keep ? dp * p.inv_keep : 0.0f;
      }
      const float ds = pij * (dp - dtile[r]);
#pragma unroll
      for (int t = 0; t < kPerThread; ++t) {
        dv[t] = fmaf(pd, dotile[r * kHeadDim + part + t * kThreadsPerRow], dv[t]);
        dk[t] = fmaf(ds, qtile[r * kHeadDim + part + t * kThreadsPerRow], dk[t]);
      }
    }
  }
  if (!live) return;
  T* dk_out = (T*)p.dk + (bh * p.keys + key) * kHeadDim;
  T* dv_out = (T*)p.dv + (bh * p.keys + key) * kHeadDim;
#pragma unroll
  for (int t = 0; t < kPerThread; ++t) {
    dk_out[part + t * kThreadsPerRow] = fromFloat<T>(dk[t] * p.scale);
    dv_out[part + t * kThreadsPerRow] = fromFloat<T>(dv[t]);
  }
}

}  // namespace loom

#endif  // LOOM_RUNTIME_ATTENTION_CUH
