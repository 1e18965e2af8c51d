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
/// -x with the sign bit flipped for every x, NaN included: a GPU's negation of a NaN gives an
/// unspecified NaN (PTX neg), and Annex G results such as casinh(NaN + i inf) = +-inf + i NaN
/// take their sign from it (so casin(inf + NaN i), which negates a part, would differ between
/// the backends and from the C library).
template <typename T>
__device__ __forceinline__ T cmathNeg(T x) {
  return cmathCopysign(x, signbit(x) ? T(1) : T(-1));
}
__device__ __forceinline__ float cmathSinh(float a) { return sinhf(a); }
__device__ __forceinline__ double cmathSinh(double a) { return sinh(a); }
__device__ __forceinline__ float cmathCosh(float a) { return coshf(a); }
__device__ __forceinline__ double cmathCosh(double a) { return cosh(a); }
__device__ __forceinline__ float cmathTan(float a) { return tanf(a); }
__device__ __forceinline__ double cmathTan(double a) { return tan(a); }
// Beyond this magnitude the inverse functions' leading term (log 2z, 1/z) is exact to the part
// type's precision (the next term is below 1/|z|^2 <= eps), and squaring z could overflow.
template <typename T>
__device__ __forceinline__ T cmathLarge();
template <>
__device__ __forceinline__ float cmathLarge<float>() {
  return 4096.0f;
}
template <>
__device__ __forceinline__ double cmathLarge<double>() {
  return 134217728.0;
}
// tanh(x) is +-1 to the part type's precision beyond this |x|.
template <typename T>
__device__ __forceinline__ T cmathTanhSaturates();
template <>
__device__ __forceinline__ float cmathTanhSaturates<float>() {
  return 9.0f;
}
template <>
__device__ __forceinline__ double cmathTanhSaturates<double>() {
  return 22.0;
}
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
  // e^(-inf + iy) is 0 for every y (even an infinite or NaN one); e^(inf + iy) infinite.
  if (isinf(z.re) && !isfinite(z.im)) {
    if (z.re < T(0)) return {T(0), T(0)};
    return {z.re, z.im - z.im};
  }
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
// The transcendental functions below follow C's Annex G at infinities, NaNs and signed zeros
// (the reference evaluator's std::complex does): each handles those first, then computes. The
// circular functions are the hyperbolic ones rotated (sin z = -i sinh(iz), cos z = cosh(iz),
// tan z = -i tanh(iz), asin z = -i asinh(iz), atan z = -i atanh(iz), acos z = pi/2 - asin z).

