// SPDX-License-Identifier: Apache-2.0
// Host emulation of the CUDA device language, so kernel text written for NVRTC compiles with c++.
//
// The runtime writes this file (as loom_cuda_emulation.h) next to each kernel source and includes it
// first. Thread and block indices come from the running fiber's LoomEmuThread, reached through the
// thread-local pointer loom_emu_ctx that the scheduler sets before every switch; barriers, warp
// collectives and grid syncs call back into the scheduler through the ctx's api table. Only C++17
// and the C library are needed, so the kernel object loads in any process.
#ifndef LOOM_CUDA_EMULATION_H
#define LOOM_CUDA_EMULATION_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <cmath>
#include <limits>
#include <type_traits>
#include <utility>

#include "loom_emu_abi.h"

// ---- Qualifiers -----------------------------------------------------------------------------
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...)
#define __maxnreg__(...)
#define __constant__ static
// __restrict__ is a GNU C++ keyword already. __shared__ declarations are rewritten by the runtime
// before compilation (see docs/host-backend.md); this definition only serves leftover uses.
#define __shared__ static

#define LOOM_EMULATION 1

// ---- Thread context ---------------------------------------------------------------------------
// The running fiber's LoomEmuThread lives in a thread-local variable of the loading library, at a
// fixed offset from the thread pointer (static TLS) that the library hands over when it loads the
// object (loom_emu_bind). Reading it costs two loads, and the object has no TLS of its own: dynamic
// TLS in dlopen'ed objects is slow to reach and confuses LeakSanitizer's thread scan.
extern "C" {
extern __attribute__((visibility("hidden"))) ptrdiff_t loom_emu_ctx_offset;
}
inline __attribute__((always_inline)) LoomEmuThread* loom_emu_current() {
  return *reinterpret_cast<LoomEmuThread**>(static_cast<char*>(__builtin_thread_pointer()) +
                                            loom_emu_ctx_offset);
}
#define loom_emu_ctx (loom_emu_current())

using uint3 = LoomEmuUint3;
struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
  constexpr dim3(LoomEmuUint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator LoomEmuUint3() const { return {x, y, z}; }
};

#define threadIdx (loom_emu_ctx->thread_idx)
#define blockIdx (loom_emu_ctx->block_idx)
#define blockDim (loom_emu_ctx->block_dim)
#define gridDim (loom_emu_ctx->grid_dim)
#define warpSize 32

/// The per-block buffer behind `extern __shared__ T name[];` (the runtime rewrites such a line into
/// LOOM_DYNAMIC_SHARED(T, name)).
#define LOOM_DYNAMIC_SHARED(T, name) T* name = reinterpret_cast<T*>(loom_emu_ctx->dynamic_smem)
/// Per-block storage of `__shared__ T name DIMS;` (rewritten by the runtime likewise).
#define LOOM_STATIC_SHARED(T, name, DIMS)                                                     \
  auto& name = *reinterpret_cast<T(*) DIMS>(loom_emu_ctx->api->static_shared(                 \
      loom_emu_ctx, __COUNTER__, sizeof(T DIMS), alignof(T)))

// ---- Synchronization --------------------------------------------------------------------------
inline void __syncthreads() {
  loom_emu_ctx->api->sync_threads(loom_emu_ctx, LOOM_EMU_BARRIER_PLAIN, 0);
}
inline int __syncthreads_count(int p) {
  return loom_emu_ctx->api->sync_threads(loom_emu_ctx, LOOM_EMU_BARRIER_COUNT, p != 0);
}
inline int __syncthreads_and(int p) {
  return loom_emu_ctx->api->sync_threads(loom_emu_ctx, LOOM_EMU_BARRIER_AND, p != 0);
}
inline int __syncthreads_or(int p) {
  return loom_emu_ctx->api->sync_threads(loom_emu_ctx, LOOM_EMU_BARRIER_OR, p != 0);
}
/// Grid-wide barrier; needs a cooperative launch (HostLaunchOptions::cooperative).
inline void loom_grid_sync() { loom_emu_ctx->api->grid_sync(loom_emu_ctx); }
/// Lets other fibers run; spin loops that wait on other threads must reach a yield point.
inline void loom_yield() { loom_emu_ctx->api->yield(loom_emu_ctx); }
inline void __trap() { loom_emu_ctx->api->trap(loom_emu_ctx, "__trap() called"); }
inline void __nanosleep(unsigned) { loom_yield(); }
inline void __threadfence() {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  loom_yield();
}
inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_system() { __threadfence(); }
inline long long clock64() {
#if defined(__x86_64__) || defined(__i386__)
  return static_cast<long long>(__builtin_ia32_rdtsc());
#else
  return 0;
#endif
}
inline int clock() { return static_cast<int>(clock64()); }

