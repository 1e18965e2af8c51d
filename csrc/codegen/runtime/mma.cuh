// SPDX-License-Identifier: Apache-2.0
// Device runtime: one warp-wide tensor-core product, mma.sync m16n8k16 with f32 accumulation,
// for bf16 and f16 operands (sm_80 and later), and its emulation on the host backend.
//
// Each lane holds fragments in PTX's layout for this shape (the PTX ISA, "Matrix fragments for
// mma.m16n8k16 with floating point type"). With g = lane / 4 and t = lane % 4:
//   A (16 x 16, row-major), four 32-bit registers of two elements each, the lower k first:
//     a[0]: row g,     k 2t, 2t+1      a[1]: row g + 8, k 2t, 2t+1
//     a[2]: row g,     k 2t+8, 2t+9    a[3]: row g + 8, k 2t+8, 2t+9
//   B (16 x 8, "col": each register holds two k of one column), two registers:
//     b[0]: k 2t, 2t+1 of column g     b[1]: k 2t+8, 2t+9 of column g
//   C and D (16 x 8, f32), four floats:
//     c[0], c[1]: row g, columns 2t, 2t+1     c[2], c[3]: row g + 8, columns 2t, 2t+1
// So a D fragment's two halves (rows g and g + 8) are an A fragment's registers once packed:
// the attention kernel turns its score tiles into the next product's A operand that way.
//
// ldmatrixX4 loads four 8 x 8 matrices of a row-major tile in shared memory as they are: lane 8 i +
// r gives the address of row r of matrix i, and register i of lane 4 g + t receives row g, elements
// 2t and 2t + 1 of matrix i. With the rows an operand's n (K's keys in q k^T) and the columns its
// k, that is a B fragment's register (b[0] for columns k0 .. k0 + 7, b[1] for k0 + 8 ..).
//
// ldmatrixX4Trans loads B fragments of a row-major [k][n] tile in shared memory (V in P v) four
// registers at a time: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 (sm_75 and later). Lane
// 8 i + r gives the address of row r of 8 x 8 matrix i (eight 16-bit values, 16-byte aligned);
// transposed, register i of lane 4 g + t receives column g of rows 2t and 2t + 1 of matrix i, the
// lower row first: with matrix i rows k0 .. k0 + 7 and columns n0 .. n0 + 7 of the tile, that is
// b[0] (k0 = 0) or b[1] (k0 = 8) of the 16 x 8 B whose column g is n0 + g.
#ifndef LOOM_RUNTIME_MMA_CUH
#define LOOM_RUNTIME_MMA_CUH

