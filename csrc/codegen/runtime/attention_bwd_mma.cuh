// SPDX-License-Identifier: Apache-2.0
// Device runtime: the fused attention backward on tensor cores, for bf16 and f16 operands (issue
// 30). The math is attention.cuh's backward (the composite's): P recomputed from log_sumexp
// (a row that saw no key has P = 0), the same causal mask and dropout draw (attentionKeeps),
// D = rowsum(dO * O), dS = P (dP - D), dq = dS k * scale, dk = dS^T q * scale, dv = dropout(P)^T
// dO, all accumulated in f32; the products run on mma.sync m16n8k16 (mma.cuh). P is exp2f of the
// scores scaled by scale * log2(e) less log_sumexp * log2(e), as the forward computes it. Masks
// are 32-bit compares against per-tile limits, and a warp skips a tile that the causal mask hides
// from all of its rows (or keys). Two kernels, no atomics (deterministic), as the FMA backward;
// the dq kernel runs first and writes D (p.delta), which the dk/dv kernel reads:
//
// dk and dv (attentionBwdDkDvMmaBlock): one CTA of four warps takes 64 keys of one (n, h), 16 a
// warp. The CTA's K and V rows stay in shared memory; q and dO stream through it in tiles of
// kTile query rows (two buffers, cp.async, as the forward streams K and V), with the tile rows'
// D (from p.delta) and log_sumexp. The warp computes the transposed scores directly,
// S^T = k q^T (k rows as the A operand, q rows as B, read like the forward's K: by ldmatrix, two
// k steps a load), and dP^T = v dO^T alike. So its D fragments hold P^T and dS^T with keys as
// rows, and mma.cuh's layout note makes them the A operands of dv += P^T dO and dk += dS^T q
// without a transpose in registers; B comes from the dO and q rows by ldmatrix .trans, as the
// forward reads V (loadFragmentBColsX2).
//
// dq (attentionBwdDqMmaBlock): one CTA of four warps takes 64 query rows, 16 a warp, and keeps
// their q and dO as A fragments; K and V stream through shared memory in tiles of kTile keys (two
// buffers). S = q k^T and dP = dO v^T as in the forward, dS = P (dP - D) in registers, and
// dq += dS k with dS's D fragments as A and B from the K rows (ldmatrix .trans). D is summed per
// row at the start (the four lanes of a row each take a quarter of the head dim) and stored in
// p.delta for the dk/dv kernel.
//
// P and dS are rounded to bf16 (f16) for the second products, as flash attention does.
#ifndef LOOM_RUNTIME_ATTENTION_BWD_MMA_CUH
#define LOOM_RUNTIME_ATTENTION_BWD_MMA_CUH