namespace loom_emu {
inline void spinHint() {
  // Spin-waits on atomics must let other fibers run; yielding on every atomic would make plain
  // counters slow, so only every 16th call of a fiber yields.
  if ((++loom_emu_ctx->spin_count & 15u) == 0) loom_yield();
}
template <typename T>
inline uint64_t toBits(T v) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable<T>::value,
                "warp shuffles move values of at most 8 bytes");
  uint64_t b = 0;
  memcpy(&b, &v, sizeof(T));
  return b;
}
template <typename T>
inline T fromBits(uint64_t b) {
  T v;
  memcpy(&v, &b, sizeof(T));
  return v;
}
template <typename T>
inline T shuffle(int op, unsigned mask, T v, int param, int width) {
  return fromBits<T>(
      loom_emu_ctx->api->warp_collective(loom_emu_ctx, op, mask, toBits(v), param, width));
}
}  // namespace loom_emu

// ---- Warp collectives -------------------------------------------------------------------------
inline void __syncwarp(unsigned mask = 0xffffffffu) {
  loom_emu_ctx->api->warp_collective(loom_emu_ctx, LOOM_EMU_SYNCWARP, mask, 0, 0, 32);
}
template <typename T>
inline T __shfl_sync(unsigned mask, T v, int src_lane, int width = warpSize) {
  return loom_emu::shuffle(LOOM_EMU_SHFL_IDX, mask, v, src_lane, width);
}
template <typename T>
inline T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = warpSize) {
  return loom_emu::shuffle(LOOM_EMU_SHFL_UP, mask, v, static_cast<int>(delta), width);
}
template <typename T>
inline T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = warpSize) {
  return loom_emu::shuffle(LOOM_EMU_SHFL_DOWN, mask, v, static_cast<int>(delta), width);
}
template <typename T>
inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = warpSize) {
  return loom_emu::shuffle(LOOM_EMU_SHFL_XOR, mask, v, lane_mask, width);
}
inline unsigned __ballot_sync(unsigned mask, int p) {
  return static_cast<unsigned>(
      loom_emu_ctx->api->warp_collective(loom_emu_ctx, LOOM_EMU_BALLOT, mask, p != 0, 0, 32));
}
inline int __any_sync(unsigned mask, int p) {
  return static_cast<int>(
      loom_emu_ctx->api->warp_collective(loom_emu_ctx, LOOM_EMU_ANY, mask, p != 0, 0, 32));
}
inline int __all_sync(unsigned mask, int p) {
  return static_cast<int>(
      loom_emu_ctx->api->warp_collective(loom_emu_ctx, LOOM_EMU_ALL, mask, p != 0, 0, 32));
}
/// All lanes of the warp that exist; fibers cannot tell which lanes are converged here.
inline unsigned __activemask() {
  const LoomEmuUint3 d = loom_emu_ctx->block_dim;
  const unsigned n = d.x * d.y * d.z;
  const unsigned linear = loom_emu_ctx->thread_idx.x +
                          d.x * (loom_emu_ctx->thread_idx.y + d.y * loom_emu_ctx->thread_idx.z);
  const unsigned live = n - (linear / 32u) * 32u;
  return live >= 32u ? 0xffffffffu : ((1u << live) - 1u);
}

