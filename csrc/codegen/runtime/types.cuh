// SPDX-License-Identifier: Apache-2.0
// Device runtime: kernel parameter types (Tensor, Array), half/bfloat16 and 8-bit float
// conversions.
//
// This file and the other runtime files are concatenated into one text (see
// runtimeLibrarySource()) that codegen puts in front of every generated kernel. The same text is
// compiled by NVRTC and, on the host backend, by c++ against the CUDA emulation header, which
// defines LOOM_EMULATION. Rules: C++17, no headers, no static shared memory, inline PTX only
// where the emulation provides the same function, and every thread reaches every barrier.
#ifndef LOOM_RUNTIME_TYPES_CUH
#define LOOM_RUNTIME_TYPES_CUH

namespace loom {

/// 64-bit index type of generated code (int32 is used when lowering proves the sizes allow it).
using int64 = long long;

/// Lanes per warp as a compile-time constant (`warpSize` is not a constant expression in CUDA).
constexpr int kWarpSize = 32;

/// A tensor kernel parameter: the data pointer and the logical sizes and strides, in elements.
///
/// Layout (the executor packs this struct on the host; it is standard-layout, no padding inside):
///   offset 0                          T* data            8 bytes
///   offset 8                          IndexT size[N]     N * sizeof(IndexT) bytes
///   offset 8 + N * sizeof(IndexT)     IndexT stride[N]   N * sizeof(IndexT) bytes
/// sizeof = 8 + 2 * N * sizeof(IndexT) rounded up to 8, alignof = 8. IndexT is `long long`
/// (default) or `int`. A rank-0 tensor (Tensor<T, 0>) is the data pointer alone (8 bytes).
/// Strides may be 0 (broadcast) and need not be sorted; sizes are those of the logical domain.
template <typename T, int N, typename IndexT = int64>
struct Tensor {
  T* data;
  IndexT size[N];
  IndexT stride[N];

  __device__ __forceinline__ T& operator[](IndexT linear) const { return data[linear]; }
};

template <typename T, typename IndexT>
struct Tensor<T, 0, IndexT> {
  T* data;

  __device__ __forceinline__ T& operator[](IndexT linear) const { return data[linear]; }
};

/// N values of T in registers, aligned to their total size when that is a power of two of at most
/// 16 bytes, so that a load or store of the whole Array is one vector instruction (LDG.128 for 16
/// bytes). Used for vectorized global accesses and for unrolled register buffers.
template <typename T, int N>
struct alignas((sizeof(T) * N) <= 16 && ((sizeof(T) * N) & (sizeof(T) * N - 1)) == 0
                   ? sizeof(T) * N
                   : alignof(T)) Array {
  T val[N];

  __device__ __forceinline__ T& operator[](int i) { return val[i]; }
  __device__ __forceinline__ const T& operator[](int i) const { return val[i]; }
  __device__ __forceinline__ void fill(T v) {
#pragma unroll
    for (int i = 0; i < N; ++i) val[i] = v;
  }
};

/// How many elements `p` lies past the last boundary of N elements: (address / sizeof(T)) mod
/// N, N a power of two. Peeled vector rows rotate a row by its start's and take the vector path
/// where it is 0 (lowering, LowerOptions::peelVectorRows).
template <int N, typename T>
__device__ __forceinline__ int misalignment(const T* p) {
  static_assert(N > 0 && (N & (N - 1)) == 0, "misalignment is asked of a power of two");
  return int((reinterpret_cast<unsigned long long>(p) / sizeof(T)) & (unsigned long long)(N - 1));
}

namespace detail {
// A vector access at an address its size does not divide faults on the GPU
// (CUDA_ERROR_MISALIGNED_ADDRESS); the host's loads would not, so the emulation traps instead
// and host-backend tests see what the GPU would.
template <int Bytes>
__device__ __forceinline__ void checkVectorAlignment(const void* p) {
#ifdef LOOM_EMULATION
  if (reinterpret_cast<unsigned long long>(p) % Bytes != 0) {
    loom_emu_ctx->api->trap(loom_emu_ctx,
                            "misaligned vector access (a GPU faults with "
                            "CUDA_ERROR_MISALIGNED_ADDRESS)");
  }
#else
  (void)p;
#endif
}
}  // namespace detail

/// Loads N consecutive elements at `src` as one access. `src` must be aligned to N * sizeof(T)
/// (the executor checks vectorized inputs; lowering aligns the index to N, or checks the address
/// first in a peeled row).
template <typename T, int N>
__device__ __forceinline__ void loadVector(Array<T, N>& dst, const T* src) {
  static_assert(sizeof(T) * N <= 16 && ((sizeof(T) * N) & (sizeof(T) * N - 1)) == 0,
                "vector accesses move 1, 2, 4, 8 or 16 bytes");
  detail::checkVectorAlignment<int(sizeof(T) * N)>(src);
  dst = *reinterpret_cast<const Array<T, N>*>(src);
}

/// Stores N consecutive elements at `dst` as one access; alignment as for loadVector.
template <typename T, int N>
__device__ __forceinline__ void storeVector(T* dst, const Array<T, N>& src) {
  static_assert(sizeof(T) * N <= 16 && ((sizeof(T) * N) & (sizeof(T) * N - 1)) == 0,
                "vector accesses move 1, 2, 4, 8 or 16 bytes");
  detail::checkVectorAlignment<int(sizeof(T) * N)>(dst);
  *reinterpret_cast<Array<T, N>*>(dst) = src;
}

}  // namespace loom