namespace loom {

inline constexpr int kAttentionBwdMmaBlock = 64;  ///< keys (dk/dv) or query rows (dq) per CTA

/// Rows of the tiles the backward streams through shared memory (query rows for dk/dv, keys for
/// dq): 64 for head dim 64, 32 for 128, which keeps a warp's score, dP and accumulator fragments
/// within its registers.
template <int kHeadDim>
constexpr int attentionBwdMmaTile() {
  return kHeadDim <= 64 ? 64 : 32;
}

/// Shared bytes of attentionBwdDkDvMmaBlock: the CTA's K and V rows, two buffers of a q and a dO
/// tile (16-bit rows padded by 8), then two buffers of the tile rows' D and log_sumexp (f32).
template <int kHeadDim>
constexpr int attentionBwdDkDvMmaSharedBytes() {
  constexpr int kTile = attentionBwdMmaTile<kHeadDim>();
  return (2 * kAttentionBwdMmaBlock + 4 * kTile) * (kHeadDim + 8) * 2 + 4 * kTile * 4;
}

/// Shared bytes of attentionBwdDqMmaBlock: two buffers of a K and a V tile, rows padded by 8.
template <int kHeadDim>
constexpr int attentionBwdDqMmaSharedBytes() {
  return 4 * attentionBwdMmaTile<kHeadDim>() * (kHeadDim + 8) * 2;
}

namespace detail {

/// The A fragment (mma.cuh) of k step `step` of the 16 rows from `rows` on of a shared tile with
/// rows of kStride values.
template <int kStride>
__device__ __forceinline__ void loadFragmentA(unsigned (&a)[4], const unsigned short* rows,
                                              int step, int g, int t) {
  const unsigned short* r0 = rows + g * kStride + 16 * step + 2 * t;
  const unsigned short* r1 = r0 + 8 * kStride;
  a[0] = *(const unsigned*)r0;
  a[1] = *(const unsigned*)r1;
  a[2] = *(const unsigned*)(r0 + 8);
  a[3] = *(const unsigned*)(r1 + 8);
}

/// B of k steps `step` and `step` + 1 for a product with a tile's rows as columns, by one
/// ldmatrix (mma.cuh): b[0..1] for `step`, b[2..3] for the next, of columns [0, 8) from `rows`
/// on. Lane 8 i + r addresses row r, dims 16 step + 8 i (as the forward reads K).
template <int kStride>
__device__ __forceinline__ void loadFragmentBRowsX2(unsigned (&b)[4], const unsigned short* rows,
                                                    int step, int lane) {
  loom::ldmatrixX4(b, rows + (lane % 8) * kStride + 16 * step + 8 * (lane / 8));
}

/// d += a0 b[0..1] + a1 b[2..3]: two k steps, B from loadFragmentBRowsX2.
template <typename T>
__device__ __forceinline__ void mmaSteps(float (&d)[4], const unsigned (&a0)[4],
                                         const unsigned (&a1)[4], const unsigned (&b)[4]) {
  const unsigned lo[2] = {b[0], b[1]};
  const unsigned hi[2] = {b[2], b[3]};
  loom::mmaM16N8K16<T>(d, a0, lo);  // qualified: detail has the instruction's overloads
  loom::mmaM16N8K16<T>(d, a1, hi);
}

/// A fragment of 16 rows from a D fragment pair (score tiles 2c and 2c + 1), rounded to T.
template <typename T>
__device__ __forceinline__ void packFragmentA(unsigned (&a)[4], const float (&lo)[4],
                                              const float (&hi)[4]) {
  a[0] = packFloats<T>(lo[0], lo[1]);
  a[1] = packFloats<T>(lo[2], lo[3]);
  a[2] = packFloats<T>(hi[0], hi[1]);
  a[3] = packFloats<T>(hi[2], hi[3]);
}

/// Whether a (n, h) operand's rows can move as 16-byte vectors: dense E, rows and base aligned.
template <typename T>
__device__ __forceinline__ bool rowsAreVectors(const T* a, const long long* as) {
  return as[3] == 1 && as[2] % 8 == 0 && ((unsigned long long)a) % 16 == 0;
}

/// Rows [first, first + kRows) of `a` into a shared tile (see loadTileMma).
template <int kRows, int kHeadDim, int kStride, typename T>
__device__ __forceinline__ void loadRowsMma(unsigned short* at, const T* a, const long long* as,
                                            bool vec, long long first, long long limit, int tid) {
  if (vec) {
    loadTileMma<kRows, kHeadDim, kStride, true>(at, a, as[2], first, limit, tid);
  } else {
    loadTileMma<kRows, kHeadDim, kStride, false>(at, a, as, first, limit, tid);
  }
}

}  // namespace detail

/// dk and dv of keys [blockIdx.x * 64, +64) of head blockIdx.y of batch blockIdx.z, with 128
/// threads. T is __nv_bfloat16 or __half; `smem` holds attentionBwdDkDvMmaSharedBytes() bytes.
template <typename T, int kHeadDim>
__device__ __forceinline__ void attentionBwdDkDvMmaBlock(const AttentionBwdParams& p,
                                                         unsigned char* smem) {
  static_assert(kHeadDim % 16 == 0, "the head dim is whole mma k steps");
  constexpr int kTile = attentionBwdMmaTile<kHeadDim>();
  constexpr int kBlock = kAttentionBwdMmaBlock;
  constexpr int kSteps = kHeadDim / 16;
  constexpr int kOutTiles = kHeadDim / 8;
  constexpr int kScoreTiles = kTile / 8;
  constexpr int kStride = kHeadDim + 8;
  constexpr int kTileHalves = kTile * kStride;
  static_assert(kAttentionMmaThreads >= kTile, "one thread a tile row loads its D and lse");

  const int tid = (int)threadIdx.x;
  const int warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, t = lane % 4;
  const long long n = blockIdx.z, h = blockIdx.y;
  const long long bh = n * p.heads + h;
  // Plain pointers, not a structured binding: the tile loaders' lambdas capture them.
  const detail::BwdOperands<T> operands = detail::bwdOperands<T>(p, n, h);
  const T *q = operands.q, *k = operands.k, *v = operands.v;
  const T* dout = operands.dout;
  const long long first_key = (long long)blockIdx.x * kBlock;
  // This lane's two keys: g and g + 8 of the warp's 16.
  const long long key0 = first_key + warp * 16 + g;
  const long long key1 = key0 + 8;

  unsigned short* kblock = (unsigned short*)smem;
  unsigned short* vblock = kblock + kBlock * kStride;
  unsigned short* tiles = vblock + kBlock * kStride;   // two buffers of a q and a dO tile
  float* rowvals = (float*)(tiles + 4 * kTileHalves);  // two buffers of D[kTile], lse[kTile]

  const bool qvec = detail::rowsAreVectors(q, p.qs) && detail::rowsAreVectors(dout, p.dos);
  const bool kvvec = detail::rowsAreVectors(k, p.ks) && detail::rowsAreVectors(v, p.vs);
  detail::loadRowsMma<kBlock, kHeadDim, kStride>(kblock, k, p.ks, kvvec, first_key, p.keys, tid);
  detail::loadRowsMma<kBlock, kHeadDim, kStride>(vblock, v, p.vs, kvvec, first_key, p.keys, tid);

  // The q and dO tile of rows [first, first + kTile) in flight into `buffer`, and its rows' D
  // (the dq kernel's) and log_sumexp in base 2 (one thread a row, complete on return).
  const float kLog2e = 1.44269504088896341f;
  auto fill = [&](long long first, int buffer) {
    unsigned short* qt = tiles + buffer * 2 * kTileHalves;
    detail::loadRowsMma<kTile, kHeadDim, kStride>(qt, q, p.qs, qvec, first, p.rows, tid);
    detail::loadRowsMma<kTile, kHeadDim, kStride>(qt + kTileHalves, dout, p.dos, qvec, first,
                                                  p.rows, tid);
    detail::cpAsyncCommit();
    if (tid < kTile) {
      const long long row = first + tid;
      float* vals = rowvals + buffer * 2 * kTile;
      vals[tid] = row < p.rows ? p.delta[bh * p.rows + row] : 0.0f;
      vals[kTile + tid] =
          row < p.rows
              ? detail::safeLse(p.lse[n * p.lses[0] + h * p.lses[1] + row * p.lses[2]]) * kLog2e
              : __int_as_float(0x7f800000);
    }
  };
  const float scale_log2 = p.scale * kLog2e;

  float dk[kOutTiles][4], dv[kOutTiles][4];
#pragma unroll
  for (int j = 0; j < kOutTiles; ++j) {
#pragma unroll
    for (int i = 0; i < 4; ++i) dk[j][i] = dv[j][i] = 0.0f;
  }

  // Causal: query tiles wholly before the block's first key see none of its keys (a uniform
  // bound, so the syncs stay uniform).
  const long long start = p.causal ? first_key / kTile * kTile : 0;
  if (start < p.rows) {
    fill(start, 0);  // the K and V copies join the first tile's group
  } else {
    detail::cpAsyncCommit();
  }
  int buffer = 0;
  for (long long i0 = start; i0 < p.rows; i0 += kTile, buffer ^= 1) {
    if (i0 + kTile < p.rows) {
      fill(i0 + kTile, buffer ^ 1);  // the buffer the last tile's products read
      detail::cpAsyncWait<1>();
    } else {
      detail::cpAsyncWait<0>();
    }
    __syncthreads();
    const unsigned short* qt = tiles + buffer * 2 * kTileHalves;
    const unsigned short* dot = qt + kTileHalves;
    const float* dvals = rowvals + buffer * 2 * kTile;
    const float* lvals = dvals + kTile;

    // Causal: a tile whose rows all precede the warp's keys adds nothing to their dk and dv (a
    // uniform skip; the syncs stay outside it).
    if (!p.causal || i0 + kTile - 1 >= first_key + warp * 16) {
      // S^T = k q^T and dP^T = v dO^T: tile j holds rows i0 + 8 j + [0, 8); this lane has rows
      // 8 j + 2 t, + 1 of its keys g and g + 8.
      float s[kScoreTiles][4], dp[kScoreTiles][4];
#pragma unroll
      for (int j = 0; j < kScoreTiles; ++j) {
#pragma unroll
        for (int i = 0; i < 4; ++i) s[j][i] = dp[j][i] = 0.0f;
      }
#pragma unroll
      for (int st = 0; st < kSteps; st += 2) {
        unsigned ka[2][4], va[2][4];
#pragma unroll
        for (int u = 0; u < 2; ++u) {
          detail::loadFragmentA<kStride>(ka[u], kblock + warp * 16 * kStride, st + u, g, t);
          detail::loadFragmentA<kStride>(va[u], vblock + warp * 16 * kStride, st + u, g, t);
        }
#pragma unroll
        for (int j = 0; j < kScoreTiles; ++j) {
          unsigned qb[4], db[4];
          detail::loadFragmentBRowsX2<kStride>(qb, qt + 8 * j * kStride, st, lane);
          detail::loadFragmentBRowsX2<kStride>(db, dot + 8 * j * kStride, st, lane);
          detail::mmaSteps<T>(s[j], ka[0], ka[1], qb);
          detail::mmaSteps<T>(dp[j], va[0], va[1], db);
        }
      }
      // Which of the tile's rows (0 .. kTile) see a key, in 32-bit tile terms: those below
      // `rows_left`, and causally those from the key on (kTile: none; a key out of range is seen
      // by none).
      const int rows_left = (int)(p.rows - i0 < kTile ? p.rows - i0 : kTile);
      int from[2];
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const long long key = half == 0 ? key0 : key1;
        const long long d = key - i0;
        from[half] = key >= p.keys ? kTile : !p.causal || d <= 0 ? 0 : (int)(d > kTile ? kTile : d);
      }
      // s becomes dropout(P)^T (dv's operand), dp becomes dS^T = P^T (dP^T - D).
#pragma unroll
      for (int j = 0; j < kScoreTiles; ++j) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int r = 8 * j + 2 * t + (i & 1);
          const bool seen = r < rows_left && r >= from[i / 2];
          const float pij = seen ? exp2f(s[j][i] * scale_log2 - lvals[r]) : 0.0f;
          float pd = pij, dpv = dp[j][i];
          if (p.dropout && pij != 0.0f) {
            const bool keep = detail::attentionKeeps(p, bh, i0 + r, i < 2 ? key0 : key1);
            pd = keep ? pij * p.inv_keep : 0.0f;
            dpv = keep ? dpv * p.inv_keep : 0.0f;
          }
          s[j][i] = pd;
          dp[j][i] = pij == 0.0f ? 0.0f : pij * (dpv - dvals[r]);
        }
      }
      // dv += P^T dO and dk += dS^T q: row step c covers score tiles 2c and 2c + 1.
#pragma unroll
      for (int c = 0; c < kTile / 16; ++c) {
        unsigned pa[4], dsa[4];
        detail::packFragmentA<T>(pa, s[2 * c], s[2 * c + 1]);
        detail::packFragmentA<T>(dsa, dp[2 * c], dp[2 * c + 1]);
#pragma unroll
        for (int j = 0; j < kOutTiles; j += 2) {
          unsigned b[4];
          detail::loadFragmentBColsX2<kStride>(b, dot + 16 * c * kStride, 8 * j, lane);
          detail::mmaPair<T>(dv[j], dv[j + 1], pa, b);
          detail::loadFragmentBColsX2<kStride>(b, qt + 16 * c * kStride, 8 * j, lane);
          detail::mmaPair<T>(dk[j], dk[j + 1], dsa, b);
        }
      }
    }
    __syncthreads();  // the buffer is read by all before the next iteration refills it
  }
  detail::cpAsyncWait<0>();  // no copy outlives the CTA (none is pending when a tile ran)

  T* dk_out = (T*)p.dk + bh * p.keys * kHeadDim;
  T* dv_out = (T*)p.dv + bh * p.keys * kHeadDim;
