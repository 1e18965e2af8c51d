// SPDX-License-Identifier: Apache-2.0
// Device runtime: the fused attention forward on tensor cores, for bf16 and f16 operands (issue
// 30). The math is attention.cuh's (the composite's): the same masking, online softmax, dropout
// draw and log_sumexp; what changes is where the two products run.
//
// One CTA of four warps takes kRows = 64 query rows of one (n, h); each warp owns 16 of them. The
// warp keeps its q rows as mma A fragments (mma.cuh) for the whole kernel and its output rows as
// f32 D fragments (16 x kHeadDim: kHeadDim / 8 tiles of 16 x 8). K and V go through shared memory
// in tiles of kKeys = 64 keys, as 16-bit values in rows padded by 8 elements (so the fragment
// loads of one warp fall on different banks), in two buffers: the next tile's asynchronous copies
// (cp.async) are in flight while this tile's products run. Per tile:
//   S = q k^T: 8 score tiles of 16 x 8, each kHeadDim / 16 mma steps, with B read from the K rows;
//   the scores are scaled and masked, each row's max is taken over the 4 lanes that share it
//   (shuffles), the running max, sum and output are rescaled, and P = exp(S - max) is drawn
//   for dropout;
//   O += P v: P's D fragments, rounded to the operand type, are the A fragments of the second
//   product directly (mma.cuh's layout note), and B comes from the V rows by ldmatrix .trans
//   (two output tiles' B a load).
// P is rounded to bf16 (f16) for the second product, as flash attention does; the softmax sum is
// taken over the f32 values. The backward stays in attention.cuh (f32 FMA).
#ifndef LOOM_RUNTIME_ATTENTION_MMA_CUH
#define LOOM_RUNTIME_ATTENTION_MMA_CUH