// ---- Atomics (host atomics; every call is also a yield point for spin loops) ------------------
namespace loom_emu {
template <typename T, typename F>
inline T casLoop(T* p, F f) {
  T old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
  while (!__atomic_compare_exchange_n(p, &old, f(old), false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
  }
  spinHint();
  return old;
}
template <typename T>
inline T fetchFloat(T* p, T v, int op) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "float atomics need 4 or 8 bytes");
  using U = typename std::conditional<sizeof(T) == 4, uint32_t, uint64_t>::type;
  U* up = reinterpret_cast<U*>(p);
  U old = __atomic_load_n(up, __ATOMIC_SEQ_CST);
  for (;;) {
    T cur = fromBits<T>(old);
    T next = op == 0 ? cur + v : (op == 1 ? (cur > v ? cur : v) : (cur < v ? cur : v));
    U nb = 0;
    memcpy(&nb, &next, sizeof(T));
    if (__atomic_compare_exchange_n(up, &old, nb, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
      spinHint();
      return cur;
    }
  }
}
}  // namespace loom_emu

#define LOOM_EMU_INT_ATOMICS(T)                                                                \
  inline T atomicAdd(T* p, T v) {                                                              \
    T r = __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);                                          \
    loom_emu::spinHint();                                                                      \
    return r;                                                                                  \
  }                                                                                            \
  inline T atomicSub(T* p, T v) {                                                              \
    T r = __atomic_fetch_sub(p, v, __ATOMIC_SEQ_CST);                                          \
    loom_emu::spinHint();                                                                      \
    return r;                                                                                  \
  }                                                                                            \
  inline T atomicAnd(T* p, T v) {                                                              \
    T r = __atomic_fetch_and(p, v, __ATOMIC_SEQ_CST);                                          \
    loom_emu::spinHint();                                                                      \
    return r;                                                                                  \
  }                                                                                            \
  inline T atomicOr(T* p, T v) {                                                               \
    T r = __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST);                                           \
    loom_emu::spinHint();                                                                      \
    return r;                                                                                  \
  }                                                                                            \
  inline T atomicXor(T* p, T v) {                                                              \
    T r = __atomic_fetch_xor(p, v, __ATOMIC_SEQ_CST);                                          \
    loom_emu::spinHint();                                                                      \
    return r;                                                                                  \
  }                                                                                            \
  inline T atomicExch(T* p, T v) {                                                             \
    T r = __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST);                                         \
    loom_emu::spinHint();                                                                      \
    return r;                                                                                  \
  }                                                                                            \
  inline T atomicMax(T* p, T v) {                                                              \
    return loom_emu::casLoop(p, [v](T o) { return o > v ? o : v; });                           \
  }                                                                                            \
  inline T atomicMin(T* p, T v) {                                                              \
    return loom_emu::casLoop(p, [v](T o) { return o < v ? o : v; });                           \
  }                                                                                            \
  inline T atomicCAS(T* p, T compare, T v) {                                                   \
    __atomic_compare_exchange_n(p, &compare, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);    \
    loom_emu::spinHint();                                                                      \
    return compare;                                                                            \
  }

LOOM_EMU_INT_ATOMICS(int)
LOOM_EMU_INT_ATOMICS(unsigned)
LOOM_EMU_INT_ATOMICS(long long)
LOOM_EMU_INT_ATOMICS(unsigned long long)
#undef LOOM_EMU_INT_ATOMICS