#pragma unroll
  for (int j = 0; j < kOutTiles; ++j) {
    const int d = 8 * j + 2 * t;
    if (key0 < p.keys) {
      dk_out[key0 * kHeadDim + d] = fromFloat<T>(dk[j][0] * p.scale);
      dk_out[key0 * kHeadDim + d + 1] = fromFloat<T>(dk[j][1] * p.scale);
      dv_out[key0 * kHeadDim + d] = fromFloat<T>(dv[j][0]);
      dv_out[key0 * kHeadDim + d + 1] = fromFloat<T>(dv[j][1]);
    }
    if (key1 < p.keys) {
      dk_out[key1 * kHeadDim + d] = fromFloat<T>(dk[j][2] * p.scale);
      dk_out[key1 * kHeadDim + d + 1] = fromFloat<T>(dk[j][3] * p.scale);
      dv_out[key1 * kHeadDim + d] = fromFloat<T>(dv[j][2]);
      dv_out[key1 * kHeadDim + d + 1] = fromFloat<T>(dv[j][3]);
    }
  }
}

/// dq of rows [blockIdx.x * 64, +64) of head blockIdx.y of batch blockIdx.z, with 128 threads.
/// T is __nv_bfloat16 or __half; `smem` holds attentionBwdDqMmaSharedBytes() bytes.
template <typename T, int kHeadDim>
__device__ __forceinline__ void attentionBwdDqMmaBlock(const AttentionBwdParams& p,
                                                       unsigned char* smem) {
  static_assert(kHeadDim % 16 == 0, "the head dim is whole mma k steps");
  constexpr int kTile = attentionBwdMmaTile<kHeadDim>();
  constexpr int kSteps = kHeadDim / 16;
  constexpr int kOutTiles = kHeadDim / 8;
  constexpr int kScoreTiles = kTile / 8;
  constexpr int kStride = kHeadDim + 8;
  constexpr int kTileHalves = kTile * kStride;
  const float kInf = __int_as_float(0x7f800000);
  const float kLog2e = 1.44269504088896341f;

  const int tid = (int)threadIdx.x;
  const int warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, t = lane % 4;
  const long long n = blockIdx.z, h = blockIdx.y;
  const long long bh = n * p.heads + h;
  // Plain pointers, not a structured binding: the tile loaders' lambdas capture them.
  const detail::BwdOperands<T> operands = detail::bwdOperands<T>(p, n, h);
  const T *q = operands.q, *k = operands.k, *v = operands.v, *o = operands.o;
  const T* dout = operands.dout;
  // This lane's two rows: g and g + 8 of the warp's 16.
  const long long warp_row = (long long)blockIdx.x * kAttentionBwdMmaBlock + warp * 16;
  const long long row0 = (long long)blockIdx.x * kAttentionBwdMmaBlock + warp * 16 + g;
  const long long row1 = row0 + 8;

  // q and dO as A fragments (step s covers dims [16 s, 16 s + 16)), and this lane's part of
  // D = rowsum(dO * O) over the same dims.
  unsigned qa[kSteps][4], doa[kSteps][4];
  float d0 = 0.0f, d1 = 0.0f;
#pragma unroll
  for (int st = 0; st < kSteps; ++st) {
    unsigned short qb[2][4], db[2][4];
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const long long row = half == 0 ? row0 : row1;
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int d = 16 * st + 2 * t + (e & 1) + (e / 2) * 8;
        qb[half][e] = db[half][e] = 0;
        if (row < p.rows) {
          const T dov = dout[row * p.dos[2] + d * p.dos[3]];
          qb[half][e] = halfBits(q[row * p.qs[2] + d * p.qs[3]]);
          db[half][e] = halfBits(dov);
          float& dsum = half == 0 ? d0 : d1;
          dsum = fmaf(toFloat(dov), toFloat(o[row * p.os[2] + d * p.os[3]]), dsum);
        }
      }
    }
    qa[st][0] = packHalves(qb[0][0], qb[0][1]);
    qa[st][1] = packHalves(qb[1][0], qb[1][1]);
    qa[st][2] = packHalves(qb[0][2], qb[0][3]);
    qa[st][3] = packHalves(qb[1][2], qb[1][3]);
    doa[st][0] = packHalves(db[0][0], db[0][1]);
    doa[st][1] = packHalves(db[1][0], db[1][1]);
    doa[st][2] = packHalves(db[0][2], db[0][3]);
    doa[st][3] = packHalves(db[1][2], db[1][3]);
  }