// ---- cache hints on fusion inputs and outputs ------------------------------------------------
// Codegen reads fusion-input parameters through loadInput/loadVectorInput and writes fusion-output
// parameters through storeOutput/storeVectorOutput; every other global access (intermediates a
// kernel writes and reads back) stays plain. The hints are chosen at compile time, so they can be
// A/B tested on a GPU without a rebuild: LOOM_NVRTC_OPTIONS="-DLOOM_INPUT_LOAD_HINT=2".
//   LOOM_INPUT_LOAD_HINT   0 plain C++ load (default)     1 ld.global.nc (read-only path, __ldg)
//                          2 ld.global.cs (evict first)   3 ld.global.L1::no_allocate
//                          4 ld.global.nc.L1::no_allocate 5 ld.global.L1::evict_first
//                          6 ld.global.L1::evict_last
//   LOOM_OUTPUT_STORE_HINT 0 plain C++ store (default)    1 st.global.cs (streaming)
//                          2 st.global.L1::no_allocate
// Hinted accesses exist for 2-, 4-, 8- and 16-byte scalars and vectors; 1-byte ones (bool) and the
// host backend's emulation (LOOM_EMULATION) always use plain accesses. `.nc` is only correct
// because fusion inputs are never written by the kernel that reads them (codegen gives the hint
// to no parameter that is also an output).
#ifndef LOOM_INPUT_LOAD_HINT
#define LOOM_INPUT_LOAD_HINT 0
#endif
#ifndef LOOM_OUTPUT_STORE_HINT
#define LOOM_OUTPUT_STORE_HINT 0
#endif

#if LOOM_INPUT_LOAD_HINT == 0 || defined(LOOM_EMULATION)
#define LOOM_LOAD_HINTED 0
#else
#define LOOM_LOAD_HINTED 1
#if LOOM_INPUT_LOAD_HINT == 1
#define LOOM_LOAD_OP "ld.global.nc"
#elif LOOM_INPUT_LOAD_HINT == 2
#define LOOM_LOAD_OP "ld.global.cs"
#elif LOOM_INPUT_LOAD_HINT == 3
#define LOOM_LOAD_OP "ld.global.L1::no_allocate"
#elif LOOM_INPUT_LOAD_HINT == 4
#define LOOM_LOAD_OP "ld.global.nc.L1::no_allocate"
#elif LOOM_INPUT_LOAD_HINT == 5
#define LOOM_LOAD_OP "ld.global.L1::evict_first"
#elif LOOM_INPUT_LOAD_HINT == 6
#define LOOM_LOAD_OP "ld.global.L1::evict_last"
#else
#error "LOOM_INPUT_LOAD_HINT must be 0 to 6"
#endif
#endif

#if LOOM_OUTPUT_STORE_HINT == 0 || defined(LOOM_EMULATION)
#define LOOM_STORE_HINTED 0
#else
#define LOOM_STORE_HINTED 1
#if LOOM_OUTPUT_STORE_HINT == 1
#define LOOM_STORE_OP "st.global.cs"
#elif LOOM_OUTPUT_STORE_HINT == 2
#define LOOM_STORE_OP "st.global.L1::no_allocate"
#else
#error "LOOM_OUTPUT_STORE_HINT must be 0, 1 or 2"
#endif
#endif

