// SPDX-License-Identifier: Apache-2.0
// Device runtime: the Welford (mean, M2, count) triple and Chan's formula to combine two of them.
//
// A Welford state summarises a set of samples: `avg` is their mean, `m2` the sum of squared
// deviations from the mean, `n` the count. The variance is m2 / (n - correction). Combining two
// states (Chan et al.) is associative up to rounding and, unlike sum-of-squares formulas, stays
// accurate when the mean is large compared with the spread. The block and grid reductions of
// block.cuh and grid.cuh reduce Welford states with WelfordOp like any other value.
#ifndef LOOM_RUNTIME_WELFORD_CUH
#define LOOM_RUNTIME_WELFORD_CUH

namespace loom {

/// Mean, sum of squared deviations and count. T is float or double; N (the count) is `long long`
/// (Loom's index type) or the same floating type as T, as the fusion's Welford op declares.
/// Layout: avg, m2, n in that order with natural alignment (the executor sizes work buffers with it).
template <typename T, typename N = long long>
struct Welford {
  T avg;
  T m2;
  N n;
};

/// The empty state: the identity of welfordCombine.
template <typename T, typename N = long long>
__device__ __forceinline__ Welford<T, N> welfordInit() {
  return Welford<T, N>{T(0), T(0), N(0)};
}

/// The new mean a + step, step being (b - a) times b's share f of the samples; when the step is
/// not finite (an infinite mean meets another mean) the weighted sum a (1 - f) + b f instead,
/// which is inf for inf against finite means and NaN for inf against -inf, as the mean of the
/// samples is, in any order (a + step would give NaN for inf followed by a finite sample).
template <typename T>
__device__ __forceinline__ T welfordMean(T a, T b, T step, T f) {
  return step - step == T(0) ? a + step : a * (T(1) - f) + b * f;
}

/// Adds one sample x. One division per sample (the reciprocal of the count, then a multiply),
/// not two: wide var_mean rows are bound by this update, not by memory (on the H100 bf16 rows of
/// 128256 took 113 us against 133 for fp32, half the bytes).
template <typename T, typename N>
__device__ __forceinline__ Welford<T, N> welfordUpdate(Welford<T, N> w, T x) {
  w.n = w.n + N(1);
  const T delta = x - w.avg;
  const T share = T(1) / static_cast<T>(w.n);
  w.avg = welfordMean(w.avg, x, delta * share, share);
  w.m2 = w.m2 + delta * (x - w.avg);
  return w;
}

/// Chan's parallel formula. Combining with an empty state returns the other state exactly, and two
/// empty states give an empty state (no division by zero).
template <typename T, typename N>
__device__ __forceinline__ Welford<T, N> welfordCombine(Welford<T, N> a, Welford<T, N> b) {
  const N n = a.n + b.n;
  const T nbOverN = n == N(0) ? T(0) : static_cast<T>(b.n) / static_cast<T>(n);
  const T delta = b.avg - a.avg;
  Welford<T, N> r;
  r.avg = welfordMean(a.avg, b.avg, delta * nbOverN, nbOverN);
  r.m2 = a.m2 + b.m2 + delta * delta * static_cast<T>(a.n) * nbOverN;
  r.n = n;
  return r;
}

/// welfordCombine as a functor, for warpReduce / blockReduce / gridReduce.
struct WelfordOp {
  template <typename T, typename N>
  __device__ __forceinline__ Welford<T, N> operator()(Welford<T, N> a, Welford<T, N> b) const {
    return welfordCombine(a, b);
  }
};

// Warp shuffles move at most 8 bytes, so a Welford state moves field by field. These overloads are
// found by the generic reductions in warp.cuh.
template <typename T, typename N>
__device__ __forceinline__ Welford<T, N> shuffleDown(unsigned mask, Welford<T, N> w,
                                                     unsigned delta, int width) {
  w.avg = __shfl_down_sync(mask, w.avg, delta, width);
  w.m2 = __shfl_down_sync(mask, w.m2, delta, width);
  w.n = __shfl_down_sync(mask, w.n, delta, width);
  return w;
}
template <typename T, typename N>
__device__ __forceinline__ Welford<T, N> shuffleIdx(unsigned mask, Welford<T, N> w, int srcLane,
                                                    int width) {
  w.avg = __shfl_sync(mask, w.avg, srcLane, width);
  w.m2 = __shfl_sync(mask, w.m2, srcLane, width);
  w.n = __shfl_sync(mask, w.n, srcLane, width);
  return w;
}

/// A volatile (L1-bypassing) load of a state written by another block; used by gridReduce.
template <typename T, typename N>
__device__ __forceinline__ Welford<T, N> loadVolatile(const Welford<T, N>* p) {
  Welford<T, N> w;
  w.avg = *reinterpret_cast<const volatile T*>(&p->avg);
  w.m2 = *reinterpret_cast<const volatile T*>(&p->m2);
  w.n = *reinterpret_cast<const volatile N*>(&p->n);
  return w;
}

}  // namespace loom

#endif  // LOOM_RUNTIME_WELFORD_CUH