namespace loom {

inline constexpr int kAttentionMmaRows = 64;     ///< query rows per CTA (16 per warp)
inline constexpr int kAttentionMmaKeys = 64;     ///< keys per shared-memory tile
inline constexpr int kAttentionMmaThreads = 128;  ///< four warps

/// Shared 16-bit elements attentionFwdMmaBlock needs: two buffers of a K and a V tile, rows
/// padded by 8.
template <int kHeadDim>
constexpr int attentionFwdMmaSharedHalves() {
  return 4 * kAttentionMmaKeys * (kHeadDim + 8);
}

namespace detail {

/// One 16-byte global -> shared copy of thread-private data in flight (cp.async, sm_80+): `src`
/// when `valid`, else zeros. cpAsyncCommit closes a group of them; cpAsyncWait<N> waits until at
/// most N of this thread's groups are incomplete (a __syncthreads then shows every thread's
/// copies). The host backend copies at once.
__device__ __forceinline__ void cpAsync16(void* dst, const void* src, bool valid) {
#ifndef LOOM_EMULATION
  unsigned long long shared;
  asm("cvta.to.shared.u64 %0, %1;" : "=l"(shared) : "l"(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"((unsigned)shared),
               "l"(src), "r"(valid ? 16 : 0)
               : "memory");
#else
  if (valid) {
    memcpy(dst, src, 16);
  } else {
    memset(dst, 0, 16);
  }
#endif
}
__device__ __forceinline__ void cpAsyncCommit() {
#ifndef LOOM_EMULATION
  asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}
template <int N>
__device__ __forceinline__ void cpAsyncWait() {
#ifndef LOOM_EMULATION
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
#endif
}

/// Rows [j0, j0 + kRows) of one (n, h) operand (`a`, rows from `keys` on as zeros) into the
/// shared tile `at` (rows of kStride values), by all 128 threads (the backward's tiles too). Vec
/// (dense rows whose starts are 16-byte aligned; `as` the row stride in elements): asynchronous
/// 16-byte copies (cpAsync16), complete after cpAsyncWait. Else one value per load through the
/// strides `as` ([N, H, rows, E] order), 16 loads of a thread in flight before their stores,
/// complete on return.
template <int kRows, int kHeadDim, int kStride, bool kVec, typename T, typename Strides>
__device__ __forceinline__ void loadTileMma(unsigned short* at, const T* a, Strides as,
                                            long long j0, long long keys, int tid) {
  if constexpr (kVec) {
    constexpr int kPerRow = kHeadDim / 8;  // vectors per row
    constexpr int kLoads = kRows * kPerRow / kAttentionMmaThreads;
    static_assert(kLoads * kAttentionMmaThreads == kRows * kPerRow, "whole loads");
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      const int idx = tid + i * kAttentionMmaThreads;
      const int r = idx / kPerRow, c = idx % kPerRow;
      const long long key = j0 + r;
      // Rows past the last key are zeros (nothing read: the source is the tile's base then).
      cpAsync16(at + r * kStride + 8 * c, key < keys ? a + key * as + 8 * c : a, key < keys);
    }
  } else {
    // In chunks of 16 loads, so the staging stays within a few registers beside the
    // accumulators.
    constexpr int kLoads = kRows * kHeadDim / kAttentionMmaThreads;
    constexpr int kChunk = 16;
    static_assert(kLoads % kChunk == 0, "whole chunks");
    for (int first = 0; first < kLoads; first += kChunk) {
      unsigned short staged[kChunk];
#pragma unroll
      for (int i = 0; i < kChunk; ++i) {
        const int idx = tid + (first + i) * kAttentionMmaThreads;
        const int r = idx / kHeadDim, d = idx % kHeadDim;
        const long long key = j0 + r;
        staged[i] = key < keys ? halfBits(a[key * as[2] + d * as[3]]) : (unsigned short)0;
      }
#pragma unroll
      for (int i = 0; i < kChunk; ++i) {
        const int idx = tid + (first + i) * kAttentionMmaThreads;
        at[(idx / kHeadDim) * kStride + idx % kHeadDim] = staged[i];
      }
    }
  }
}

/// The B fragments of two 16 x 8 products whose B is a row-major [k][n] tile (V in P v): k = the
/// 16 rows from `rows` on, columns col + [0, 8) into b[0], b[1] and col + 8 + [0, 8) into b[2],
/// b[3], by one ldmatrixX4Trans (mma.cuh): lane 8 i + r addresses row 8 (i % 2) + r, columns
/// col + 8 (i / 2) (16-byte aligned: rows of kStride values, kStride and col multiples of 8).
template <int kStride>
__device__ __forceinline__ void loadFragmentBColsX2(unsigned (&b)[4], const unsigned short* rows,
                                                    int col, int lane) {
  ldmatrixX4Trans(b, rows + (8 * ((lane / 8) % 2) + lane % 8) * kStride + col + 8 * (lane / 16));
}

/// d0 += a * b[0..1] and d1 += a * b[2..3] (the pair loadFragmentBColsX2 gives).
template <typename T>
__device__ __forceinline__ void mmaPair(float (&d0)[4], float (&d1)[4], const unsigned (&a)[4],
                                        const unsigned (&b)[4]) {
  const unsigned lo[2] = {b[0], b[1]};
  const unsigned hi[2] = {b[2], b[3]};
  loom::mmaM16N8K16<T>(d0, a, lo);  // qualified: detail has the instruction's overloads
  loom::mmaM16N8K16<T>(d1, a, hi);
}

}  // namespace detail

/// One CTA's work: rows [blockIdx.x * 64, +64) of head blockIdx.y of batch blockIdx.z, with 128
/// threads. T is __nv_bfloat16 or __half; `smem` holds attentionFwdMmaSharedHalves() values.
template <typename T, int kHeadDim>
__device__ __forceinline__ void attentionFwdMmaBlock(const AttentionFwdParams& p,
                                                     unsigned short* smem) {
  static_assert(kHeadDim % 16 == 0, "the head dim is whole mma k steps");
  constexpr int kSteps = kHeadDim / 16;    // k steps of q k^T
  constexpr int kOutTiles = kHeadDim / 8;  // 16 x 8 output tiles per warp
  constexpr int kScoreTiles = kAttentionMmaKeys / 8;
  constexpr int kStride = kHeadDim + 8;  // a K or V row in shared memory
  const float kNegInf = -__int_as_float(0x7f800000);

  const int tid = (int)threadIdx.x;
  const int warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, t = lane % 4;
  const long long n = blockIdx.z, h = blockIdx.y;
  const long long bh = n * p.heads + h;
  // This lane's two rows: g and g + 8 of the warp's 16.
  const long long row0 = (long long)blockIdx.x * kAttentionMmaRows + warp * 16 + g;
  const long long row1 = row0 + 8;

  const T* q = (const T*)p.q + n * p.qs[0] + h * p.qs[1];
  const T* k = (const T*)p.k + n * p.ks[0] + h * p.ks[1];
  const T* v = (const T*)p.v + n * p.vs[0] + h * p.vs[1];

  // q as A fragments: step s covers dims [16 s, 16 s + 16).
  auto qBits = [&](long long row, int d) -> unsigned short {
    return row < p.rows ? halfBits(q[row * p.qs[2] + d * p.qs[3]]) : (unsigned short)0;
  };
  unsigned qa[kSteps][4];
#pragma unroll
  for (int s = 0; s < kSteps; ++s) {
    const int d = 16 * s + 2 * t;
    qa[s][0] = packHalves(qBits(row0, d), qBits(row0, d + 1));
    qa[s][1] = packHalves(qBits(row1, d), qBits(row1, d + 1));
    qa[s][2] = packHalves(qBits(row0, d + 8), qBits(row0, d + 9));
    qa[s][3] = packHalves(qBits(row1, d + 8), qBits(row1, d + 9));
  }

  float o[kOutTiles][4];
#pragma unroll
  for (int j = 0; j < kOutTiles; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;
  float m0 = kNegInf, m1 = kNegInf;  // running max of rows 0 and 1 (the same over a quad)
  float l0 = 0.0f, l1 = 0.0f;        // this lane's part of the running sums

  // Rows of 16-byte vectors (dense E, rows and bases aligned): the tiles move 8 values a load.
  const bool vec = p.ks[3] == 1 && p.vs[3] == 1 && p.ks[2] % 8 == 0 && p.vs[2] % 8 == 0 &&
                   ((unsigned long long)k) % 16 == 0 && ((unsigned long long)v) % 16 == 0;
  // Two buffers of a K and a V tile: while a tile's products run, the next tile's copies are in
  // flight into the other buffer (cp.async; strided operands load it synchronously instead).
  constexpr int kTileHalves = kAttentionMmaKeys * kStride;
  auto fill = [&](long long first, int buffer) {
    unsigned short* kt = smem + buffer * 2 * kTileHalves;
    constexpr int kKeys = kAttentionMmaKeys;
    if (vec) {
      detail::loadTileMma<kKeys, kHeadDim, kStride, true>(kt, k, p.ks[2], first, p.keys, tid);
      detail::loadTileMma<kKeys, kHeadDim, kStride, true>(kt + kTileHalves, v, p.vs[2], first,
                                                          p.keys, tid);
    } else {
      detail::loadTileMma<kKeys, kHeadDim, kStride, false>(kt, k, p.ks, first, p.keys, tid);
      detail::loadTileMma<kKeys, kHeadDim, kStride, false>(kt + kTileHalves, v, p.vs, first, p.keys,
                                                           tid);
    }
    detail::cpAsyncCommit();
  };
  // Causal: keys past the CTA's last row are hidden from all of its rows (a uniform bound, so
  // the syncs stay uniform).
  const long long last_row = (long long)blockIdx.x * kAttentionMmaRows + kAttentionMmaRows - 1;
  const long long end = p.causal && last_row + 1 < p.keys ? last_row + 1 : p.keys;
  if (end > 0) fill(0, 0);
  int buffer = 0;
  for (long long j0 = 0; j0 < end; j0 += kAttentionMmaKeys, buffer ^= 1) {
    if (j0 + kAttentionMmaKeys < end) {
      fill(j0 + kAttentionMmaKeys, buffer ^ 1);  // the buffer the last tile's products read
      detail::cpAsyncWait<1>();                  // this tile's copies are done
    } else {
      detail::cpAsyncWait<0>();
    }
    __syncthreads();  // ... and every thread's
    const unsigned short* ktile = smem + buffer * 2 * kTileHalves;
    const unsigned short* vtile = ktile + kTileHalves;

    // S = q k^T: tile j holds keys j0 + 8 j + [0, 8); this lane has keys 8 j + 2 t, + 1.
    float s[kScoreTiles][4];
#pragma unroll
    for (int j = 0; j < kScoreTiles; ++j) {
      s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
      const unsigned short* krow = ktile + (8 * j + g) * kStride + 2 * t;
#pragma unroll
      for (int st = 0; st < kSteps; ++st) {
        const unsigned b[2] = {*(const unsigned*)(krow + 16 * st),
                               *(const unsigned*)(krow + 16 * st + 8)};
        mmaM16N8K16<T>(s[j], qa[st], b);
      }
    }
    float mx0 = kNegInf, mx1 = kNegInf;
#pragma unroll
    for (int j = 0; j < kScoreTiles; ++j) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const long long key = j0 + 8 * j + 2 * t + (i & 1);
        const long long row = i < 2 ? row0 : row1;
        const bool seen = key < p.keys && (!p.causal || key <= row);
        s[j][i] = seen ? s[j][i] * p.scale : kNegInf;
      }
      mx0 = fmaxf(mx0, fmaxf(s[j][0], s[j][1]));
      mx1 = fmaxf(mx1, fmaxf(s[j][2], s[j][3]));
    }
#pragma unroll
    for (int w = 1; w < 4; w *= 2) {
      mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, w));
      mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, w));
    }
    const float mn0 = fmaxf(m0, mx0), mn1 = fmaxf(m1, mx1);
    // What the earlier tiles summed, rescaled to the new max (m = -inf: they summed nothing).
    const float a0 = m0 == kNegInf ? 0.0f : expf(m0 - mn0);
    const float a1 = m1 == kNegInf ? 0.0f : expf(m1 - mn1);
    l0 *= a0;
    l1 *= a1;
