// SPDX-License-Identifier: Apache-2.0
// Device runtime: the fused attention forward on tensor cores, for bf16 and f16 operands (issue
// 30). The math is attention.cuh's (the composite's): the same masking, online softmax, dropout
// draw and log_sumexp; what changes is where the two products run.
//
// One CTA of four warps takes attentionFwdMmaRows() query rows of one (n, h): each warp owns kM
// subtiles of 16 rows (two at head dim 64 without dropout, else one) and keeps its q rows as mma A
// fragments (mma.cuh) for the whole kernel and its output rows as f32 D fragments (16 x kHeadDim a
// subtile: kHeadDim / 8 tiles of 16 x 8). K and V go through shared memory in tiles of kKeys = 64
// keys, as 16-bit values in rows padded by 8 elements (so the fragment loads of one warp fall on
// different banks), in two buffers: the next tile's asynchronous copies (cp.async) are in flight
// while this tile's products run. Per tile and warp:
//   S = q k^T: 8 score tiles of 16 x 8 a subtile, each kHeadDim / 16 mma steps, with B read from
//   the K rows by ldmatrix (two k steps' B a load, used by every subtile);
//   the scores are scaled to base 2 (exp2f), masked only where the tile reaches past the last
//   key or, causal, past one of the warp's rows (a warp skips a tile past all of its rows), each
//   row's max is taken over the 4 lanes that share it (shuffles), the running max, sum and output
//   are rescaled, and P = 2^(S - max) is drawn for dropout (compiled in only when asked for);
//   O += P v: P's D fragments, rounded to the operand type, are the A fragments of the second
//   product directly (mma.cuh's layout note), and B comes from the V rows by ldmatrix .trans
//   (two output tiles' B a load).
// P is rounded to bf16 (f16) for the second product, as flash attention does; the softmax sum is
// taken over the f32 values. The backward is attention_bwd_mma.cuh.
#ifndef LOOM_RUNTIME_ATTENTION_MMA_CUH
#define LOOM_RUNTIME_ATTENTION_MMA_CUH