inline unsigned short atomicCAS(unsigned short* p, unsigned short compare, unsigned short v) {
  __atomic_compare_exchange_n(p, &compare, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  loom_emu::spinHint();
  return compare;
}
inline float atomicAdd(float* p, float v) { return loom_emu::fetchFloat(p, v, 0); }
inline double atomicAdd(double* p, double v) { return loom_emu::fetchFloat(p, v, 0); }
inline float atomicMax(float* p, float v) { return loom_emu::fetchFloat(p, v, 1); }
inline float atomicMin(float* p, float v) { return loom_emu::fetchFloat(p, v, 2); }
inline float atomicExch(float* p, float v) {
  return loom_emu::fromBits<float>(atomicExch(reinterpret_cast<unsigned*>(p),
                                              loom_emu::fromBits<unsigned>(loom_emu::toBits(v))));
}

// ---- Math -------------------------------------------------------------------------------------
// <math.h> brings expf, exp2f, logf, sqrtf, tanhf, erff, fmaxf, fminf, ... and the double forms.
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float __expf(float x) { return expf(x); }
inline float __exp10f(float x) { return powf(10.0f, x); }
inline float exp10f(float x) { return powf(10.0f, x); }
inline float __logf(float x) { return logf(x); }
inline float __log2f(float x) { return log2f(x); }
inline float __log10f(float x) { return log10f(x); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __tanf(float x) { return tanf(x); }
inline float __powf(float x, float y) { return powf(x, y); }
inline float __fdividef(float x, float y) { return x / y; }
inline float fdividef(float x, float y) { return x / y; }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fsqrt_rn(float x) { return sqrtf(x); }
inline float __fadd_rn(float x, float y) { return x + y; }
inline float __fmul_rn(float x, float y) { return x * y; }
inline float __fmaf_rn(float x, float y, float z) { return fmaf(x, y, z); }
inline float __saturatef(float x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x); }
inline float normcdff(float x) { return 0.5f * erfcf(-x * 0.70710678118654752f); }
inline double normcdf(double x) { return 0.5 * erfc(-x * 0.70710678118654752); }
// CUDA's inverse error functions, which the C library lacks: Newton's method in double from a
// closed-form first guess (the reference evaluator computes them the same way), rounded once.
namespace loom_emu {
inline double erfinvGuess(double t, double l) {  // l = log(1 - t^2), given without cancellation
  const double p = 2.0 / (3.14159265358979323846 * 0.147) + l / 2.0;
  const double x = sqrt(sqrt(p * p - l / 0.147) - p);
  return t < 0 ? -x : x;
}
inline double erfcinvD(double y);
inline double erfinvD(double y) {
  if (y != y || y < -1.0 || y > 1.0) return std::numeric_limits<double>::quiet_NaN();
  if (y == 1.0 || y == -1.0) return y * std::numeric_limits<double>::infinity();
  if (y == 0.0) return y;
  if (fabs(y) > 0.5) return y > 0 ? erfcinvD(1.0 - y) : -erfcinvD(1.0 + y);
  double x = erfinvGuess(y, log1p(-y * y));
  for (int i = 0; i < 8; ++i) {
    const double step = (erf(x) - y) / (1.1283791670955126 * exp(-x * x));
    x -= step;
    if (fabs(step) <= 1e-17 * fabs(x)) break;
  }
  return x;
}
inline double erfcinvD(double y) {
  if (y != y || y < 0.0 || y > 2.0) return std::numeric_limits<double>::quiet_NaN();
  if (y == 0.0) return std::numeric_limits<double>::infinity();
  if (y == 2.0) return -std::numeric_limits<double>::infinity();
  if (y > 1.0) return -erfcinvD(2.0 - y);
  if (y >= 0.5) return erfinvD(1.0 - y);
  double x = erfinvGuess(1.0, log(y * (2.0 - y)));
  const double target = log(y);
  for (int i = 0; i < 12; ++i) {
    const double e = erfc(x);
    const double step = (log(e) - target) / (-1.1283791670955126 * exp(-x * x) / e);
    x -= step;
    if (fabs(step) <= 1e-17 * fabs(x)) break;
  }
  return x;
}
}  // namespace loom_emu
inline float erfinvf(float x) { return float(loom_emu::erfinvD(x)); }
inline double erfinv(double x) { return loom_emu::erfinvD(x); }
inline float erfcinvf(float x) { return float(loom_emu::erfcinvD(x)); }
inline double erfcinv(double x) { return loom_emu::erfcinvD(x); }
// CUDA's erfcx (exp(x^2) * erfc(x)), which the C library lacks: in double as the reference
// evaluator computes it (eval/element_ops.cpp), rounded once.
namespace loom_emu {
inline double erfcxD(double x) {
  if (x != x) return x;
  if (x > 10.0) {  // the continued fraction, from its tail
    if (x > 1.7976931348623157e308) return 0.0;
    double t = x;
    for (int k = 40; k >= 1; --k) t = x + 0.5 * k / t;
    return 0.56418958354775628695 / t;  // 1 / sqrt(pi)
  }
  if (x < -27.0) return std::numeric_limits<double>::infinity();  // 2 e^(x^2) overflows
  const double hi = x * x;
  const double lo = fma(x, x, -hi);  // x^2 = hi + lo exactly
  const double exp_x2 = exp(hi) * (1.0 + lo);
  if (x >= 0.0) return exp_x2 * erfc(x);
  return 2.0 * exp_x2 - erfcxD(-x);
}
}  // namespace loom_emu
inline float erfcxf(float x) { return float(loom_emu::erfcxD(x)); }
inline double erfcx(double x) { return loom_emu::erfcxD(x); }
inline float __int_as_float(int x) { return loom_emu::fromBits<float>(loom_emu::toBits(x)); }
inline int __float_as_int(float x) { return loom_emu::fromBits<int>(loom_emu::toBits(x)); }
inline unsigned __float_as_uint(float x) { return loom_emu::fromBits<unsigned>(loom_emu::toBits(x)); }
inline float __uint_as_float(unsigned x) { return loom_emu::fromBits<float>(loom_emu::toBits(x)); }
inline long long __double_as_longlong(double x) {
  return loom_emu::fromBits<long long>(loom_emu::toBits(x));
}
inline double __longlong_as_double(long long x) {
  return loom_emu::fromBits<double>(loom_emu::toBits(x));
}
// Float-to-integer conversions saturate and give 0 for NaN, as CUDA's do (a plain static_cast is
// undefined there).
namespace loom_emu {
template <typename I, typename F>
inline I saturatingInt(F x) {
  if (x != x) return 0;
  constexpr F top = static_cast<F>(std::numeric_limits<I>::max()) + F(1);  // 2^31 or 2^63, exact
  if (x >= top) return std::numeric_limits<I>::max();
  if (x < -top) return std::numeric_limits<I>::min();
  return static_cast<I>(x);
}
}  // namespace loom_emu
inline int __float2int_rn(float x) { return loom_emu::saturatingInt<int>(nearbyintf(x)); }
inline int __float2int_rz(float x) { return loom_emu::saturatingInt<int>(x); }
inline long long __float2ll_rz(float x) { return loom_emu::saturatingInt<long long>(x); }
inline int __double2int_rz(double x) { return loom_emu::saturatingInt<int>(x); }
inline long long __double2ll_rz(double x) { return loom_emu::saturatingInt<long long>(x); }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(static_cast<unsigned>(x)); }
inline int __clzll(long long x) {
  return x == 0 ? 64 : __builtin_clzll(static_cast<unsigned long long>(x));
}
inline int __ffs(int x) { return __builtin_ffs(x); }
inline unsigned __brev(unsigned x) {
  unsigned r = 0;
  for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i);
  return r;
}
inline unsigned __umulhi(unsigned a, unsigned b) {
  return static_cast<unsigned>((static_cast<unsigned long long>(a) * b) >> 32);
}
inline int __mulhi(int a, int b) {
  return static_cast<int>((static_cast<long long>(a) * b) >> 32);
}
template <typename T>
inline T __ldg(const T* p) {
  return *p;
}
// CUDA offers unqualified min/max overloads for arithmetic types.
template <typename A, typename B>
inline auto min(A a, B b) -> typename std::common_type<A, B>::type {
  return b < a ? b : a;
}
template <typename A, typename B>
inline auto max(A a, B b) -> typename std::common_type<A, B>::type {
  return a < b ? b : a;
}

