// SPDX-License-Identifier: Apache-2.0
// The arithmetic shared by Loom's narrow float formats (half.cpp: f16, bf16; float8.cpp: e4m3fn,
// e5m2), each "1 sign, E exponent, M mantissa bits" with an IEEE-style bias: rounding a
// magnitude to the nearest encoding (ties to even) and reading a finite encoding back. Each
// format's own rules (NaN, infinity, saturation) stay with it.
#pragma once

#include <cmath>
#include <cstdint>

namespace loom::detail {

struct MinifloatFormat {
  int exponent_bits;
  int mantissa_bits;

  int bias() const { return (1 << (exponent_bits - 1)) - 1; }
};

/// The encoding (no sign bit) nearest to the finite a > 0, ties to even. |a| is scaled by the
/// quantum of its binade (a power of two, so exactly) and rounded to an integer. The exponent
/// field may come out past the largest finite one, all ones or more: the caller's overflow rule
/// decides what that is.
inline uint32_t roundMagnitude(double a, MinifloatFormat f) {
  const int emin = 1 - f.bias();
  int exp2 = 0;
  std::frexp(a, &exp2);  // a = m * 2^exp2, m in [0.5, 1)
  int exponent = exp2 - 1;
  const bool subnormal = exponent < emin;
  const int quantum_exp = (subnormal ? emin : exponent) - f.mantissa_bits;
  // nearbyint rounds in the current mode, to nearest even by default.
  double n = std::nearbyint(std::ldexp(a, -quantum_exp));
  // A subnormal that rounds to 2^M is the smallest normal, whose encoding is the same integer.
  if (subnormal) return uint32_t(n);
  const double implicit_one = std::ldexp(1.0, f.mantissa_bits);
  if (n == 2 * implicit_one) {
    n = implicit_one;
    ++exponent;
  }
  return (uint32_t(exponent + f.bias()) << f.mantissa_bits) | uint32_t(n - implicit_one);
}

/// The magnitude of the encoding with exponent field `e` below all ones and mantissa `m`.
inline double finiteMagnitude(int e, int m, MinifloatFormat f) {
  if (e == 0) return std::ldexp(double(m), 1 - f.bias() - f.mantissa_bits);
  return std::ldexp(double(m + (1 << f.mantissa_bits)), e - f.bias() - f.mantissa_bits);
}

}  // namespace loom::detail