namespace loom {

inline constexpr int kAttentionMmaKeys = 64;      ///< keys per shared-memory tile
inline constexpr int kAttentionMmaThreads = 128;  ///< four warps

/// The forward's 16-row subtiles per warp: two at head dim 64 without dropout (each B fragment of
/// K and V read from shared memory serves two products), else one (the accumulators at 128, or
/// the dropout draw's registers, leave no room for a second).
template <int kHeadDim, bool kDropout>
constexpr int attentionFwdMmaSubtiles() {
  return kHeadDim <= 64 && !kDropout ? 2 : 1;
}
/// The forward's query rows per CTA: four warps' subtiles.
template <int kHeadDim, bool kDropout>
constexpr int attentionFwdMmaRows() {
  return 4 * 16 * attentionFwdMmaSubtiles<kHeadDim, kDropout>();
}

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
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"((unsigned)shared), "l"(src),
               "r"(valid ? 16 : 0)
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

/// One warp's part of a forward tile: its kM x 16 query rows against the tile's kAttentionMmaKeys
/// keys (from j0 on) in shared memory: S = q k^T, the online softmax in base 2 (scores times
/// scale * log2(e), so exp2f), dropout, O += P v. `masked`: some key of the tile is past the last
/// key or (causal) past one of the warp's rows; otherwise no score needs a test.
template <typename T, int kHeadDim, int kM, bool kDropout>
__device__ __forceinline__ void attentionFwdMmaWarpTile(
    const AttentionFwdParams& p, const unsigned short* ktile, const unsigned short* vtile,
    const unsigned (&qa)[kM][kHeadDim / 16][4], float (&o)[kM][kHeadDim / 8][4], float (&mx)[kM][2],
    float (&l)[kM][2], long long warp_row, long long j0, bool masked, long long bh,
    float scale_log2, int lane) {
  constexpr int kSteps = kHeadDim / 16;
  constexpr int kOutTiles = kHeadDim / 8;
  constexpr int kKeys = kAttentionMmaKeys;
  constexpr int kScoreTiles = kKeys / 8;
  constexpr int kStride = kHeadDim + 8;
  const float kNegInf = -__int_as_float(0x7f800000);
  const int g = lane / 4, t = lane % 4;

  // S = q k^T: score tile j holds keys j0 + 8 j + [0, 8) (this lane: 8 j + 2 t, + 1). One
  // ldmatrix gives the B fragments of two k steps: lane 8 i + r addresses key 8 j + r, dims
  // 16 st + 8 i.
  float s[kM][kScoreTiles][4];
#pragma unroll
  for (int j = 0; j < kScoreTiles; ++j) {
#pragma unroll
    for (int m = 0; m < kM; ++m) s[m][j][0] = s[m][j][1] = s[m][j][2] = s[m][j][3] = 0.0f;
#pragma unroll
    for (int st = 0; st < kSteps; st += 2) {
      unsigned b[4];
      ldmatrixX4(b, ktile + (8 * j + lane % 8) * kStride + 16 * st + 8 * (lane / 8));
      const unsigned lo[2] = {b[0], b[1]};
      const unsigned hi[2] = {b[2], b[3]};
#pragma unroll
      for (int m = 0; m < kM; ++m) {
        mmaM16N8K16<T>(s[m][j], qa[m][st], lo);
        mmaM16N8K16<T>(s[m][j], qa[m][st + 1], hi);
      }
    }
  }

#pragma unroll
  for (int m = 0; m < kM; ++m) {
    // The scores in base 2; masked ones -inf. Key c of the tile is seen by a row when c < lim.
    int lim[2] = {kKeys, kKeys};
    if (masked) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        long long seen = p.keys - j0;
        const long long row = warp_row + 16 * m + 8 * h + g;
        if (p.causal && row - j0 + 1 < seen) seen = row - j0 + 1;
        lim[h] = seen < 0 ? 0 : seen > kKeys ? kKeys : (int)seen;
      }
    }
    float tile_max[2] = {kNegInf, kNegInf};
#pragma unroll
    for (int j = 0; j < kScoreTiles; ++j) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int c = 8 * j + 2 * t + (i & 1);
        s[m][j][i] = c < lim[i / 2] ? s[m][j][i] * scale_log2 : kNegInf;
        tile_max[i / 2] = fmaxf(tile_max[i / 2], s[m][j][i]);
      }
    }
    float base[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
#pragma unroll
      for (int w = 1; w < 4; w *= 2) {
        tile_max[h] = fmaxf(tile_max[h], __shfl_xor_sync(0xffffffffu, tile_max[h], w));
      }
      const float mn = fmaxf(mx[m][h], tile_max[h]);
      // A row that has seen no key yet keeps max -inf; 0 then keeps exp2f(-inf - base) at 0.
      base[h] = mn == kNegInf ? 0.0f : mn;
      // What the earlier tiles summed, rescaled to the new max (exp2f(-inf) = 0: nothing).
      const float a = exp2f(mx[m][h] - base[h]);
      mx[m][h] = mn;
      l[m][h] *= a;
#pragma unroll
      for (int j = 0; j < kOutTiles; ++j) {
        o[m][j][2 * h] *= a;
        o[m][j][2 * h + 1] *= a;
      }
    }
    // P, summed before dropout (the denominator counts dropped entries too), then dropped.
#pragma unroll
    for (int j = 0; j < kScoreTiles; ++j) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        float pj = exp2f(s[m][j][i] - base[i / 2]);
        l[m][i / 2] += pj;
        if constexpr (kDropout) {
          if (pj != 0.0f) {
            const long long row = warp_row + 16 * m + 8 * (i / 2) + g;
            const unsigned long long index = ((unsigned long long)bh * p.rows + row) * p.keys +
                                             (unsigned long long)(j0 + 8 * j + 2 * t + (i & 1));
            const float u = (float)loom_rng_uniform(p.seed, p.offset, index, 24, 0.0, 1.0);
            pj = u < p.keep ? pj * p.inv_keep : 0.0f;
          }
        }
        s[m][j][i] = pj;
      }
    }
  }

  // O += P v: key step c covers score tiles 2c and 2c + 1; P's D fragments are the A operand.