namespace loom {
namespace detail {

#if LOOM_LOAD_HINTED
// Bytes at `src` through the hinted load into `dst` (a register object of that size). Not
// volatile and without a memory clobber, like __ldg: inputs are not written during the kernel,
// so the compiler may schedule these loads freely.
template <int Bytes>
__device__ __forceinline__ void hintedLoad(void* dst, const void* src) {
  if constexpr (Bytes == 16) {
    unsigned int* d = static_cast<unsigned int*>(dst);
    asm(LOOM_LOAD_OP ".v4.u32 {%0, %1, %2, %3}, [%4];"
        : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
        : "l"(src));
  } else if constexpr (Bytes == 8) {
    unsigned long long* d = static_cast<unsigned long long*>(dst);
    asm(LOOM_LOAD_OP ".u64 %0, [%1];" : "=l"(d[0]) : "l"(src));
  } else if constexpr (Bytes == 4) {
    unsigned int* d = static_cast<unsigned int*>(dst);
    asm(LOOM_LOAD_OP ".u32 %0, [%1];" : "=r"(d[0]) : "l"(src));
  } else if constexpr (Bytes == 2) {
    unsigned short* d = static_cast<unsigned short*>(dst);
    asm(LOOM_LOAD_OP ".u16 %0, [%1];" : "=h"(d[0]) : "l"(src));
  } else {
    static_assert(Bytes == 2, "hinted accesses move 2, 4, 8 or 16 bytes");
  }
}
#endif

#if LOOM_STORE_HINTED
// `src` (a register object of Bytes bytes) to `dst` through the hinted store. Volatile with a
// memory clobber so it stays ordered with later plain reads of the same output.
template <int Bytes>
__device__ __forceinline__ void hintedStore(void* dst, const void* src) {
  if constexpr (Bytes == 16) {
    const unsigned int* s = static_cast<const unsigned int*>(src);
    asm volatile(LOOM_STORE_OP ".v4.u32 [%0], {%1, %2, %3, %4};"
                 :
                 : "l"(dst), "r"(s[0]), "r"(s[1]), "r"(s[2]), "r"(s[3])
                 : "memory");
  } else if constexpr (Bytes == 8) {
    const unsigned long long* s = static_cast<const unsigned long long*>(src);
    asm volatile(LOOM_STORE_OP ".u64 [%0], %1;" : : "l"(dst), "l"(s[0]) : "memory");
  } else if constexpr (Bytes == 4) {
    const unsigned int* s = static_cast<const unsigned int*>(src);
    asm volatile(LOOM_STORE_OP ".u32 [%0], %1;" : : "l"(dst), "r"(s[0]) : "memory");
  } else if constexpr (Bytes == 2) {
    const unsigned short* s = static_cast<const unsigned short*>(src);
    asm volatile(LOOM_STORE_OP ".u16 [%0], %1;" : : "l"(dst), "h"(s[0]) : "memory");
  } else {
    static_assert(Bytes == 2, "hinted accesses move 2, 4, 8 or 16 bytes");
  }
}
#endif

}  // namespace detail

/// `*src` for a fusion-input parameter, through LOOM_INPUT_LOAD_HINT's load.
template <typename T>
__device__ __forceinline__ T loadInput(const T* src) {
#if LOOM_LOAD_HINTED
  if constexpr (sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8) {
    T v;
    detail::hintedLoad<int(sizeof(T))>(&v, src);
    return v;
  }
#endif
  return *src;
}

/// loadVector for a fusion-input parameter, through LOOM_INPUT_LOAD_HINT's load.
template <typename T, int N>
__device__ __forceinline__ void loadVectorInput(Array<T, N>& dst, const T* src) {
  static_assert(sizeof(T) * N <= 16 && ((sizeof(T) * N) & (sizeof(T) * N - 1)) == 0,
                "vector accesses move 1, 2, 4, 8 or 16 bytes");
#if LOOM_LOAD_HINTED
  if constexpr (sizeof(T) * N >= 2) {
    detail::hintedLoad<int(sizeof(T) * N)>(&dst, src);
    return;
  }
#endif
  loadVector(dst, src);
}

/// A bool of a fusion-input parameter. Its byte comes from the caller and may be any value (a
/// uint8 tensor viewed as bool): any non-zero byte is true, as in torch. Reading it as a C++ bool
/// would be undefined for bytes other than 0 and 1 (the compiler may use the byte as the value).
__device__ __forceinline__ bool loadBoolInput(const bool* src) {
  return *reinterpret_cast<const unsigned char*>(src) != 0;
}

/// loadVector of bools from a fusion-input parameter, each byte read as loadBoolInput does.
template <int N>
__device__ __forceinline__ void loadBoolVectorInput(Array<bool, N>& dst, const bool* src) {
  static_assert(N <= 16 && (N & (N - 1)) == 0, "vector accesses move 1, 2, 4, 8 or 16 bytes");
  Array<unsigned char, N> bytes;
  loadVector(bytes, reinterpret_cast<const unsigned char*>(src));
#pragma unroll
  for (int i = 0; i < N; ++i) dst[i] = bytes[i] != 0;
}

/// `*dst = v` for a fusion-output parameter, through LOOM_OUTPUT_STORE_HINT's store.
template <typename T>
__device__ __forceinline__ void storeOutput(T* dst, T v) {
#if LOOM_STORE_HINTED
  if constexpr (sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8) {
    detail::hintedStore<int(sizeof(T))>(dst, &v);
    return;
  }
#endif
  *dst = v;
}

/// storeVector for a fusion-output parameter, through LOOM_OUTPUT_STORE_HINT's store.
template <typename T, int N>
__device__ __forceinline__ void storeVectorOutput(T* dst, const Array<T, N>& src) {
  static_assert(sizeof(T) * N <= 16 && ((sizeof(T) * N) & (sizeof(T) * N - 1)) == 0,
                "vector accesses move 1, 2, 4, 8 or 16 bytes");
#if LOOM_STORE_HINTED
  if constexpr (sizeof(T) * N >= 2) {
    detail::hintedStore<int(sizeof(T) * N)>(dst, &src);
    return;
  }
#endif
  storeVector(dst, src);
}

}  // namespace loom

