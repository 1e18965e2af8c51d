// SPDX-License-Identifier: Apache-2.0
// Device runtime: complex numbers (ComplexFloat, ComplexDouble) and their math.
//
// loom::Complex<T> is two T's (real, imaginary), laid out as torch's complex64 / complex128 and
// aligned to its size, so a tensor element is read and written as one access. NVRTC has no
// <complex>, and the host backend compiles this same text, so everything here is written with
// the CUDA math builtins the emulation also provides (hypot, atan2, exp, log, sin, cos, sqrt,
// each with its float form). The reference evaluator's meaning is std::complex<double>
// (eval/complex_ops.cpp); docs/ops.md, "Complex numbers", lists the ops.
#ifndef LOOM_RUNTIME_COMPLEX_CUH
#define LOOM_RUNTIME_COMPLEX_CUH

namespace loom {
namespace detail {
// The float and double forms of the builtins, chosen by overload.
__device__ __forceinline__ float cmathHypot(float a, float b) { return hypotf(a, b); }
__device__ __forceinline__ double cmathHypot(double a, double b) { return hypot(a, b); }
__device__ __forceinline__ float cmathAtan2(float a, float b) { return atan2f(a, b); }
__device__ __forceinline__ double cmathAtan2(double a, double b) { return atan2(a, b); }
__device__ __forceinline__ float cmathExp(float a) { return expf(a); }
__device__ __forceinline__ double cmathExp(double a) { return exp(a); }
__device__ __forceinline__ float cmathLog(float a) { return logf(a); }
__device__ __forceinline__ double cmathLog(double a) { return log(a); }
__device__ __forceinline__ float cmathSin(float a) { return sinf(a); }
__device__ __forceinline__ double cmathSin(double a) { return sin(a); }
__device__ __forceinline__ float cmathCos(float a) { return cosf(a); }
__device__ __forceinline__ double cmathCos(double a) { return cos(a); }
__device__ __forceinline__ float cmathSqrt(float a) { return sqrtf(a); }
__device__ __forceinline__ double cmathSqrt(double a) { return sqrt(a); }
__device__ __forceinline__ float cmathAbs(float a) { return fabsf(a); }
__device__ __forceinline__ double cmathAbs(double a) { return fabs(a); }
__device__ __forceinline__ float cmathCopysign(float a, float b) { return copysignf(a, b); }
__device__ __forceinline__ double cmathCopysign(double a, double b) { return copysign(a, b); }
template <typename T>
__device__ __forceinline__ T cmathInf();
template <>
__device__ __forceinline__ float cmathInf<float>() {
  return __int_as_float(0x7f800000);
}
template <>
__device__ __forceinline__ double cmathInf<double>() {
  return __longlong_as_double(0x7ff0000000000000LL);
}
// 1 for an infinite part, 0 for a finite one, with the part's sign.
template <typename T>
__device__ __forceinline__ T cmathUnitIfInf(T x) {
  return cmathCopysign(isinf(x) ? T(1) : T(0), x);
}
}  // namespace detail

template <typename T>
struct alignas(2 * sizeof(T)) Complex {
  T re;
  T im;

