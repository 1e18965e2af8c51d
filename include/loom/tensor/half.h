// SPDX-License-Identifier: Apache-2.0
// Host-side IEEE half (binary16) and bfloat16 storage types with exact conversions.
//
// float -> half/bfloat16 rounds to nearest, ties to even; NaN stays NaN (quiet), infinities and
// signed zeros are kept, values past the largest finite round to infinity, and half subnormals are
// produced exactly. half/bfloat16 -> float is exact.
#pragma once

#include <cstdint>

namespace loom {

/// Converts with round-to-nearest-even. Exposed for tests and for the Half/BFloat16 types.
uint16_t floatToHalfBits(float f);
float halfBitsToFloat(uint16_t h);
uint16_t floatToBFloat16Bits(float f);
float bfloat16BitsToFloat(uint16_t b);

/// double -> half rounds once (not via float), so no double rounding.
uint16_t doubleToHalfBits(double d);
uint16_t doubleToBFloat16Bits(double d);

struct Half {
  uint16_t bits = 0;
  Half() = default;
  explicit Half(float f) : bits(floatToHalfBits(f)) {}
  static Half fromBits(uint16_t b) {
    Half h;
    h.bits = b;
    return h;
  }
  explicit operator float() const { return halfBitsToFloat(bits); }
};

struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  explicit BFloat16(float f) : bits(floatToBFloat16Bits(f)) {}
  static BFloat16 fromBits(uint16_t b) {
    BFloat16 h;
    h.bits = b;
    return h;
  }
  explicit operator float() const { return bfloat16BitsToFloat(bits); }
};

static_assert(sizeof(Half) == 2 && sizeof(BFloat16) == 2);

}  // namespace loom