// ---- half and bfloat16 (conversions round to nearest, ties to even) ---------------------------
namespace loom_emu {
inline unsigned short floatToHalf(float f) {
  const uint32_t x = fromBits<uint32_t>(toBits(f));
  const unsigned short sign = static_cast<unsigned short>((x >> 16) & 0x8000u);
  const uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) return sign | (ax > 0x7f800000u ? 0x7e00u : 0x7c00u);
  if (ax >= 0x477ff000u) return sign | 0x7c00u;  // rounds past 65504
  if (ax < 0x38800000u) {
    // Half subnormal: the value times 2^24 is the mantissa; scaling by a power of two is exact and
    // nearbyintf rounds ties to even in the default rounding mode.
    return sign | static_cast<unsigned short>(nearbyintf(fromBits<float>(ax) * 16777216.0f));
  }
  const uint32_t rounded = ax + 0xfffu + ((ax >> 13) & 1u) - (112u << 23);
  return sign | static_cast<unsigned short>(rounded >> 13);
}
inline float halfToFloat(unsigned short h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    const float v = static_cast<float>(mant) * 5.9604644775390625e-8f;  // 2^-24
    return fromBits<float>(toBits(v) | sign);
  }
  if (exp == 31) return fromBits<float>(sign | 0x7f800000u | (mant << 13));
  return fromBits<float>(sign | ((exp + 112u) << 23) | (mant << 13));
}
inline unsigned short floatToBFloat16(float f) {
  const uint32_t x = fromBits<uint32_t>(toBits(f));
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<unsigned short>((x >> 16) | 0x40u);
  return static_cast<unsigned short>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}