  Complex() = default;
  // A real value converts implicitly (imaginary part 0), as a real operand of complex math does.
  __device__ __forceinline__ constexpr Complex(T r, T i = T(0)) : re(r), im(i) {}
  // Between ComplexFloat and ComplexDouble: each part converts (casts only).
  template <typename U>
  __device__ __forceinline__ explicit constexpr Complex(const Complex<U>& z)
      : re(static_cast<T>(z.re)), im(static_cast<T>(z.im)) {}
};

template <typename T>
__device__ __forceinline__ Complex<T> operator+(Complex<T> a, Complex<T> b) {
  return {a.re + b.re, a.im + b.im};
}
template <typename T>
__device__ __forceinline__ Complex<T> operator-(Complex<T> a, Complex<T> b) {
  return {a.re - b.re, a.im - b.im};
}
template <typename T>
__device__ __forceinline__ Complex<T> operator-(Complex<T> a) {
  return {-a.re, -a.im};
}
template <typename T>
__device__ __forceinline__ Complex<T> operator*(Complex<T> a, Complex<T> b) {
  return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
}
/// Smith's division: scales by the larger part of the divisor, so |b|^2 never overflows. Where
/// that gives NaN in both parts, the infinities of C's Annex G (as std::complex, the reference):
/// a non-NaN value by zero is infinite, an infinite one by a finite one infinite, a finite one by
/// an infinite one zero.
template <typename T>
__device__ __forceinline__ Complex<T> operator/(Complex<T> a, Complex<T> b) {
  Complex<T> q;
  if (detail::cmathAbs(b.re) >= detail::cmathAbs(b.im)) {
    const T r = b.im / b.re;
    const T den = b.re + b.im * r;
    q = {(a.re + a.im * r) / den, (a.im - a.re * r) / den};
  } else {
    const T r = b.re / b.im;
    const T den = b.re * r + b.im;
    q = {(a.re * r + a.im) / den, (a.im * r - a.re) / den};
  }
  if (q.re == q.re || q.im == q.im) return q;
  const T inf = detail::cmathInf<T>();
  const bool a_finite = isfinite(a.re) && isfinite(a.im);
  const bool b_finite = isfinite(b.re) && isfinite(b.im);
  if (b.re == T(0) && b.im == T(0) && (a.re == a.re || a.im == a.im)) {
    const T s = detail::cmathCopysign(inf, b.re);
    return {s * a.re, s * a.im};
  }
  if ((isinf(a.re) || isinf(a.im)) && b_finite) {
    const T x = detail::cmathUnitIfInf(a.re), y = detail::cmathUnitIfInf(a.im);
    return {inf * (x * b.re + y * b.im), inf * (y * b.re - x * b.im)};
  }
  if ((isinf(b.re) || isinf(b.im)) && a_finite) {
    const T x = detail::cmathUnitIfInf(b.re), y = detail::cmathUnitIfInf(b.im);
    return {T(0) * (a.re * x + a.im * y), T(0) * (a.im * x - a.re * y)};
  }
  return q;
}
template <typename T>
__device__ __forceinline__ bool operator==(Complex<T> a, Complex<T> b) {
  return a.re == b.re && a.im == b.im;
}
template <typename T>
__device__ __forceinline__ bool operator!=(Complex<T> a, Complex<T> b) {
  return !(a == b);
}
// A complex sum accumulates in place (reductions write `acc = acc + x`, which this also serves).
template <typename T>
__device__ __forceinline__ Complex<T>& operator+=(Complex<T>& a, Complex<T> b) {
  a = a + b;
  return a;
}

/// Real, imaginary part, conjugate, magnitude (hypot: no overflow of |z|^2).
template <typename T>
__device__ __forceinline__ T cReal(Complex<T> z) {
  return z.re;
}
template <typename T>
__device__ __forceinline__ T cImag(Complex<T> z) {
  return z.im;
}
template <typename T>
__device__ __forceinline__ Complex<T> cConj(Complex<T> z) {
  return {z.re, -z.im};
}
template <typename T>
__device__ __forceinline__ T cAbs(Complex<T> z) {
  return detail::cmathHypot(z.re, z.im);
}
/// e^(x + iy) = e^x (cos y + i sin y); a real argument stays real (e^inf is inf, not inf * 0).
template <typename T>
__device__ __forceinline__ Complex<T> cExp(Complex<T> z) {
  if (z.im == T(0)) return {detail::cmathExp(z.re), z.im};
  const T m = detail::cmathExp(z.re);
  return {m * detail::cmathCos(z.im), m * detail::cmathSin(z.im)};
}
/// The principal logarithm: log|z| + i arg(z), arg in (-pi, pi].
template <typename T>
__device__ __forceinline__ Complex<T> cLog(Complex<T> z) {
  return {detail::cmathLog(cAbs(z)), detail::cmathAtan2(z.im, z.re)};
}
/// The principal square root (real part >= 0; the imaginary part has the sign of z.im), computed
/// from the larger of |x| and |z| so that neither part cancels.
template <typename T>
__device__ __forceinline__ Complex<T> cSqrt(Complex<T> z) {
  if (z.re == T(0) && z.im == T(0)) return {T(0), z.im};
  if (isinf(z.im)) return {detail::cmathAbs(z.im), z.im};  // sqrt(x + inf i) = inf + inf i
  const T t = detail::cmathSqrt((detail::cmathAbs(z.re) + cAbs(z)) * T(0.5));
  if (z.re >= T(0)) return {t, z.im / (T(2) * t)};
  return {detail::cmathAbs(z.im) / (T(2) * t), detail::cmathCopysign(t, z.im)};
}
template <typename T>
__device__ __forceinline__ Complex<T> cReciprocal(Complex<T> z) {
  return Complex<T>(T(1)) / z;
}
/// 1 / sqrt(z), as torch computes a complex rsqrt.
template <typename T>
__device__ __forceinline__ Complex<T> cRsqrt(Complex<T> z) {
  return cReciprocal(cSqrt(z));
}
/// The tests: a complex value is NaN (infinite) when either part is, finite when both are, real
/// when its imaginary part is 0.
template <typename T>
__device__ __forceinline__ bool cIsNan(Complex<T> z) {
  return z.re != z.re || z.im != z.im;
}
template <typename T>
__device__ __forceinline__ bool cIsInf(Complex<T> z) {
  return isinf(z.re) || isinf(z.im);
}
template <typename T>
__device__ __forceinline__ bool cIsFinite(Complex<T> z) {
  return isfinite(z.re) && isfinite(z.im);
}
template <typename T>
__device__ __forceinline__ bool cIsReal(Complex<T> z) {
  return z.im == T(0);
}

/// Warp shuffles move the two parts (warp.cuh's reductions call these for complex sums).
template <typename T>
__device__ __forceinline__ Complex<T> shuffleDown(unsigned mask, Complex<T> v, unsigned delta,
                                                  int width) {
  return {__shfl_down_sync(mask, v.re, delta, width), __shfl_down_sync(mask, v.im, delta, width)};
}
template <typename T>
__device__ __forceinline__ Complex<T> shuffleIdx(unsigned mask, Complex<T> v, int srcLane,
                                                 int width) {
  return {__shfl_sync(mask, v.re, srcLane, width), __shfl_sync(mask, v.im, srcLane, width)};
}
/// A volatile load of a value other blocks wrote (grid reductions), part by part.
template <typename T>
__device__ __forceinline__ Complex<T> loadVolatile(const Complex<T>* p) {
  const volatile T* parts = reinterpret_cast<const volatile T*>(p);
  return {parts[0], parts[1]};
}

}  // namespace loom

#endif  // LOOM_RUNTIME_COMPLEX_CUH
