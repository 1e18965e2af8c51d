// SPDX-License-Identifier: Apache-2.0
// Tests of the half / bfloat16 conversions against exact values and a brute-force reference.
#include "loom/tensor/half.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace loom {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

bool isHalfNaN(uint16_t h) { return (h & 0x7C00) == 0x7C00 && (h & 0x03FF) != 0; }
bool isBFloat16NaN(uint16_t b) { return (b & 0x7F80) == 0x7F80 && (b & 0x007F) != 0; }

// A 16-bit float format described by its field widths, decoded from first principles.
struct Format {
  int exponent_bits;
  int mantissa_bits;

  int bias() const { return (1 << (exponent_bits - 1)) - 1; }
  uint16_t maxFiniteBits() const {
    return uint16_t((((1 << exponent_bits) - 2) << mantissa_bits) | ((1 << mantissa_bits) - 1));
  }
  uint16_t infBits() const { return uint16_t(((1 << exponent_bits) - 1) << mantissa_bits); }
  // Value of a finite, non-negative encoding.
  double value(uint16_t bits) const {
    int e = bits >> mantissa_bits;
    int m = bits & ((1 << mantissa_bits) - 1);
    double frac = double(m) / double(1 << mantissa_bits);
    return e == 0 ? std::ldexp(frac, 1 - bias()) : std::ldexp(1.0 + frac, e - bias());
  }
};

constexpr Format kHalfFormat{5, 10};
constexpr Format kBFloat16Format{8, 7};

// Rounds a double to the format by searching the sorted table of every non-negative finite value.
// Infinity sits in the table as 2^(emax+1) with an even significand, which is exactly IEEE's rule
// for overflow under round-to-nearest-even.
class Reference {
 public:
  explicit Reference(Format f) {
    for (uint16_t b = 0; b <= f.maxFiniteBits(); ++b) {
      values_.push_back(f.value(b));
      bits_.push_back(b);
    }
    values_.push_back(std::ldexp(1.0, f.bias() + 1));
    bits_.push_back(f.infBits());
  }

  uint16_t round(double x) const {
    const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
    double a = std::fabs(x);
    if (a >= values_.back()) return sign | bits_.back();
    size_t hi = size_t(std::upper_bound(values_.begin(), values_.end(), a) - values_.begin());
    size_t lo = hi - 1;  // values_[lo] <= a < values_[hi]
    double dlo = a - values_[lo], dhi = values_[hi] - a;
    size_t pick = dlo < dhi ? lo : dhi < dlo ? hi : ((bits_[lo] & 1) == 0 ? lo : hi);
    return sign | bits_[pick];
  }

  // Midpoint between the i-th and (i+1)-th non-negative encodings (exact in double).
  double midpoint(size_t i) const { return (values_[i] + values_[i + 1]) / 2; }
  size_t count() const { return values_.size(); }

 private:
  std::vector<double> values_;
  std::vector<uint16_t> bits_;
};

// Exactly representable values convert to their known encodings, both directions.
TEST(HalfTest, ExactValues) {
  struct Case {
    float value;
    uint16_t half;
    uint16_t bf16;
  };
  for (auto c : std::vector<Case>{{0.0f, 0x0000, 0x0000},
                                  {1.0f, 0x3C00, 0x3F80},
                                  {-2.0f, 0xC000, 0xC000},
                                  {0.5f, 0x3800, 0x3F00},
                                  {1.5f, 0x3E00, 0x3FC0},
                                  {-0.375f, 0xB600, 0xBEC0},
                                  {1024.0f, 0x6400, 0x4480}}) {
    EXPECT_EQ(floatToHalfBits(c.value), c.half) << c.value;
    EXPECT_EQ(halfBitsToFloat(c.half), c.value) << c.value;
    EXPECT_EQ(floatToBFloat16Bits(c.value), c.bf16) << c.value;
    EXPECT_EQ(bfloat16BitsToFloat(c.bf16), c.value) << c.value;
    EXPECT_EQ(doubleToHalfBits(c.value), c.half) << c.value;
    EXPECT_EQ(doubleToBFloat16Bits(c.value), c.bf16) << c.value;
  }
  EXPECT_EQ(floatToHalfBits(65504.0f), 0x7BFF);         // largest finite half
  EXPECT_EQ(floatToHalfBits(0x1p-14f), 0x0400);         // smallest normal half
  EXPECT_EQ(halfBitsToFloat(0x3555), 0x1.554p-2f);      // 0.333...
  EXPECT_EQ(bfloat16BitsToFloat(0x7F7F), 0x1.FEp127f);  // largest finite bfloat16
}