inline float bfloat16ToFloat(unsigned short b) {
  return fromBits<float>(static_cast<uint32_t>(b) << 16);
}
}  // namespace loom_emu

// Arithmetic on these types goes through the implicit float conversion, which avoids ambiguous
// overloads; assigning a float back rounds to nearest even.
struct __half {
  unsigned short __x;
  __half() = default;
  __half(float f) : __x(loom_emu::floatToHalf(f)) {}
  __half(double d) : __x(loom_emu::floatToHalf(static_cast<float>(d))) {}
  __half(int i) : __x(loom_emu::floatToHalf(static_cast<float>(i))) {}
  operator float() const { return loom_emu::halfToFloat(__x); }
};
struct __nv_bfloat16 {
  unsigned short __x;
  __nv_bfloat16() = default;
  __nv_bfloat16(float f) : __x(loom_emu::floatToBFloat16(f)) {}
  __nv_bfloat16(double d) : __x(loom_emu::floatToBFloat16(static_cast<float>(d))) {}
  __nv_bfloat16(int i) : __x(loom_emu::floatToBFloat16(static_cast<float>(i))) {}
  operator float() const { return loom_emu::bfloat16ToFloat(__x); }
};
using half = __half;
using nv_bfloat16 = __nv_bfloat16;

inline __half __float2half(float f) { return __half(f); }
inline __half __float2half_rn(float f) { return __half(f); }
inline float __half2float(__half h) { return static_cast<float>(h); }
inline __half __ushort_as_half(unsigned short b) {
  __half h;
  h.__x = b;
  return h;
}
inline unsigned short __half_as_ushort(__half h) { return h.__x; }
inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16(f); }
inline float __bfloat162float(__nv_bfloat16 b) { return static_cast<float>(b); }
inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short b) {
  __nv_bfloat16 h;
  h.__x = b;
  return h;
}
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 b) { return b.__x; }
inline __half __hadd(__half a, __half b) { return __half(float(a) + float(b)); }
inline __half __hmul(__half a, __half b) { return __half(float(a) * float(b)); }
inline __half __hsub(__half a, __half b) { return __half(float(a) - float(b)); }
inline __half __hdiv(__half a, __half b) { return __half(float(a) / float(b)); }

// ---- Kernel entry -----------------------------------------------------------------------------
namespace loom_emu {
// The runtime's trampoline calls a kernel with CUDA's argument convention: args[i] points at the
// value of parameter i. The parameter types come from the kernel's own signature by deduction.
template <typename... P, size_t... I>
inline void invokeImpl(void (*kernel)(P...), void** args, std::index_sequence<I...>) {
  kernel(*static_cast<typename std::remove_reference<P>::type*>(args[I])...);
}
template <typename... P>
inline void invoke(void (*kernel)(P...), void** args) {
  invokeImpl(kernel, args, std::index_sequence_for<P...>{});
}
}  // namespace loom_emu

#endif  // LOOM_CUDA_EMULATION_H