#pragma unroll
    for (int j = 0; j < kOutTiles; ++j) {
      o[j][0] *= a0;
      o[j][1] *= a0;
      o[j][2] *= a1;
      o[j][3] *= a1;
    }
    // P, summed before dropout (the denominator counts dropped entries too), then dropped.
#pragma unroll
    for (int j = 0; j < kScoreTiles; ++j) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float mn = i < 2 ? mn0 : mn1;
        float pj = s[j][i] == kNegInf ? 0.0f : expf(s[j][i] - mn);
        if (i < 2) {
          l0 += pj;
        } else {
          l1 += pj;
        }
        if (p.dropout && pj != 0.0f) {
          const long long row = i < 2 ? row0 : row1;
          const unsigned long long index = ((unsigned long long)bh * p.rows + row) * p.keys +
                                           (unsigned long long)(j0 + 8 * j + 2 * t + (i & 1));
          const float u = (float)loom_rng_uniform(p.seed, p.offset, index, 24, 0.0, 1.0);
          pj = u < p.keep ? pj * p.inv_keep : 0.0f;
        }
        s[j][i] = pj;
      }
    }
    m0 = mn0;
    m1 = mn1;

    // O += P v: key step c covers score tiles 2c and 2c + 1.
#pragma unroll
    for (int c = 0; c < kAttentionMmaKeys / 16; ++c) {
      const unsigned pa[4] = {packFloats<T>(s[2 * c][0], s[2 * c][1]),
                              packFloats<T>(s[2 * c][2], s[2 * c][3]),
                              packFloats<T>(s[2 * c + 1][0], s[2 * c + 1][1]),
                              packFloats<T>(s[2 * c + 1][2], s[2 * c + 1][3])};
      // B of output tiles j and j + 1 from the V rows in one ldmatrix (transposed).
#pragma unroll
      for (int j = 0; j < kOutTiles; j += 2) {
        unsigned b[4];
        detail::loadFragmentBColsX2<kStride>(b, vtile + 16 * c * kStride, 8 * j, lane);
        detail::mmaPair<T>(o[j], o[j + 1], pa, b);
      }
    }
    __syncthreads();  // the buffer is read by all before the next iteration refills it
  }

  // The rows' sums over their quads; a row that sees no key has output 0 and log_sumexp -inf.
