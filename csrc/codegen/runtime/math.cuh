// SPDX-License-Identifier: Apache-2.0
// Device runtime: element-wise math with PyTorch semantics that CUDA's builtins do not give.
//
// Codegen emits these as plain calls (`loom_max(t0, t1)`), so they live at global scope with a
// `loom_` prefix, like CUDA's own math functions. Overloads cover float, double and the integer
// types; half types are converted to float before any math (see types.cuh). NaN tests use
// `x != x`, which is exact without fast math (Loom compiles without it by default). Only CUDA math
// builtins that the host emulation also provides are used (expf, erff, tanhf, rintf, fmodf, ...).
#ifndef LOOM_RUNTIME_MATH_CUH
#define LOOM_RUNTIME_MATH_CUH

/// torch.maximum: NaN if either operand is NaN (fmaxf would return the other operand).
template <typename T>
__device__ __forceinline__ T loom_max(T a, T b) {
  return a != a ? a : (b != b ? b : (a > b ? a : b));
}

/// torch.minimum: NaN if either operand is NaN.
template <typename T>
__device__ __forceinline__ T loom_min(T a, T b) {
  return a != a ? a : (b != b ? b : (a < b ? a : b));
}

/// Index math mixes 32-bit loop indices with 64-bit sizes (a slice bound or pad width computed
/// from an Int64 scalar): such pairs compute in long long.
__device__ __forceinline__ long long loom_max(int a, long long b) { return loom_max<long long>(a, b); }
__device__ __forceinline__ long long loom_max(long long a, int b) { return loom_max<long long>(a, b); }
__device__ __forceinline__ long long loom_min(int a, long long b) { return loom_min<long long>(a, b); }
__device__ __forceinline__ long long loom_min(long long a, int b) { return loom_min<long long>(a, b); }

/// torch.round: round half to even (rintf uses the default rounding mode, nearest-even).
__device__ __forceinline__ float loom_round(float x) { return rintf(x); }
__device__ __forceinline__ double loom_round(double x) { return rint(x); }

/// torch.sign: -1, 0 or 1 of the operand's type; NaN stays NaN; sign(-0.0) is 0.
template <typename T>
__device__ __forceinline__ T loom_sign(T x) {
  return x != x ? x : static_cast<T>((T(0) < x) - (x < T(0)));
}

/// Logistic sigmoid 1 / (1 + e^-x); saturates to 0 and 1 without NaN for large |x|.
__device__ __forceinline__ float loom_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
__device__ __forceinline__ double loom_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

/// SiLU (swish): x * sigmoid(x).
__device__ __forceinline__ float loom_silu(float x) { return x / (1.0f + expf(-x)); }
__device__ __forceinline__ double loom_silu(double x) { return x / (1.0 + exp(-x)); }

/// Exact GELU: x * Phi(x) = 0.5 x (1 + erf(x / sqrt(2))), written with erfc so that it keeps its
/// relative accuracy for large negative x, where 1 + erf(.) would cancel.
__device__ __forceinline__ float loom_gelu(float x) {
  return 0.5f * x * erfcf(-x * 0.70710678118654752f);
}
__device__ __forceinline__ double loom_gelu(double x) {
  return 0.5 * x * erfc(-x * 0.70710678118654752);
}

/// The tanh approximation of GELU (approximate="tanh" in PyTorch):
/// 0.5 x (1 + tanh(u)) with u = sqrt(2/pi) (x + 0.044715 x^3), computed as x / (1 + e^(-2u)),
/// the same value without the cancellation of 1 + tanh(u) for negative u.
__device__ __forceinline__ float loom_gelu_tanh(float x) {
  const float u = 0.79788456080286536f * (x + 0.044715f * x * x * x);
  return x / (1.0f + expf(-2.0f * u));
}
__device__ __forceinline__ double loom_gelu_tanh(double x) {
  const double u = 0.79788456080286536 * (x + 0.044715 * x * x * x);
  return x / (1.0 + exp(-2.0 * u));
}

/// Derivative of the exact GELU, for backward fusions: Phi(x) + x phi(x).
__device__ __forceinline__ float loom_gelu_grad(float x) {
  const float cdf = 0.5f * erfcf(-x * 0.70710678118654752f);
  const float pdf = 0.39894228040143268f * expf(-0.5f * x * x);
  return cdf + x * pdf;
}

/// ceil(a / b) for non-negative a and positive b (extents and split factors).
template <typename T>
__device__ __forceinline__ T loom_ceil_div(T a, T b) {
  return (a + b - 1) / b;
}