#pragma unroll
  for (int c = 0; c < kKeys / 16; ++c) {
    unsigned pa[kM][4];
#pragma unroll
    for (int m = 0; m < kM; ++m) {
      pa[m][0] = packFloats<T>(s[m][2 * c][0], s[m][2 * c][1]);
      pa[m][1] = packFloats<T>(s[m][2 * c][2], s[m][2 * c][3]);
      pa[m][2] = packFloats<T>(s[m][2 * c + 1][0], s[m][2 * c + 1][1]);
      pa[m][3] = packFloats<T>(s[m][2 * c + 1][2], s[m][2 * c + 1][3]);
    }
    // B of output tiles j and j + 1 from the V rows in one ldmatrix (transposed).
#pragma unroll
    for (int j = 0; j < kOutTiles; j += 2) {
      unsigned b[4];
      detail::loadFragmentBColsX2<kStride>(b, vtile + 16 * c * kStride, 8 * j, lane);
#pragma unroll
      for (int m = 0; m < kM; ++m) detail::mmaPair<T>(o[m][j], o[m][j + 1], pa[m], b);
    }
  }
}

/// One CTA's work: attentionFwdMmaRows<kHeadDim, kDropout>() query rows of head blockIdx.y of batch
/// blockIdx.z, with 128 threads; the row blocks in reverse order of blockIdx.x, so that under a
/// causal mask the blocks with the most keys start first. T is __nv_bfloat16 or __half; `smem`
/// holds attentionFwdMmaSharedHalves() values. kDropout: p.dropout, a kernel of its own (the
/// draw's registers would otherwise spill the accumulators of the kernel without it).
template <typename T, int kHeadDim, bool kDropout>
__device__ __forceinline__ void attentionFwdMmaBlock(const AttentionFwdParams& p,
                                                     unsigned short* smem) {
  static_assert(kHeadDim % 32 == 0, "the head dim is whole pairs of mma k steps");
  constexpr int kM = attentionFwdMmaSubtiles<kHeadDim, kDropout>();
  constexpr int kCtaRows = attentionFwdMmaRows<kHeadDim, kDropout>();
  constexpr int kSteps = kHeadDim / 16;    // k steps of q k^T
  constexpr int kOutTiles = kHeadDim / 8;  // 16 x 8 output tiles per subtile
  constexpr int kKeys = kAttentionMmaKeys;
  constexpr int kStride = kHeadDim + 8;  // a K or V row in shared memory
  const float kNegInf = -__int_as_float(0x7f800000);

  const int tid = (int)threadIdx.x;
  const int warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, t = lane % 4;
  const long long n = blockIdx.z, h = blockIdx.y;
  const long long bh = n * p.heads + h;
  const long long block = (long long)gridDim.x - 1 - blockIdx.x;
  // This warp's rows: [warp_row, warp_row + 16 kM); subtile m's lane rows are
  // warp_row + 16 m + g and that + 8.
  const long long warp_row = block * kCtaRows + warp * 16 * kM;

  const T* q = (const T*)p.q + n * p.qs[0] + h * p.qs[1];
  const T* k = (const T*)p.k + n * p.ks[0] + h * p.ks[1];
  const T* v = (const T*)p.v + n * p.vs[0] + h * p.vs[1];

  // q as A fragments: step s covers dims [16 s, 16 s + 16).
  auto qBits = [&](long long row, int d) -> unsigned short {
    return row < p.rows ? halfBits(q[row * p.qs[2] + d * p.qs[3]]) : (unsigned short)0;
  };
  unsigned qa[kM][kSteps][4];
#pragma unroll
  for (int m = 0; m < kM; ++m) {
    const long long row0 = warp_row + 16 * m + g, row1 = row0 + 8;
#pragma unroll
    for (int s = 0; s < kSteps; ++s) {
      const int d = 16 * s + 2 * t;
      qa[m][s][0] = packHalves(qBits(row0, d), qBits(row0, d + 1));
      qa[m][s][1] = packHalves(qBits(row1, d), qBits(row1, d + 1));
      qa[m][s][2] = packHalves(qBits(row0, d + 8), qBits(row0, d + 9));
      qa[m][s][3] = packHalves(qBits(row1, d + 8), qBits(row1, d + 9));
    }
  }

  float o[kM][kOutTiles][4];
  float mx[kM][2], l[kM][2];  // running max (base 2; the same over a quad) and this lane's sums
#pragma unroll
  for (int m = 0; m < kM; ++m) {
#pragma unroll
    for (int j = 0; j < kOutTiles; ++j) o[m][j][0] = o[m][j][1] = o[m][j][2] = o[m][j][3] = 0.0f;
    mx[m][0] = mx[m][1] = kNegInf;
    l[m][0] = l[m][1] = 0.0f;
  }
  const float scale_log2 = p.scale * 1.44269504088896341f;

  // Rows of 16-byte vectors (dense E, rows and bases aligned): the tiles move 8 values a load.
  const bool vec = p.ks[3] == 1 && p.vs[3] == 1 && p.ks[2] % 8 == 0 && p.vs[2] % 8 == 0 &&
                   ((unsigned long long)k) % 16 == 0 && ((unsigned long long)v) % 16 == 0;
  // Two buffers of a K and a V tile: while a tile's products run, the next tile's copies are in
  // flight into the other buffer (cp.async; strided operands load it synchronously instead).
  constexpr int kTileHalves = kKeys * kStride;
  auto fill = [&](long long first, int buffer) {
    unsigned short* kt = smem + buffer * 2 * kTileHalves;
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
  // the syncs stay uniform); a warp skips the tiles that are past all of its own rows.
  const long long last_row = block * kCtaRows + kCtaRows - 1;
  const long long end = p.causal && last_row + 1 < p.keys ? last_row + 1 : p.keys;
  const long long warp_last = warp_row + 16 * kM - 1;
  if (end > 0) fill(0, 0);
  int buffer = 0;
  for (long long j0 = 0; j0 < end; j0 += kKeys, buffer ^= 1) {
    if (j0 + kKeys < end) {
      fill(j0 + kKeys, buffer ^ 1);  // the buffer the last tile's products read
      detail::cpAsyncWait<1>();      // this tile's copies are done
    } else {
      detail::cpAsyncWait<0>();
    }
    __syncthreads();  // ... and every thread's
    if (!p.causal || j0 <= warp_last) {
      const bool masked = j0 + kKeys > p.keys || (p.causal && j0 + kKeys - 1 > warp_row);
      const unsigned short* ktile = smem + buffer * 2 * kTileHalves;
      attentionFwdMmaWarpTile<T, kHeadDim, kM, kDropout>(
          p, ktile, ktile + kTileHalves, qa, o, mx, l, warp_row, j0, masked, bh, scale_log2, lane);
    }
    __syncthreads();  // the buffer is read by all before the next iteration refills it
  }

  // The rows' sums over their quads; a row that sees no key has output 0 and log_sumexp -inf.
  T* out = (T*)p.out + bh * p.rows * kHeadDim;
#pragma unroll
  for (int m = 0; m < kM; ++m) {
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      float sum = l[m][hh];
#pragma unroll
      for (int w = 1; w < 4; w *= 2) sum += __shfl_xor_sync(0xffffffffu, sum, w);
      const long long row = warp_row + 16 * m + 8 * hh + g;
      if (row >= p.rows) continue;
      const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
#pragma unroll
      for (int j = 0; j < kOutTiles; ++j) {
        *(unsigned*)(out + row * kHeadDim + 8 * j + 2 * t) =
            packFloats<T>(o[m][j][2 * hh] * inv, o[m][j][2 * hh + 1] * inv);
      }
      // log_sumexp = max * ln 2 + log(sum), the max being in base 2.
      if (t == 0) {
        p.lse[bh * p.rows + row] =
            mx[m][hh] == kNegInf ? kNegInf : mx[m][hh] * 0.69314718055994531f + logf(sum);
      }
    }
  }
}

}  // namespace loom

#endif  // LOOM_RUNTIME_ATTENTION_MMA_CUH