#pragma unroll
  for (int w = 1; w < 4; w *= 2) {
    l0 += __shfl_xor_sync(0xffffffffu, l0, w);
    l1 += __shfl_xor_sync(0xffffffffu, l1, w);
  }
  const float inv0 = l0 > 0.0f ? 1.0f / l0 : 0.0f;
  const float inv1 = l1 > 0.0f ? 1.0f / l1 : 0.0f;
  T* out = (T*)p.out + bh * p.rows * kHeadDim;
#pragma unroll
  for (int j = 0; j < kOutTiles; ++j) {
    const int d = 8 * j + 2 * t;
    if (row0 < p.rows) {
      out[row0 * kHeadDim + d] = fromFloat<T>(o[j][0] * inv0);
      out[row0 * kHeadDim + d + 1] = fromFloat<T>(o[j][1] * inv0);
    }
    if (row1 < p.rows) {
      out[row1 * kHeadDim + d] = fromFloat<T>(o[j][2] * inv1);
      out[row1 * kHeadDim + d + 1] = fromFloat<T>(o[j][3] * inv1);
    }
  }
  if (t == 0) {
    if (row0 < p.rows) p.lse[bh * p.rows + row0] = m0 == kNegInf ? kNegInf : m0 + logf(l0);
    if (row1 < p.rows) p.lse[bh * p.rows + row1] = m1 == kNegInf ? kNegInf : m1 + logf(l1);
  }
}

}  // namespace loom

#endif  // LOOM_RUNTIME_ATTENTION_MMA_CUH