// Half rounds to nearest with ties to even.
TEST(HalfTest, HalfRoundsTiesToEven) {
  EXPECT_EQ(floatToHalfBits(1.0f + 0x1p-11f), 0x3C00);             // tie, 1.0 is even
  EXPECT_EQ(floatToHalfBits(1.0f + 3 * 0x1p-11f), 0x3C02);         // tie, rounds up to even
  EXPECT_EQ(floatToHalfBits(1.0f + 0x1p-11f + 0x1p-20f), 0x3C01);  // above the tie
  EXPECT_EQ(floatToHalfBits(1.0f + 0x1p-11f - 0x1p-20f), 0x3C00);  // below the tie
  EXPECT_EQ(floatToHalfBits(-(1.0f + 3 * 0x1p-11f)), 0xBC02);
  EXPECT_EQ(doubleToHalfBits(1.0 + 0x1p-11), 0x3C00);
  EXPECT_EQ(doubleToHalfBits(1.0 + 3 * 0x1p-11), 0x3C02);
  // Rounding up across a binade boundary carries into the exponent.
  EXPECT_EQ(floatToHalfBits(2.0f - 0x1p-12f), 0x4000);
}

// BFloat16 rounds to nearest with ties to even.
TEST(HalfTest, BFloat16RoundsTiesToEven) {
  EXPECT_EQ(floatToBFloat16Bits(1.0f + 0x1p-8f), 0x3F80);
  EXPECT_EQ(floatToBFloat16Bits(1.0f + 3 * 0x1p-8f), 0x3F82);
  EXPECT_EQ(floatToBFloat16Bits(1.0f + 0x1p-8f + 0x1p-20f), 0x3F81);
  EXPECT_EQ(doubleToBFloat16Bits(1.0 + 0x1p-8), 0x3F80);
  EXPECT_EQ(doubleToBFloat16Bits(1.0 + 3 * 0x1p-8), 0x3F82);
  EXPECT_EQ(floatToBFloat16Bits(2.0f - 0x1p-10f), 0x4000);
}

// Values at or past the midpoint above the largest finite value become infinity.
TEST(HalfTest, OverflowToInfinity) {
  EXPECT_EQ(floatToHalfBits(65504.0f), 0x7BFF);
  EXPECT_EQ(floatToHalfBits(65519.0f), 0x7BFF);
  EXPECT_EQ(floatToHalfBits(65520.0f), 0x7C00);  // midpoint; the "next" value 2^16 is even
  EXPECT_EQ(floatToHalfBits(-65520.0f), 0xFC00);
  EXPECT_EQ(floatToHalfBits(1e6f), 0x7C00);
  EXPECT_EQ(doubleToHalfBits(65519.999), 0x7BFF);
  EXPECT_EQ(doubleToHalfBits(65520.0), 0x7C00);
  EXPECT_EQ(doubleToHalfBits(1e300), 0x7C00);
  EXPECT_EQ(doubleToHalfBits(-1e300), 0xFC00);
  EXPECT_EQ(floatToBFloat16Bits(std::numeric_limits<float>::max()), 0x7F80);
  EXPECT_EQ(floatToBFloat16Bits(0x1.FEp127f), 0x7F7F);
  EXPECT_EQ(doubleToBFloat16Bits(1e300), 0x7F80);
  EXPECT_EQ(doubleToBFloat16Bits(0x1.FF0p127), 0x7F80);  // midpoint above the largest finite
}