#pragma unroll
  for (int w = 1; w < 4; w *= 2) {
    d0 += __shfl_xor_sync(0xffffffffu, d0, w);
    d1 += __shfl_xor_sync(0xffffffffu, d1, w);
  }
  // D for the dk/dv kernel, which runs next (one lane of the four a row has writes it).
  if (t == 0) {
    if (row0 < p.rows) p.delta[bh * p.rows + row0] = d0;
    if (row1 < p.rows) p.delta[bh * p.rows + row1] = d1;
  }
  // P = exp2(S scale log2(e) - lse log2(e)): base 2, as the forward.
  const float scale_log2 = p.scale * kLog2e;
  const float* lse = p.lse + n * p.lses[0] + h * p.lses[1];
  const float lse0 = row0 < p.rows ? detail::safeLse(lse[row0 * p.lses[2]]) * kLog2e : kInf;
  const float lse1 = row1 < p.rows ? detail::safeLse(lse[row1 * p.lses[2]]) * kLog2e : kInf;

  float dq[kOutTiles][4];
#pragma unroll
  for (int j = 0; j < kOutTiles; ++j) dq[j][0] = dq[j][1] = dq[j][2] = dq[j][3] = 0.0f;

  const bool vec = detail::rowsAreVectors(k, p.ks) && detail::rowsAreVectors(v, p.vs);
  unsigned short* tiles = (unsigned short*)smem;  // two buffers of a K and a V tile
  auto fill = [&](long long first, int buffer) {
    unsigned short* kt = tiles + buffer * 2 * kTileHalves;
    detail::loadRowsMma<kTile, kHeadDim, kStride>(kt, k, p.ks, vec, first, p.keys, tid);
    detail::loadRowsMma<kTile, kHeadDim, kStride>(kt + kTileHalves, v, p.vs, vec, first, p.keys,
                                                  tid);
    detail::cpAsyncCommit();
  };
  // Causal: keys past the CTA's last row are hidden from all of its rows.
  const long long last_row =
      (long long)blockIdx.x * kAttentionBwdMmaBlock + kAttentionBwdMmaBlock - 1;
  const long long end = p.causal && last_row + 1 < p.keys ? last_row + 1 : p.keys;
  if (end > 0) fill(0, 0);
  int buffer = 0;
  for (long long j0 = 0; j0 < end; j0 += kTile, buffer ^= 1) {
    if (j0 + kTile < end) {
      fill(j0 + kTile, buffer ^ 1);
      detail::cpAsyncWait<1>();
    } else {
      detail::cpAsyncWait<0>();
    }
    __syncthreads();
    const unsigned short* kt = tiles + buffer * 2 * kTileHalves;
    const unsigned short* vt = kt + kTileHalves;

    // Causal: a tile whose keys all follow the warp's rows adds nothing to their dq (a uniform
    // skip; the syncs stay outside it).
    if (!p.causal || j0 <= warp_row + 15) {
      // S = q k^T and dP = dO v^T: tile j holds keys j0 + 8 j + [0, 8); this lane has keys
      // 8 j + 2 t, + 1 of its rows g and g + 8.
      float s[kScoreTiles][4], dp[kScoreTiles][4];
#pragma unroll
      for (int j = 0; j < kScoreTiles; ++j) {
#pragma unroll
        for (int i = 0; i < 4; ++i) s[j][i] = dp[j][i] = 0.0f;
#pragma unroll
        for (int st = 0; st < kSteps; st += 2) {
          unsigned kb[4], vb[4];
          detail::loadFragmentBRowsX2<kStride>(kb, kt + 8 * j * kStride, st, lane);
          detail::loadFragmentBRowsX2<kStride>(vb, vt + 8 * j * kStride, st, lane);
          detail::mmaSteps<T>(s[j], qa[st], qa[st + 1], kb);
          detail::mmaSteps<T>(dp[j], doa[st], doa[st + 1], vb);
        }
      }
      // Which of the tile's keys (0 .. kTile) a row sees, in 32-bit tile terms: those below
      // `keys_left`, and causally those up to the row (-1: none; a row out of range sees none).
      const int keys_left = (int)(p.keys - j0 < kTile ? p.keys - j0 : kTile);
      int upto[2];
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const long long row = half == 0 ? row0 : row1;
        const long long d = row - j0;
        upto[half] = row >= p.rows ? -1 : !p.causal || d >= kTile ? kTile : (int)(d < 0 ? -1 : d);
      }
      // dp becomes dS = P (dP - D).
#pragma unroll
      for (int j = 0; j < kScoreTiles; ++j) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int kc = 8 * j + 2 * t + (i & 1);  // the key's column in the tile
          const bool seen = kc < keys_left && kc <= upto[i / 2];
          const float pij = seen ? exp2f(s[j][i] * scale_log2 - (i < 2 ? lse0 : lse1)) : 0.0f;
          float dpv = dp[j][i];
          if (p.dropout && pij != 0.0f) {
            dpv = detail::attentionKeeps(p, bh, i < 2 ? row0 : row1, j0 + kc) ? dpv * p.inv_keep
                                                                              : 0.0f;
          }
          dp[j][i] = pij == 0.0f ? 0.0f : pij * (dpv - (i < 2 ? d0 : d1));
        }
      }
      // dq += dS k: key step c covers score tiles 2c and 2c + 1.
