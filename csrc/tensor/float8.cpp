// SPDX-License-Identifier: Apache-2.0
// Exact conversions between float and the 8-bit float formats (float8.h states the rules).
//
// Encoding scales |x| by the quantum of its binade (a power of two, so exact), rounds the scaled
// value to an integer with ties to even and re-encodes it; the formats' overflow rules (e4m3fn
// saturates to 448, e5m2 goes to infinity) are applied first and, for e5m2's values that round up
// past the top, by the encoding itself.
#include "loom/tensor/float8.h"

#include <cmath>

#include "tensor/minifloat.h"

namespace loom {
namespace {

struct Format {
  detail::MinifloatFormat bits;
  bool has_infinity;  // e5m2: all-ones exponent is inf/NaN; e4m3fn: only S.1111.111 is NaN
};

constexpr Format kE4M3FN{{4, 3}, false};
constexpr Format kE5M2{{5, 2}, true};

// RNE encoding of a finite, non-negative `a` below the format's overflow threshold; the result
// may be the encoding just past the largest finite value (the format's NaN or infinity).
uint8_t encodeMagnitude(double a, Format f) {
  return a == 0.0 ? uint8_t(0) : uint8_t(detail::roundMagnitude(a, f.bits));
}

double decode(uint8_t bits, Format f) {
  const bool negative = bits & 0x80;
  const int all_ones = (1 << f.bits.exponent_bits) - 1;
  const int e = (bits >> f.bits.mantissa_bits) & all_ones;
  const int m = bits & ((1 << f.bits.mantissa_bits) - 1);
  double v;
  if (f.has_infinity && e == all_ones) {
    v = m == 0 ? INFINITY : NAN;
  } else if (!f.has_infinity && (bits & 0x7F) == 0x7F) {
    v = NAN;
  } else {
    v = detail::finiteMagnitude(e, m, f.bits);
  }
  return negative ? -v : v;
}

}  // namespace

uint8_t floatToFloat8E4M3FNBits(float x) {
  const uint8_t sign = std::signbit(x) ? 0x80 : 0;
  if (std::isnan(x)) return sign | 0x7F;
  const double a = std::fabs(double(x));
  if (a >= 448.0) return sign | 0x7E;  // saturates, infinities included (torch's cast)
  return sign | encodeMagnitude(a, kE4M3FN);
}

uint8_t floatToFloat8E5M2Bits(float x) {
  const uint8_t sign = std::signbit(x) ? 0x80 : 0;
  if (std::isnan(x)) return sign | 0x7F;
  const double a = std::fabs(double(x));
  if (a >= 65536.0) return sign | 0x7C;
  return sign | encodeMagnitude(a, kE5M2);
}

float float8E4M3FNBitsToFloat(uint8_t b) { return float(decode(b, kE4M3FN)); }
float float8E5M2BitsToFloat(uint8_t b) { return float(decode(b, kE5M2)); }

}  // namespace loom