// Half subnormals are produced exactly and rounded with ties to even.
TEST(HalfTest, Subnormals) {
  EXPECT_EQ(floatToHalfBits(0x1p-24f), 0x0001);  // smallest subnormal
  EXPECT_EQ(halfBitsToFloat(0x0001), 0x1p-24f);
  EXPECT_EQ(floatToHalfBits(0x1p-25f), 0x0000);      // tie between 0 and 2^-24: 0 is even
  EXPECT_EQ(floatToHalfBits(-0x1p-25f), 0x8000);     // and keeps its sign
  EXPECT_EQ(floatToHalfBits(3 * 0x1p-25f), 0x0002);  // tie between 1 and 2 ulps: 2 is even
  EXPECT_EQ(floatToHalfBits(0x1p-25f + 0x1p-40f), 0x0001);
  EXPECT_EQ(floatToHalfBits(0x1p-26f), 0x0000);
  EXPECT_EQ(floatToHalfBits(0x3FFp-24f), 0x03FF);   // largest subnormal
  EXPECT_EQ(floatToHalfBits(0x3FF8p-28f), 0x0400);  // rounds up into the smallest normal
  EXPECT_EQ(doubleToHalfBits(0x1p-25), 0x0000);
  EXPECT_EQ(doubleToHalfBits(3 * 0x1p-25), 0x0002);
  EXPECT_EQ(doubleToHalfBits(1e-300), 0x0000);
  // bfloat16 keeps float's exponent range, so float subnormals map onto its subnormals.
  EXPECT_EQ(floatToBFloat16Bits(0x1p-133f), 0x0001);
  EXPECT_EQ(bfloat16BitsToFloat(0x0001), 0x1p-133f);
  EXPECT_EQ(floatToBFloat16Bits(0x1p-134f), 0x0000);
}

// NaN stays NaN in every direction, including NaNs whose payload lies in the dropped bits.
TEST(HalfTest, NaNStaysNaN) {
  EXPECT_TRUE(isHalfNaN(floatToHalfBits(kNaN)));
  EXPECT_TRUE(isHalfNaN(floatToHalfBits(-kNaN)));
  EXPECT_TRUE(isHalfNaN(doubleToHalfBits(std::nan(""))));
  EXPECT_TRUE(isBFloat16NaN(floatToBFloat16Bits(kNaN)));
  EXPECT_TRUE(isBFloat16NaN(doubleToBFloat16Bits(std::nan(""))));
  float low_payload_nan = std::bit_cast<float>(uint32_t(0x7F800001));
  ASSERT_TRUE(std::isnan(low_payload_nan));
  EXPECT_TRUE(isBFloat16NaN(floatToBFloat16Bits(low_payload_nan)));
  EXPECT_TRUE(isHalfNaN(floatToHalfBits(low_payload_nan)));
  EXPECT_TRUE(std::isnan(halfBitsToFloat(0x7E00)));
  EXPECT_TRUE(std::isnan(halfBitsToFloat(0x7C01)));
  EXPECT_TRUE(std::isnan(bfloat16BitsToFloat(0x7FC0)));
  EXPECT_TRUE(std::isnan(bfloat16BitsToFloat(0xFF81)));
}

// Infinities map to infinities of the same sign.
TEST(HalfTest, Infinities) {
  EXPECT_EQ(floatToHalfBits(kInf), 0x7C00);
  EXPECT_EQ(floatToHalfBits(-kInf), 0xFC00);
  EXPECT_EQ(halfBitsToFloat(0x7C00), kInf);
  EXPECT_EQ(halfBitsToFloat(0xFC00), -kInf);
  EXPECT_EQ(floatToBFloat16Bits(kInf), 0x7F80);
  EXPECT_EQ(floatToBFloat16Bits(-kInf), 0xFF80);
  EXPECT_EQ(bfloat16BitsToFloat(0xFF80), -kInf);
  EXPECT_EQ(doubleToHalfBits(-double(kInf)), 0xFC00);
  EXPECT_EQ(doubleToBFloat16Bits(double(kInf)), 0x7F80);
}

