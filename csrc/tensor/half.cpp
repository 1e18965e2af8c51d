// SPDX-License-Identifier: Apache-2.0
// Exact conversions between double/float and the 16-bit float formats.
//
// Both formats are "1 sign, E exponent, M mantissa bits" IEEE-style formats, so one routine rounds a
// double to either: scale |x| by the quantum of its binade (a power of two, so exact), round the
// scaled value to an integer with ties to even, and re-encode. Rounding straight from double avoids
// the double rounding of double -> float -> half.
#include "loom/tensor/half.h"

#include <bit>
#include <cfenv>
#include <cmath>

namespace loom {
namespace {

struct Format {
  int exponent_bits;
  int mantissa_bits;
  uint16_t quiet_nan;  // without sign
};

constexpr Format kHalf{5, 10, 0x7E00};
constexpr Format kBFloat16{8, 7, 0x7FC0};

uint16_t encode(double x, Format f) {
  const uint16_t sign = std::signbit(x) ? uint16_t(0x8000) : uint16_t(0);
  const int bias = (1 << (f.exponent_bits - 1)) - 1;
  const uint16_t inf = uint16_t(((1 << f.exponent_bits) - 1) << f.mantissa_bits);
  if (std::isnan(x)) return sign | f.quiet_nan;
  double a = std::fabs(x);
  if (std::isinf(a)) return sign | inf;
  if (a == 0.0) return sign;

  const int emin = 1 - bias;
  int exp2;
  std::frexp(a, &exp2);  // a = m * 2^exp2, m in [0.5, 1)
  int exponent = exp2 - 1;
  const bool subnormal = exponent < emin;
  const int quantum_exp = (subnormal ? emin : exponent) - f.mantissa_bits;
  // nearbyint uses the current rounding mode, which is round-to-nearest-even by default.
  double n = std::nearbyint(std::ldexp(a, -quantum_exp));
  const double implicit_one = std::ldexp(1.0, f.mantissa_bits);
  if (subnormal) {
    // n == 2^M lands exactly on the smallest normal, whose encoding is the same integer.
    return sign | uint16_t(n);
  }
  if (n == 2 * implicit_one) {
    n = implicit_one;
    ++exponent;
  }
  if (exponent > bias) return sign | inf;
  return sign | uint16_t((exponent + bias) << f.mantissa_bits) | uint16_t(n - implicit_one);
}

double decode(uint16_t bits, Format f) {
  const bool negative = bits & 0x8000;
  const int bias = (1 << (f.exponent_bits - 1)) - 1;
  const int e = (bits >> f.mantissa_bits) & ((1 << f.exponent_bits) - 1);
  const int m = bits & ((1 << f.mantissa_bits) - 1);
  double v;
  if (e == (1 << f.exponent_bits) - 1) {
    v = m == 0 ? INFINITY : NAN;
  } else if (e == 0) {
    v = std::ldexp(double(m), 1 - bias - f.mantissa_bits);
  } else {
    v = std::ldexp(double(m + (1 << f.mantissa_bits)), e - bias - f.mantissa_bits);
  }
  return negative ? -v : v;
}

}  // namespace

uint16_t doubleToHalfBits(double d) { return encode(d, kHalf); }
uint16_t doubleToBFloat16Bits(double d) { return encode(d, kBFloat16); }
uint16_t floatToHalfBits(float f) { return encode(f, kHalf); }
uint16_t floatToBFloat16Bits(float f) {
  // Fast path: bfloat16 is the top half of a float, so rounding is one integer add.
  uint32_t u = std::bit_cast<uint32_t>(f);
  if (std::isnan(f)) return uint16_t((u >> 16) | 0x0040);
  u += 0x7FFFu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}
float halfBitsToFloat(uint16_t h) { return float(decode(h, kHalf)); }
float bfloat16BitsToFloat(uint16_t b) { return std::bit_cast<float>(uint32_t(b) << 16); }

}  // namespace loom