// ---- half and bfloat16 -------------------------------------------------------------------------
// The emulation header defines __half and __nv_bfloat16 (a 16-bit payload `__x`, implicit
// conversion to float, construction from float rounding to nearest even) with __float2half,
// __half2float, __float2bfloat16 and __bfloat162float. Under NVRTC we define the same small
// interface here instead of including cuda_fp16.h, so both backends see identical semantics:
// arithmetic on these types always goes through float.
#ifndef LOOM_EMULATION
namespace loom::detail {
// cvt rounds to nearest even, like the emulation's bit-exact conversions.
__device__ __forceinline__ unsigned short floatToHalfBits(float f) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
// Widening conversions are volatile so the compiler recomputes them at each use instead of
// merging them (CSE): a persistent 16-bit row then stays packed two per register across a block
// reduction rather than widened to 32-bit floats (the normalization scheduler's projected buffers).
__device__ __forceinline__ float halfBitsToFloat(unsigned short h) {
  float f;
  asm volatile("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
__device__ __forceinline__ unsigned short floatToBFloat16Bits(float f) {
  unsigned short h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
__device__ __forceinline__ float bfloat16BitsToFloat(unsigned short b) {
  float f;
  asm volatile("{ .reg .b32 t; cvt.u32.u16 t, %1; shl.b32 %0, t, 16; }" : "=f"(f) : "h"(b));
  return f;
}
}  // namespace loom::detail

struct alignas(2) __half {
  unsigned short __x;
  __half() = default;
  __device__ __forceinline__ __half(float f) : __x(loom::detail::floatToHalfBits(f)) {}
  __device__ __forceinline__ __half(double d)
      : __x(loom::detail::floatToHalfBits(static_cast<float>(d))) {}
  __device__ __forceinline__ __half(int i)
      : __x(loom::detail::floatToHalfBits(static_cast<float>(i))) {}
  __device__ __forceinline__ operator float() const { return loom::detail::halfBitsToFloat(__x); }
};
struct alignas(2) __nv_bfloat16 {
  unsigned short __x;
  __nv_bfloat16() = default;
  __device__ __forceinline__ __nv_bfloat16(float f) : __x(loom::detail::floatToBFloat16Bits(f)) {}
  __device__ __forceinline__ __nv_bfloat16(double d)
      : __x(loom::detail::floatToBFloat16Bits(static_cast<float>(d))) {}
  __device__ __forceinline__ __nv_bfloat16(int i)
      : __x(loom::detail::floatToBFloat16Bits(static_cast<float>(i))) {}
  __device__ __forceinline__ operator float() const {
    return loom::detail::bfloat16BitsToFloat(__x);
  }
};
using half = __half;
using nv_bfloat16 = __nv_bfloat16;

__device__ __forceinline__ __half __float2half(float f) { return __half(f); }
__device__ __forceinline__ float __half2float(__half h) { return static_cast<float>(h); }
__device__ __forceinline__ __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }
__device__ __forceinline__ float __bfloat162float(__nv_bfloat16 b) { return static_cast<float>(b); }
#endif  // LOOM_EMULATION

namespace loom {

/// `d` rounded to float with round-to-odd (toward zero, the last bit set when bits were dropped):
/// rounding that float to a 16-bit type gives what rounding `d` itself once would, where two
/// roundings to nearest could land on the other side of a tie. Casts of doubles and integers to
/// the 16-bit types go through it (the reference rounds once).
__device__ __forceinline__ float roundToOddFloat(double d) {
  const float f = static_cast<float>(d);
  if (static_cast<double>(f) == d || f != f) return f;
  unsigned bits = __float_as_uint(f);
  if (fabs(static_cast<double>(f)) > fabs(d)) bits -= 1u;  // rounded away from zero: step back
  return __uint_as_float(bits | 1u);
}

/// Float to integer casts: truncate toward zero and saturate (CUDA's _rz intrinsics do), NaN
/// giving 0 (the intrinsics give the most negative value for NaN on the GPU).
__device__ __forceinline__ int truncToInt32(float x) { return x != x ? 0 : __float2int_rz(x); }
__device__ __forceinline__ int truncToInt32(double x) { return x != x ? 0 : __double2int_rz(x); }
__device__ __forceinline__ long long truncToInt64(float x) {
  return x != x ? 0 : __float2ll_rz(x);
}
__device__ __forceinline__ long long truncToInt64(double x) {
  return x != x ? 0 : __double2ll_rz(x);
}

/// Float to UInt64: [2^63, 2^64) converts exactly (through the signed conversion of x - 2^63,
/// which is exact there), above saturates; below 2^63 as truncToInt64, wrapped (-1.0 gives
/// 2^64 - 1, as torch on the CPU). The narrower integer types take truncToInt64 and wrap by
/// the static_cast that follows it (data_type.h, floatToInteger: the same rule).
__device__ __forceinline__ unsigned long long truncToUInt64(double x) {
  if (x >= 9223372036854775808.0) {
    if (x >= 18446744073709551616.0) return ~0ULL;
    return static_cast<unsigned long long>(__double2ll_rz(x - 9223372036854775808.0)) +
           9223372036854775808ULL;
  }
  return static_cast<unsigned long long>(truncToInt64(x));
}
__device__ __forceinline__ unsigned long long truncToUInt64(float x) {
  return truncToUInt64(static_cast<double>(x));
}

// ---- the 8-bit floats ---------------------------------------------------------------------------
// Float8_e4m3fn and Float8_e5m2 (torch.float8_e4m3fn / float8_e5m2) are one byte with torch's
// conversions, bit for bit, on both backends (the host's reference: loom/tensor/float8.h):
// round to nearest even; e4m3fn saturates to +-448 (infinities too) and keeps NaN; e5m2 gives
// infinity from 61440 up and NaN for NaN; signs kept. The conversions are integer and float
// arithmetic that NVRTC and the host compile alike (cuda_fp8.h is not needed; its
// __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3) agrees for e4m3fn, but its e5m2 with
// __NV_SATFINITE would not give torch's infinities).
namespace detail {
__device__ __forceinline__ unsigned char floatToFloat8Bits(float f, bool e4m3) {
  unsigned u = __float_as_uint(f);
  const unsigned char sign = static_cast<unsigned char>((u >> 24) & 0x80u);
  u &= 0x7fffffffu;
  if (e4m3) {
    if (u > 0x7f800000u) return sign | 0x7f;   // NaN
    if (u >= 0x43e00000u) return sign | 0x7e;  // |f| >= 448, infinity included: saturates
    if (u < 0x3c800000u) {
      // Below 2^-6, the subnormals (quantum 2^-9): adding 2^14, whose float quantum is 2^-9,
      // rounds |f| to that quantum (ties to even) and leaves the count in the low bits.
      return sign | static_cast<unsigned char>(
                        __float_as_uint(__uint_as_float(u) + 16384.0f) - 0x46800000u);
    }
    u += 0x7ffffu + ((u >> 20) & 1u);  // ties to even at bit 20
    return sign | static_cast<unsigned char>((u >> 20) - 960u);  // rebias 127 -> 7
  }
  if (u > 0x7f800000u) return sign | 0x7f;   // NaN
  if (u >= 0x47800000u) return sign | 0x7c;  // |f| >= 65536: infinity
  if (u < 0x38800000u) {
    // Below 2^-14, the subnormals (quantum 2^-16): 128's float quantum is 2^-16.
    return sign | static_cast<unsigned char>(
                      __float_as_uint(__uint_as_float(u) + 128.0f) - 0x43000000u);
  }
  u += 0xfffffu + ((u >> 21) & 1u);  // ties to even at bit 21; past 57344 it carries into inf
  return sign | static_cast<unsigned char>((u >> 21) - 448u);  // rebias 127 -> 15
}
__device__ __forceinline__ float float8BitsToFloat(unsigned char b, bool e4m3) {
  const unsigned sign = (static_cast<unsigned>(b) & 0x80u) << 24;
  const unsigned mag = static_cast<unsigned>(b) & 0x7fu;
  const int mbits = e4m3 ? 3 : 2;
  const unsigned e = mag >> mbits;
  const unsigned m = mag & ((1u << mbits) - 1u);
  unsigned bits;
  if (e4m3 && mag == 0x7fu) {
    bits = 0x7fc00000u;
  } else if (!e4m3 && e == 31u) {
    bits = m == 0u ? 0x7f800000u : 0x7fc00000u;
  } else if (e == 0u) {
    bits = __float_as_uint(static_cast<float>(m) * (e4m3 ? 0x1p-9f : 0x1p-16f));
  } else {
    bits = ((e + (e4m3 ? 120u : 112u)) << 23) | (m << (23 - mbits));
  }
  return __uint_as_float(bits | sign);
}
}  // namespace detail

struct alignas(1) Float8_e4m3fn {
  unsigned char __x;
  Float8_e4m3fn() = default;
  __device__ __forceinline__ Float8_e4m3fn(float f) : __x(detail::floatToFloat8Bits(f, true)) {}
  __device__ __forceinline__ operator float() const { return detail::float8BitsToFloat(__x, true); }
};
struct alignas(1) Float8_e5m2 {
  unsigned char __x;
  Float8_e5m2() = default;
  __device__ __forceinline__ Float8_e5m2(float f) : __x(detail::floatToFloat8Bits(f, false)) {}
  __device__ __forceinline__ operator float() const {
    return detail::float8BitsToFloat(__x, false);
  }
};

/// Widening conversion used by generated code for every load: half types compute in float.
__device__ __forceinline__ float toFloat(Float8_e4m3fn v) { return static_cast<float>(v); }
__device__ __forceinline__ float toFloat(Float8_e5m2 v) { return static_cast<float>(v); }
__device__ __forceinline__ float toFloat(__half v) { return __half2float(v); }
__device__ __forceinline__ float toFloat(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float toFloat(float v) { return v; }

/// Narrowing conversion from float for every store: fromFloat<__half>(x) rounds to nearest even.
template <typename T>
__device__ __forceinline__ T fromFloat(float v) {
  return static_cast<T>(v);
}
template <>
__device__ __forceinline__ __half fromFloat<__half>(float v) {
  return __float2half(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 fromFloat<__nv_bfloat16>(float v) {
  return __float2bfloat16(v);
}

/// `*p` widened to float (p points at __half, __nv_bfloat16 or float).
template <typename T>
__device__ __forceinline__ float loadAsFloat(const T* p) {
  return toFloat(*p);
}
/// `*p = v`, narrowed to T with round-to-nearest-even.
template <typename T>
__device__ __forceinline__ void storeFromFloat(T* p, float v) {
  *p = fromFloat<T>(v);
}

}  // namespace loom

#endif  // LOOM_RUNTIME_TYPES_CUH