// Negative zero keeps its sign both ways.
TEST(HalfTest, NegativeZeroKeepsSign) {
  EXPECT_EQ(floatToHalfBits(-0.0f), 0x8000);
  EXPECT_EQ(doubleToHalfBits(-0.0), 0x8000);
  EXPECT_EQ(floatToBFloat16Bits(-0.0f), 0x8000);
  EXPECT_EQ(doubleToBFloat16Bits(-0.0), 0x8000);
  EXPECT_TRUE(std::signbit(halfBitsToFloat(0x8000)));
  EXPECT_TRUE(std::signbit(bfloat16BitsToFloat(0x8000)));
  EXPECT_EQ(halfBitsToFloat(0x8000), 0.0f);
}

// Every half bit pattern decodes to its exact value and re-encodes to itself (NaNs stay NaN).
TEST(HalfTest, ExhaustiveHalfRoundTrip) {
  int mismatches = 0;
  for (uint32_t i = 0; i <= 0xFFFF; ++i) {
    auto h = uint16_t(i);
    float f = halfBitsToFloat(h);
    if (isHalfNaN(h)) {
      mismatches += !std::isnan(f) || !isHalfNaN(floatToHalfBits(f));
      continue;
    }
    uint16_t magnitude = h & 0x7FFF;
    double expected = magnitude == 0x7C00 ? INFINITY : kHalfFormat.value(magnitude);
    if (h & 0x8000) expected = -expected;
    bool ok = double(f) == expected && std::signbit(f) == bool(h & 0x8000) &&
              floatToHalfBits(f) == h && doubleToHalfBits(double(f)) == h;
    if (!ok && ++mismatches < 10) ADD_FAILURE() << "half bits 0x" << std::hex << i;
  }
  EXPECT_EQ(mismatches, 0);
}

// Every bfloat16 bit pattern decodes to its exact value and re-encodes to itself.
TEST(HalfTest, ExhaustiveBFloat16RoundTrip) {
  int mismatches = 0;
  for (uint32_t i = 0; i <= 0xFFFF; ++i) {
    auto b = uint16_t(i);
    float f = bfloat16BitsToFloat(b);
    if (isBFloat16NaN(b)) {
      mismatches += !std::isnan(f) || !isBFloat16NaN(floatToBFloat16Bits(f)) ||
                    !isBFloat16NaN(doubleToBFloat16Bits(f));
      continue;
    }
    uint16_t magnitude = b & 0x7FFF;
    double expected = magnitude == 0x7F80 ? INFINITY : kBFloat16Format.value(magnitude);
    if (b & 0x8000) expected = -expected;
    bool ok = double(f) == expected && floatToBFloat16Bits(f) == b &&
              doubleToBFloat16Bits(double(f)) == b;
    if (!ok && ++mismatches < 10) ADD_FAILURE() << "bfloat16 bits 0x" << std::hex << i;
  }
  EXPECT_EQ(mismatches, 0);
}