__device__ __forceinline__ long long loom_ceil_div(int a, long long b) {
  return loom_ceil_div<long long>(a, b);
}
__device__ __forceinline__ long long loom_ceil_div(long long a, int b) {
  return loom_ceil_div<long long>(a, b);
}

/// Integer division of the fusion's values, defined for every operand (docs/ops.md): truncating
/// toward zero; by zero gives 0 (NumPy's choice; torch raises on the CPU), the most negative
/// value by -1 gives itself (two's complement wrap). Never traps.
template <typename T>
__device__ __forceinline__ T loom_div(T a, T b) {
  if (b == 0) return 0;
  // -1 only of a signed type (an unsigned all-ones divisor divides as any other).
  if (T(-1) < T(0) && b == T(-1)) return static_cast<T>(0ULL - static_cast<unsigned long long>(a));
  return a / b;
}
__device__ __forceinline__ long long loom_div(int a, long long b) { return loom_div<long long>(a, b); }
__device__ __forceinline__ long long loom_div(long long a, int b) { return loom_div<long long>(a, b); }

/// ceil(a / b) for every integer operand: by zero 0, the most negative value by -1 itself.
template <typename T>
__device__ __forceinline__ T loom_ceil_div_total(T a, T b) {
  T q = loom_div(a, b);
  if (b == 0 || (T(-1) < T(0) && b == T(-1))) return q;
  T r = a % b;
  return (r != 0 && ((r > 0) == (b > 0))) ? q + 1 : q;
}
__device__ __forceinline__ long long loom_ceil_div_total(int a, long long b) {
  return loom_ceil_div_total<long long>(a, b);
}
__device__ __forceinline__ long long loom_ceil_div_total(long long a, int b) {
  return loom_ceil_div_total<long long>(a, b);
}

/// Integer powers, wrapping as integer multiplication does: a negative exponent gives the integer
/// part of the true power (1 for base 1, -1 or 1 for base -1, else 0). As the reference computes
/// them (eval/element_ops.cpp), where powf would round powers past 2^24.
template <typename T>
__device__ __forceinline__ T loom_ipow(T base, T exp) {
  if (exp < 0) return base == 1 ? T(1) : (base == -1 ? ((exp & 1) ? T(-1) : T(1)) : T(0));
  unsigned long long result = 1;
  unsigned long long b = static_cast<unsigned long long>(base);
  while (exp > 0) {
    if (exp & 1) result *= b;
    b *= b;
    exp >>= 1;
  }
  return static_cast<T>(result);
}

/// torch.fmod: remainder with the sign of the dividend (C's fmod; truncating % for integers).
/// An integer remainder by zero or by -1 is 0 (a % -1 traps for the most negative a).
__device__ __forceinline__ float loom_fmod(float a, float b) { return fmodf(a, b); }
__device__ __forceinline__ double loom_fmod(double a, double b) { return fmod(a, b); }
__device__ __forceinline__ int loom_fmod(int a, int b) { return (b == 0 || b == -1) ? 0 : a % b; }
__device__ __forceinline__ long long loom_fmod(long long a, long long b) {
  return (b == 0 || b == -1) ? 0 : a % b;
}
/// Unsigned operands (the 8- and 16-bit types promote to int above): no trap but by zero.
__device__ __forceinline__ unsigned loom_fmod(unsigned a, unsigned b) { return b == 0 ? 0u : a % b; }
__device__ __forceinline__ unsigned long long loom_fmod(unsigned long long a, unsigned long long b) {
  return b == 0 ? 0ULL : a % b;
}
__device__ __forceinline__ long long loom_fmod(int a, long long b) { return loom_fmod((long long)a, b); }
__device__ __forceinline__ long long loom_fmod(long long a, int b) { return loom_fmod(a, (long long)b); }

/// torch.remainder: remainder with the sign of the divisor (Python's %).
template <typename T>
__device__ __forceinline__ T loom_remainder(T a, T b) {
  T r = loom_fmod(a, b);
  return (r != T(0) && ((r < T(0)) != (b < T(0)))) ? r + b : r;
}

// ---- Integer and bit-level ops (issue 36): defined for every operand, no undefined behaviour ----

