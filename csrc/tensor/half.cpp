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

#include "tensor/minifloat.h"

namespace loom {
namespace {

struct Format {
  detail::MinifloatFormat bits;
  uint16_t quiet_nan;  // without sign
};

constexpr Format kHalf{{5, 10}, 0x7E00};
constexpr Format kBFloat16{{8, 7}, 0x7FC0};

uint16_t encode(double x, Format f) {
  const uint16_t sign = std::signbit(x) ? uint16_t(0x8000) : uint16_t(0);
  const int all_ones = (1 << f.bits.exponent_bits) - 1;
  const uint16_t inf = uint16_t(all_ones << f.bits.mantissa_bits);
  if (std::isnan(x)) return sign | f.quiet_nan;
  const double a = std::fabs(x);
  if (std::isinf(a)) return sign | inf;
  if (a == 0.0) return sign;
  const uint32_t m = detail::roundMagnitude(a, f.bits);
  if ((m >> f.bits.mantissa_bits) >= uint32_t(all_ones)) return sign | inf;  // overflow
  return sign | uint16_t(m);
}

double decode(uint16_t bits, Format f) {
  const bool negative = bits & 0x8000;
  const int all_ones = (1 << f.bits.exponent_bits) - 1;
  const int e = (bits >> f.bits.mantissa_bits) & all_ones;
  const int m = bits & ((1 << f.bits.mantissa_bits) - 1);
  const double v = e == all_ones ? (m == 0 ? INFINITY : NAN) : detail::finiteMagnitude(e, m, f.bits);
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