/// -i * w and i * z, the rotations that turn the hyperbolic functions into the circular ones.
template <typename T>
__device__ __forceinline__ Complex<T> cMulMinusI(Complex<T> w) {
  return {w.im, detail::cmathNeg(w.re)};
}
template <typename T>
__device__ __forceinline__ Complex<T> cMulI(Complex<T> z) {
  return {detail::cmathNeg(z.im), z.re};
}
/// sinh(x + iy) = sinh x cos y + i cosh x sin y; on the axes the part that is exactly 0 stays 0.
template <typename T>
__device__ __forceinline__ Complex<T> cSinh(Complex<T> z) {
  if (z.im == T(0)) return {detail::cmathSinh(z.re), z.im};
  if (z.re == T(0)) return {z.re, detail::cmathSin(z.im)};
  // Annex G leaves the infinite real part's sign open; glibc (and so torch on the CPU) gives +inf.
  if (isinf(z.re) && !isfinite(z.im)) return {detail::cmathInf<T>(), z.im - z.im};
  return {detail::cmathSinh(z.re) * detail::cmathCos(z.im),
          detail::cmathCosh(z.re) * detail::cmathSin(z.im)};
}
/// cosh(x + iy) = cosh x cos y + i sinh x sin y.
template <typename T>
__device__ __forceinline__ Complex<T> cCosh(Complex<T> z) {
  if (z.im == T(0)) return {detail::cmathCosh(z.re), detail::cmathCopysign(T(0), z.re) * z.im};
  if (z.re == T(0))
    return {detail::cmathCos(z.im), isfinite(z.im) ? z.re * detail::cmathSin(z.im) : z.re};
  if (isinf(z.re) && !isfinite(z.im)) return {detail::cmathAbs(z.re), z.im - z.im};
  return {detail::cmathCosh(z.re) * detail::cmathCos(z.im),
          detail::cmathSinh(z.re) * detail::cmathSin(z.im)};
}
/// tanh z with t = tan y, s = sinh x: (s sqrt(1 + s^2) (1 + t^2) + i t) / (1 + (1 + t^2) s^2),
/// which neither overflows nor cancels; for large |x| tanh x is +-1 and the imaginary part
/// 4 sin y cos y e^(-2|x|).
template <typename T>
__device__ __forceinline__ Complex<T> cTanh(Complex<T> z) {
  const T x = z.re, y = z.im;
  if (isinf(x)) {
    const T s =
        isfinite(y) && detail::cmathAbs(y) > T(1) ? detail::cmathSin(y) * detail::cmathCos(y) : y;
    return {detail::cmathCopysign(T(1), x), detail::cmathCopysign(T(0), s)};
  }
  if (!isfinite(x) || !isfinite(y)) {
    if (y == T(0)) return z;
    const T nan = (x - x) + (y - y);
    return {x == T(0) ? x : nan, nan};
  }
  if (detail::cmathAbs(x) >= detail::cmathTanhSaturates<T>()) {
    const T e = detail::cmathExp(T(-2) * detail::cmathAbs(x));
    return {detail::cmathCopysign(T(1), x), T(4) * detail::cmathSin(y) * detail::cmathCos(y) * e};
  }
  const T t = detail::cmathTan(y);
  const T b = T(1) + t * t;
  const T s = detail::cmathSinh(x);
  const T rho = detail::cmathSqrt(T(1) + s * s);
  const T den = T(1) + b * s * s;
  return {b * rho * s / den, t / den};
}
template <typename T>
__device__ __forceinline__ Complex<T> cSin(Complex<T> z) {
  // The one place the rotation's sign differs from glibc's (Annex G leaves it open): an infinite
  // imaginary part with a non-finite real one gives +inf.
  if (!isfinite(z.re) && isinf(z.im)) return {z.re - z.re, detail::cmathInf<T>()};
  return cMulMinusI(cSinh(cMulI(z)));
}
template <typename T>
__device__ __forceinline__ Complex<T> cCos(Complex<T> z) {
  return cCosh(cMulI(z));
}
template <typename T>
__device__ __forceinline__ Complex<T> cTan(Complex<T> z) {
  return cMulMinusI(cTanh(cMulI(z)));
}
/// log(2z) = log|z/2| + 2 log 2 + i arg z: the inverse functions' value for large |z|.
template <typename T>
__device__ __forceinline__ Complex<T> cLogTwice(Complex<T> z) {
  const T ln2 = T(0.6931471805599453);
  return {detail::cmathLog(detail::cmathHypot(z.re * T(0.5), z.im * T(0.5))) + T(2) * ln2,
          detail::cmathAtan2(z.im, z.re)};
}
/// asinh z = log(z + sqrt(z^2 + 1)), computed in the half plane Re z >= 0 (asinh is odd) where
/// the sum does not cancel; z^2 + 1 adds 1 to the real part only, so a signed zero imaginary
/// part keeps its sign (it chooses the side of the branch cut).
template <typename T>
__device__ __forceinline__ Complex<T> cAsinh(Complex<T> z) {
  if (isnan(z.re) || isnan(z.im)) {
    if (isinf(z.re)) return z;
    if (isinf(z.im)) return {detail::cmathCopysign(detail::cmathInf<T>(), z.re), z.re};
    if (z.im == T(0)) return z;
    const T nan = z.re + z.im;
    return {nan, nan};
  }
  const bool flip = signbit(z.re);
  const Complex<T> w = flip ? -z : z;
  Complex<T> r;
  if (isinf(w.re) || isinf(w.im)) {
    r = {detail::cmathInf<T>(), detail::cmathAtan2(w.im, w.re)};
  } else if (w.re > detail::cmathLarge<T>() || detail::cmathAbs(w.im) > detail::cmathLarge<T>()) {
    r = cLogTwice(w);
  } else {
    const Complex<T> s = cSqrt(Complex<T>(w.re * w.re - w.im * w.im + T(1), T(2) * w.re * w.im));
    r = cLog(Complex<T>(w.re + s.re, w.im + s.im));
  }
  return flip ? -r : r;
}
/// acosh z = log(z + sqrt(z + 1) sqrt(z - 1)) (the product, not sqrt(z^2 - 1), has the right
/// branch everywhere); its real part is never negative.
template <typename T>
__device__ __forceinline__ Complex<T> cAcosh(Complex<T> z) {
  if (isnan(z.re) || isnan(z.im)) {
    const T nan = z.re + z.im;
    if (isinf(z.re) || isinf(z.im)) return {detail::cmathInf<T>(), nan};
    if (z.re == T(0)) return {nan, T(1.5707963267948966)};  // acosh(+-0 + NaN i), Annex G
    return {nan, nan};
  }
  if (isinf(z.re) || isinf(z.im)) return {detail::cmathInf<T>(), detail::cmathAtan2(z.im, z.re)};
  if (detail::cmathAbs(z.re) > detail::cmathLarge<T>() ||
      detail::cmathAbs(z.im) > detail::cmathLarge<T>()) {
    return cLogTwice(z);
  }
  const Complex<T> p = cSqrt(Complex<T>(z.re + T(1), z.im)) * cSqrt(Complex<T>(z.re - T(1), z.im));
  return cLog(Complex<T>(z.re + p.re, z.im + p.im));
}
/// atanh z = (log(1 + z) - log(1 - z)) / 2, with 1 - z's imaginary part exactly -Im z (its
/// sign chooses the side of the cut); for large |z| it is i pi/2 sign(Im z) + 1/z.
template <typename T>
__device__ __forceinline__ Complex<T> cAtanh(Complex<T> z) {
  const T half_pi = T(1.5707963267948966);
  if (isnan(z.re) || isnan(z.im)) {
    if (isinf(z.re)) return {detail::cmathCopysign(T(0), z.re), z.im};
    if (isinf(z.im))
      return {detail::cmathCopysign(T(0), z.re), detail::cmathCopysign(half_pi, z.im)};
    if (z.re == T(0)) return z;
    const T nan = z.re + z.im;
    return {nan, nan};
  }
  if (isinf(z.re) || isinf(z.im)) {
    return {detail::cmathCopysign(T(0), z.re), detail::cmathCopysign(half_pi, z.im)};
  }
  if (detail::cmathAbs(z.re) > detail::cmathLarge<T>() ||
      detail::cmathAbs(z.im) > detail::cmathLarge<T>()) {
    const Complex<T> r = cReciprocal(z);
    return {r.re, detail::cmathCopysign(half_pi, z.im) + r.im};
  }
  const Complex<T> a = cLog(Complex<T>(T(1) + z.re, z.im));
  const Complex<T> b = cLog(Complex<T>(T(1) - z.re, -z.im));
  return {(a.re - b.re) * T(0.5), (a.im - b.im) * T(0.5)};
}
template <typename T>
__device__ __forceinline__ Complex<T> cAsin(Complex<T> z) {
  return cMulMinusI(cAsinh(cMulI(z)));
}
template <typename T>
__device__ __forceinline__ Complex<T> cAcos(Complex<T> z) {
  const Complex<T> a = cAsin(z);
  return {T(1.5707963267948966) - a.re, -a.im};
}
template <typename T>
__device__ __forceinline__ Complex<T> cAtan(Complex<T> z) {
  return cMulMinusI(cAtanh(cMulI(z)));
}
/// log2 z and log10 z: the principal logarithm divided by the real log 2 (log 10), part by part,
/// as torch and std::log10 divide (a multiple of pi differs from pi * (1 / log 2) in its last bit).
template <typename T>
__device__ __forceinline__ Complex<T> cLog2(Complex<T> z) {
  const Complex<T> l = cLog(z);
  const T ln2 = T(0.6931471805599453);
  return {l.re / ln2, l.im / ln2};
}
template <typename T>
__device__ __forceinline__ Complex<T> cLog10(Complex<T> z) {
  const Complex<T> l = cLog(z);
  const T ln10 = T(2.302585092994046);
  return {l.re / ln10, l.im / ln10};
}
/// sigmoid z = 1 / (1 + e^-z), as torch computes it for complex values.
template <typename T>
__device__ __forceinline__ Complex<T> cSigmoid(Complex<T> z) {
  const Complex<T> e = cExp(-z);
  // Where e^-z has a NaN part, or two infinite ones (no direction), so has the result, as in
  // torch; the division alone would give 0 (Annex G: a finite value by an infinite one).
  if (e.re != e.re || e.im != e.im || (isinf(e.re) && isinf(e.im))) {
    const T nan = (e.re - e.re) + (e.im - e.im);
    return {nan, nan};
  }
  return Complex<T>(T(1)) / Complex<T>(T(1) + e.re, e.im);
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
