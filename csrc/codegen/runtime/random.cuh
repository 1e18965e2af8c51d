// SPDX-License-Identifier: Apache-2.0
// Device runtime: counter-based random numbers (Philox4x32-10) for RngOp.
//
// Codegen calls loom_rng_uniform / loom_rng_normal with the element's row-major linear logical
// index, so a value depends on (seed, offset, index) only, never on the thread that computes it.
// The bit rules are the reference evaluator's (include/loom/eval/philox.h): one Philox block per
// element, key (lo32(seed), hi32(seed)), counter (lo32(index), hi32(index), lo32(offset),
// hi32(offset)); `digits` is the significand width of the output dtype (53, 24, 11 or 8). The
// result is a double that codegen rounds once to the output dtype. The fma calls are explicit so
// that no compiler contracts or splits the final multiply-add differently on either backend.
#ifndef LOOM_RUNTIME_RANDOM_CUH
#define LOOM_RUNTIME_RANDOM_CUH

namespace loom {

struct Philox4 {
  unsigned int w[4];
};

__device__ __forceinline__ Philox4 philox4x32_10(unsigned long long seed, unsigned long long offset,
                                                 unsigned long long index) {
  unsigned int c0 = (unsigned int)index, c1 = (unsigned int)(index >> 32);
  unsigned int c2 = (unsigned int)offset, c3 = (unsigned int)(offset >> 32);
  unsigned int k0 = (unsigned int)seed, k1 = (unsigned int)(seed >> 32);
#pragma unroll
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    const unsigned long long p0 = (unsigned long long)0xD2511F53u * c0;
    const unsigned long long p1 = (unsigned long long)0xCD9E8D57u * c2;
    const unsigned int n0 = (unsigned int)(p1 >> 32) ^ c1 ^ k0;
    const unsigned int n2 = (unsigned int)(p0 >> 32) ^ c3 ^ k1;
    c1 = (unsigned int)p1;
    c3 = (unsigned int)p0;
    c0 = n0;
    c2 = n2;
  }
  Philox4 r;
  r.w[0] = c0;
  r.w[1] = c1;
  r.w[2] = c2;
  r.w[3] = c3;
  return r;
}

/// 53 random bits of two words, the high word's first.
__device__ __forceinline__ unsigned long long rngBits53(unsigned int hi, unsigned int lo) {
  return (((unsigned long long)hi << 32) | lo) >> 11;
}

}  // namespace loom

/// low + (high - low) * u, u in [0, 1) with `digits` random bits (exact in the output dtype).
__device__ __forceinline__ double loom_rng_uniform(unsigned long long seed,
                                                   unsigned long long offset,
                                                   unsigned long long index, int digits, double low,
                                                   double high) {
  const loom::Philox4 r = loom::philox4x32_10(seed, offset, index);
  const double u = digits == 53
                       ? (double)loom::rngBits53(r.w[0], r.w[1]) * (1.0 / 9007199254740992.0)
                       : (double)(r.w[0] >> (32 - digits)) / (double)(1ull << digits);
  return fma(high - low, u, low);
}

/// mean + std * z, z = sqrt(-2 log u1) cos(2 pi u2) (Box-Muller), u1 in (0, 1], u2 in [0, 1).
__device__ __forceinline__ double loom_rng_normal(unsigned long long seed,
                                                  unsigned long long offset,
                                                  unsigned long long index, int digits, double mean,
                                                  double std) {
  const loom::Philox4 r = loom::philox4x32_10(seed, offset, index);
  double u1, u2;
  if (digits == 53) {
    u1 = (double)(loom::rngBits53(r.w[0], r.w[1]) + 1) * (1.0 / 9007199254740992.0);
    u2 = (double)loom::rngBits53(r.w[2], r.w[3]) * (1.0 / 9007199254740992.0);
  } else {
    u1 = ((double)r.w[0] + 1.0) * (1.0 / 4294967296.0);
    u2 = (double)r.w[1] * (1.0 / 4294967296.0);
  }
  const double z = sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
  return fma(std, z, mean);
}

#endif  // LOOM_RUNTIME_RANDOM_CUH