/// Two's-complement wrapping +, -, * and negation of the fusion's integers: signed overflow is
/// undefined in C++, so the arithmetic is done in unsigned and converted back.
template <typename T>
__device__ __forceinline__ T loom_wrap_add(T a, T b) {
  return static_cast<T>(static_cast<unsigned long long>(a) + static_cast<unsigned long long>(b));
}
template <typename T>
__device__ __forceinline__ T loom_wrap_sub(T a, T b) {
  return static_cast<T>(static_cast<unsigned long long>(a) - static_cast<unsigned long long>(b));
}
template <typename T>
__device__ __forceinline__ T loom_wrap_mul(T a, T b) {
  return static_cast<T>(static_cast<unsigned long long>(a) * static_cast<unsigned long long>(b));
}
template <typename T>
__device__ __forceinline__ T loom_wrap_neg(T a) {
  return static_cast<T>(0ULL - static_cast<unsigned long long>(a));
}
template <typename T>
__device__ __forceinline__ T loom_wrap_abs(T a) {
  return a < 0 ? loom_wrap_neg<T>(a) : a;
}

/// torch's shifts for every count: a count outside [0, width) shifts every bit out (left: 0;
/// arithmetic right: the sign, -1 or 0; logical right: 0). The logical shift reads the value's
/// own width as unsigned.
template <typename T>
__device__ __forceinline__ T loom_shl(T a, T b) {
  if (b < 0 || b >= T(sizeof(T) * 8)) return T(0);
  return static_cast<T>(static_cast<unsigned long long>(a) << b);
}
template <typename T>
__device__ __forceinline__ T loom_shr(T a, T b) {
  if (b < 0 || b >= T(sizeof(T) * 8)) return a < 0 ? T(-1) : T(0);
  return a >> b;
}
template <typename T>
__device__ __forceinline__ T loom_lshr(T a, T b) {
  if (b < 0 || b >= T(sizeof(T) * 8)) return T(0);
  // The value's own bits: the sign extension of a narrower type masked off.
  const unsigned long long mask = sizeof(T) >= 8 ? ~0ULL : ((1ULL << (sizeof(T) * 8)) - 1ULL);
  const unsigned long long bits = static_cast<unsigned long long>(a) & mask;
  return static_cast<T>(bits >> b);
}

/// torch.gcd: Euclid on the magnitudes, |x| wrapping (gcd(INT_MIN, 0) is INT_MIN), with the
/// remainder's traps defined away as in loom_fmod.
template <typename T>
__device__ __forceinline__ T loom_gcd(T a, T b) {
  a = loom_wrap_abs<T>(a);
  b = loom_wrap_abs<T>(b);
  while (a != 0) {
    T c = a;
    a = loom_fmod(b, a);
    b = c;
  }
  return b;
}

/// torch.frac: x - trunc(x) (NaN for infinities); integers have no fraction.
__device__ __forceinline__ float loom_frac(float x) { return x - truncf(x); }
__device__ __forceinline__ double loom_frac(double x) { return x - trunc(x); }

/// torch.special.digamma, which CUDA's math library lacks: defined here under CUDA's naming
/// (digammaf for float), since codegen emits every floating function op as its name with CUDA's
/// float suffix. Computed in double, as the reference evaluator computes it (eval/element_ops.cpp):
/// reflection for negative x, the recurrence psi(x) = psi(x + 1) - 1/x up to x >= 10, then the
/// asymptotic series. NaN at the poles (the negative integers, -inf), -inf at +0, +inf at -0.
__device__ __forceinline__ double digamma(double x) {
  if (x != x) return x;
  if (x == 0.0) return -1.0 / x;
  const double pi = 3.14159265358979323846;
  double reflected = 0.0;
  if (x < 0.0) {
    if (x == trunc(x)) return 0.0 / 0.0;
    reflected = -pi / tan(pi * (x - trunc(x)));  // tan of the exact fraction
    x = 1.0 - x;
  }
  if (x > 1.7976931348623157e308) return x;  // +inf
  double shift = 0.0;
  for (; x < 10.0; x += 1.0) shift -= 1.0 / x;
  const double z = 1.0 / (x * x);
  const double tail =
      z * (1.0 / 12 -
           z * (1.0 / 120 -
                z * (1.0 / 252 - z * (1.0 / 240 - z * (1.0 / 132 - z * (691.0 / 32760 - z / 12))))));
  return reflected + shift + log(x) - 0.5 / x - tail;
}
__device__ __forceinline__ float digammaf(float x) { return static_cast<float>(digamma(x)); }

/// torch.where for scalars: both branches are already evaluated, so this is a plain select.
template <typename T>
__device__ __forceinline__ T loom_where(bool condition, T a, T b) {
  return condition ? a : b;
}

#endif  // LOOM_RUNTIME_MATH_CUH