#pragma unroll
      for (int c = 0; c < kTile / 16; ++c) {
        unsigned dsa[4];
        detail::packFragmentA<T>(dsa, dp[2 * c], dp[2 * c + 1]);
#pragma unroll
        for (int j = 0; j < kOutTiles; j += 2) {
          unsigned b[4];
          detail::loadFragmentBColsX2<kStride>(b, kt + 16 * c * kStride, 8 * j, lane);
          detail::mmaPair<T>(dq[j], dq[j + 1], dsa, b);
        }
      }
    }
    __syncthreads();
  }

  T* out = (T*)p.dq + bh * p.rows * kHeadDim;
#pragma unroll
  for (int j = 0; j < kOutTiles; ++j) {
    const int d = 8 * j + 2 * t;
    if (row0 < p.rows) {
      out[row0 * kHeadDim + d] = fromFloat<T>(dq[j][0] * p.scale);
      out[row0 * kHeadDim + d + 1] = fromFloat<T>(dq[j][1] * p.scale);
    }
    if (row1 < p.rows) {
      out[row1 * kHeadDim + d] = fromFloat<T>(dq[j][2] * p.scale);
      out[row1 * kHeadDim + d + 1] = fromFloat<T>(dq[j][3] * p.scale);
    }
  }
}

}  // namespace loom

#endif  // LOOM_RUNTIME_ATTENTION_BWD_MMA_CUH