namespace loom {

/// Two 16-bit values (`lo` at the lower k) in one register, as a fragment holds them.
__device__ __forceinline__ unsigned packHalves(unsigned short lo, unsigned short hi) {
  return (unsigned)lo | ((unsigned)hi << 16);
}

/// The 16-bit payload of a __half or __nv_bfloat16.
template <typename T>
__device__ __forceinline__ unsigned short halfBits(T v) {
  return v.__x;
}

/// Two floats rounded to T (bf16 or f16) and packed, `lo` first.
template <typename T>
__device__ __forceinline__ unsigned packFloats(float lo, float hi) {
  return packHalves(halfBits(T(lo)), halfBits(T(hi)));
}

namespace detail {

#ifdef LOOM_EMULATION
/// The 16-bit value `bits` of T as a float.
template <typename T>
inline float halfValue(unsigned short bits) {
  T v;
  v.__x = bits;
  return (float)v;
}
#endif

}  // namespace detail

namespace detail {

#ifndef LOOM_EMULATION
__device__ __forceinline__ void mmaM16N8K16(float (&d)[4], const unsigned (&a)[4],
                                            const unsigned (&b)[2], __nv_bfloat16) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
      "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
__device__ __forceinline__ void mmaM16N8K16(float (&d)[4], const unsigned (&a)[4],
                                            const unsigned (&b)[2], __half) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
      "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
#endif

}  // namespace detail

/// d += a * b for one warp: every lane of the warp calls it, with its fragments (see above).
/// T is __nv_bfloat16 or __half. Products are exact in f32 and summed in f32 (in the tensor
/// core's order on a GPU, in k order on the host backend).
template <typename T>
__device__ __forceinline__ void mmaM16N8K16(float (&d)[4], const unsigned (&a)[4],
                                            const unsigned (&b)[2]) {
#ifndef LOOM_EMULATION
  detail::mmaM16N8K16(d, a, b, T());
#else
  // Every lane gathers the whole A and B from the warp (registers as 64-bit pairs through
  // shuffles, the same layout as above), then computes its own four elements of D.
  const int lane = (int)(threadIdx.x % 32u);
  float A[16][16], B[16][8];
  const unsigned long long a01 = (unsigned long long)a[0] | ((unsigned long long)a[1] << 32);
  const unsigned long long a23 = (unsigned long long)a[2] | ((unsigned long long)a[3] << 32);
  const unsigned long long b01 = (unsigned long long)b[0] | ((unsigned long long)b[1] << 32);
  for (int src = 0; src < 32; ++src) {
    const int g = src / 4, t = src % 4;
    const unsigned long long x = __shfl_sync(0xffffffffu, a01, src);
    const unsigned long long y = __shfl_sync(0xffffffffu, a23, src);
    const unsigned long long z = __shfl_sync(0xffffffffu, b01, src);
    const unsigned regs[4] = {(unsigned)x, (unsigned)(x >> 32), (unsigned)y, (unsigned)(y >> 32)};
    for (int r = 0; r < 4; ++r) {
      const int row = g + (r % 2) * 8, k = 2 * t + (r / 2) * 8;
      A[row][k] = detail::halfValue<T>((unsigned short)(regs[r] & 0xffffu));
      A[row][k + 1] = detail::halfValue<T>((unsigned short)(regs[r] >> 16));
    }
    const unsigned bregs[2] = {(unsigned)z, (unsigned)(z >> 32)};
    for (int r = 0; r < 2; ++r) {
      const int k = 2 * t + r * 8;
      B[k][g] = detail::halfValue<T>((unsigned short)(bregs[r] & 0xffffu));
      B[k + 1][g] = detail::halfValue<T>((unsigned short)(bregs[r] >> 16));
    }
  }
  const int g = lane / 4, t = lane % 4;
  for (int i = 0; i < 4; ++i) {
    const int row = g + (i / 2) * 8, col = 2 * t + (i % 2);
    float sum = d[i];
    for (int k = 0; k < 16; ++k) sum = fmaf(A[row][k], B[k][col], sum);
    d[i] = sum;
  }
#endif
}

namespace detail {

/// Four 8 x 8 matrices of 16-bit values from shared memory into r[0..3], as they are or
/// transposed (kTrans): see the note at the top. Every lane of the warp calls it with the address
/// of its row (lane 8 i + r: row r of matrix i). The host backend shuffles each lane the row
/// addresses it reads from and reads its values as the instruction hands them out.
template <bool kTrans>
__device__ __forceinline__ void ldmatrixX4(unsigned (&r)[4], const unsigned short* row) {
#ifndef LOOM_EMULATION
  unsigned long long shared;
  asm("cvta.to.shared.u64 %0, %1;" : "=l"(shared) : "l"(row));
  if constexpr (kTrans) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"((unsigned)shared)
                 : "memory");
  } else {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"((unsigned)shared)
                 : "memory");
  }
#else
  const int lane = (int)(threadIdx.x % 32u);
  const int g = lane / 4, t = lane % 4;
  const unsigned long long mine = (unsigned long long)row;
  for (int i = 0; i < 4; ++i) {
    if constexpr (kTrans) {
      // Lane 4 g + t reads rows 2t and 2t + 1 of matrix i (lanes 8 i + 2t, + 1), column g.
      const auto* lo = (const unsigned short*)__shfl_sync(0xffffffffu, mine, 8 * i + 2 * t);
      const auto* hi = (const unsigned short*)__shfl_sync(0xffffffffu, mine, 8 * i + 2 * t + 1);
      r[i] = packHalves(lo[g], hi[g]);
    } else {
      // Lane 4 g + t reads elements 2t and 2t + 1 of row g of matrix i (lane 8 i + g).
      const auto* src = (const unsigned short*)__shfl_sync(0xffffffffu, mine, 8 * i + g);
      r[i] = packHalves(src[2 * t], src[2 * t + 1]);
    }
  }
#endif
}

}  // namespace detail

/// Four 8 x 8 matrices as they are (the note at the top): B fragments of a tile whose rows are
/// the operand's n (K in q k^T).
__device__ __forceinline__ void ldmatrixX4(unsigned (&r)[4], const unsigned short* row) {
  detail::ldmatrixX4<false>(r, row);
}

/// Four transposed 8 x 8 matrices (the note at the top): B fragments of a row-major [k][n] tile
/// (V in P v).
__device__ __forceinline__ void ldmatrixX4Trans(unsigned (&r)[4], const unsigned short* row) {
  detail::ldmatrixX4<true>(r, row);
}

}  // namespace loom

#endif  // LOOM_RUNTIME_MMA_CUH