// Random doubles (wide range, exact midpoints and their neighbours) round like the brute-force
// reference, for both formats and from both double and float.
TEST(HalfTest, MatchesBruteForceReference) {
  const Reference half_ref(kHalfFormat), bf16_ref(kBFloat16Format);
  std::mt19937_64 rng(1234);
  std::uniform_real_distribution<double> mantissa(1.0, 2.0);
  std::uniform_int_distribution<int> half_exp(-27, 17), bf16_exp(-136, 129);
  std::vector<double> inputs;
  for (int i = 0; i < 100000; ++i) {
    double sign = (rng() & 1) ? -1.0 : 1.0;
    inputs.push_back(sign * std::ldexp(mantissa(rng), half_exp(rng)));
    inputs.push_back(sign * std::ldexp(mantissa(rng), bf16_exp(rng)));
  }
  for (const Reference* ref : {&half_ref, &bf16_ref}) {
    std::uniform_int_distribution<size_t> index(0, ref->count() - 2);
    for (int i = 0; i < 20000; ++i) {
      double mid = ref->midpoint(index(rng));
      for (double x : {mid, std::nextafter(mid, 0.0), std::nextafter(mid, INFINITY)}) {
        inputs.push_back(x);
        inputs.push_back(-x);
      }
    }
  }
  int bad = 0;
  for (double x : inputs) {
    uint16_t h = half_ref.round(x), b = bf16_ref.round(x);
    bool ok = doubleToHalfBits(x) == h && doubleToBFloat16Bits(x) == b;
    if (std::fabs(x) <= std::numeric_limits<float>::max()) {  // float(x) is defined
      auto f = float(x);
      ok = ok && floatToHalfBits(f) == half_ref.round(f) &&
           floatToBFloat16Bits(f) == bf16_ref.round(f);
    }
    if (!ok && ++bad < 10) ADD_FAILURE() << "mismatch for " << std::hexfloat << x;
  }
  EXPECT_EQ(bad, 0);
}

// Random float bit patterns round to bfloat16 (the integer fast path) like the reference.
TEST(HalfTest, BFloat16FastPathMatchesReference) {
  const Reference ref(kBFloat16Format);
  std::mt19937 rng(99);
  int bad = 0;
  for (int i = 0; i < 300000; ++i) {
    auto f = std::bit_cast<float>(uint32_t(rng()));
    if (std::isnan(f)) continue;
    if (floatToBFloat16Bits(f) != ref.round(f) && ++bad < 10) {
      ADD_FAILURE() << "mismatch for " << std::hexfloat << f;
    }
  }
  EXPECT_EQ(bad, 0);
}

// double -> half rounds once: where double -> float -> half double-rounds, the direct result is
// the correctly rounded one.
TEST(HalfTest, NoDoubleRounding) {
  const Reference half_ref(kHalfFormat), bf16_ref(kBFloat16Format);
  // Just above the tie between 1 and 1 + 2^-10; the float conversion lands exactly on the tie.
  double x = 1.0 + 0x1p-11 + 0x1p-40;
  ASSERT_EQ(float(x), 1.0f + 0x1p-11f);
  EXPECT_EQ(floatToHalfBits(float(x)), 0x3C00);  // the double-rounded (wrong) answer
  EXPECT_EQ(doubleToHalfBits(x), 0x3C01);
  EXPECT_EQ(half_ref.round(x), 0x3C01);

  double y = 1.0 + 0x1p-8 + 0x1p-40;
  ASSERT_EQ(float(y), 1.0f + 0x1p-8f);
  EXPECT_EQ(floatToBFloat16Bits(float(y)), 0x3F80);
  EXPECT_EQ(doubleToBFloat16Bits(y), 0x3F81);
  EXPECT_EQ(bf16_ref.round(y), 0x3F81);

  // Same in the subnormal range: just above the tie between 0 and 2^-24.
  double z = 0x1p-25 + 0x1p-60;
  ASSERT_EQ(float(z), 0x1p-25f);
  EXPECT_EQ(floatToHalfBits(float(z)), 0x0000);
  EXPECT_EQ(doubleToHalfBits(z), 0x0001);
}

// The Half and BFloat16 wrappers convert through the same routines.
TEST(HalfTest, WrapperTypes) {
  EXPECT_EQ(Half(1.5f).bits, 0x3E00);
  EXPECT_EQ(float(Half::fromBits(0xC000)), -2.0f);
  EXPECT_EQ(BFloat16(1.5f).bits, 0x3FC0);
  EXPECT_EQ(float(BFloat16::fromBits(0xC000)), -2.0f);
}

}  // namespace
}  // namespace loom
