// SPDX-License-Identifier: Apache-2.0
// Tests of the 8-bit float conversions (float8.h): every encoding decoded from first principles,
// and float -> fp8 against a brute-force nearest-value search with torch's overflow rules.
#include "loom/tensor/float8.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "loom/tensor/data_type.h"
#include "loom/tensor/tensor.h"

namespace loom {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

struct Format {
  int exponent_bits;
  int mantissa_bits;
  bool e4m3fn;  // no infinity, only S.1111.111 is NaN

  uint8_t (*encode)(float);
  float (*decode)(uint8_t);

  int bias() const { return (1 << (exponent_bits - 1)) - 1; }
  bool isNaN(uint8_t b) const {
    if (e4m3fn) return (b & 0x7F) == 0x7F;
    return (b & 0x7C) == 0x7C && (b & 0x03) != 0;
  }
  bool isInf(uint8_t b) const { return !e4m3fn && (b & 0x7F) == 0x7C; }
  // The value of a finite encoding, from the field definitions.
  double value(uint8_t b) const {
    const int e = (b & 0x7F) >> mantissa_bits;
    const int m = b & ((1 << mantissa_bits) - 1);
    const double frac = double(m) / double(1 << mantissa_bits);
    const double v = e == 0 ? std::ldexp(frac, 1 - bias()) : std::ldexp(1.0 + frac, e - bias());
    return (b & 0x80) ? -v : v;
  }
  // The finite non-negative encodings in increasing order.
  std::vector<uint8_t> finite() const {
    std::vector<uint8_t> out;
    for (int b = 0; b < 0x80; ++b) {
      if (!isNaN(uint8_t(b)) && !isInf(uint8_t(b))) out.push_back(uint8_t(b));
    }
    return out;
  }
  double maxFinite() const { return value(finite().back()); }
  // Brute force: the nearest finite value, ties to the even mantissa; e4m3fn saturates past
  // its top, e5m2's rounding past its top lands on infinity, as in torch.
  uint8_t expected(float x) const {
    const uint8_t sign = std::signbit(x) ? 0x80 : 0;
    if (std::isnan(x)) return sign | 0x7F;
    const double a = std::fabs(double(x));
    if (e4m3fn && a >= 448.0) return sign | 0x7E;
    if (!e4m3fn && a >= 65536.0) return sign | 0x7C;
    std::vector<uint8_t> f = finite();
    const double top = maxFinite();
    const double next = top + std::ldexp(1.0, int(std::ilogb(top)) - mantissa_bits);
    if (a > top) {
      // Between the largest finite value and the next encoding: nearest, tie to even (the
      // largest finite mantissa is all ones, so a tie goes up).
      const double mid = (top + next) / 2;
      if (a < mid) return sign | f.back();
      return sign | uint8_t(f.back() + 1);
    }
    for (size_t i = 0; i + 1 < f.size(); ++i) {
      const double lo = value(f[i]), hi = value(f[i + 1]);
      if (a >= lo && a <= hi) {
        if (a == lo) return sign | f[i];
        if (a == hi) return sign | f[i + 1];
        const double mid = (lo + hi) / 2;
        if (a < mid) return sign | f[i];
        if (a > mid) return sign | f[i + 1];
        return sign | ((f[i] & 1) == 0 ? f[i] : f[i + 1]);
      }
    }
    return sign | f.back();
  }
};

const Format kE4M3{4, 3, true, floatToFloat8E4M3FNBits, float8E4M3FNBitsToFloat};
const Format kE5M2{5, 2, false, floatToFloat8E5M2Bits, float8E5M2BitsToFloat};

// Every one of the 256 encodings decodes to its field value (NaN and infinity where the format
// says), and encoding that value gives the same byte back (NaNs canonical: 0x7F with the sign).
TEST(Float8Test, EveryEncodingBothWays) {
  for (const Format* f : {&kE4M3, &kE5M2}) {
    for (int i = 0; i < 256; ++i) {
      const auto b = uint8_t(i);
      const float v = f->decode(b);
      if (f->isNaN(b)) {
        EXPECT_TRUE(std::isnan(v)) << i;
        EXPECT_EQ(f->encode(v) & 0x7F, 0x7F) << i;
        continue;
      }
      if (f->isInf(b)) {
        EXPECT_EQ(v, (b & 0x80) ? -kInf : kInf) << i;
      } else {
        EXPECT_EQ(double(v), f->value(b)) << i;
        EXPECT_EQ(std::signbit(v), (b & 0x80) != 0) << i;  // -0.0 included
      }
      EXPECT_EQ(f->encode(v), b) << i;
    }
  }
}

// Rounding: each midpoint between neighbours and the floats just either side of it, every
// encoding's own value nudged by one float ulp, and random floats over the whole range, against
// the brute-force nearest value.
TEST(Float8Test, RoundsToNearestEvenLikeBruteForce) {
  std::mt19937 rng(7);
  for (const Format* f : {&kE4M3, &kE5M2}) {
    std::vector<float> xs;
    std::vector<uint8_t> fin = f->finite();
    for (size_t i = 0; i + 1 < fin.size(); ++i) {
      const float mid = float((f->value(fin[i]) + f->value(fin[i + 1])) / 2);
      xs.insert(xs.end(), {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, kInf)});
    }
    for (uint8_t b : fin) {
      const float v = float(f->value(b));
      xs.insert(xs.end(), {v, std::nextafter(v, 0.0f), std::nextafter(v, kInf)});
    }
    std::uniform_real_distribution<float> exponent(-24.0f, 17.0f);
    for (int i = 0; i < 20000; ++i) xs.push_back(std::exp2(exponent(rng)));
    for (float x : xs) {
      EXPECT_EQ(int(f->encode(x)), int(f->expected(x))) << x;
      EXPECT_EQ(int(f->encode(-x)), int(f->expected(-x))) << -x;
    }
  }
}

// The edges torch defines: the largest finite values, the overflow rules, subnormals, -0.0, NaN.
TEST(Float8Test, EdgeValuesFollowTorch) {
  EXPECT_EQ(float8E4M3FNBitsToFloat(0x7E), 448.0f);
  EXPECT_EQ(floatToFloat8E4M3FNBits(448.0f), 0x7E);
  EXPECT_EQ(floatToFloat8E4M3FNBits(464.0f), 0x7E);
  EXPECT_EQ(floatToFloat8E4M3FNBits(465.0f), 0x7E);  // saturates (torch's cast)
  EXPECT_EQ(floatToFloat8E4M3FNBits(480.0f), 0x7E);
  EXPECT_EQ(floatToFloat8E4M3FNBits(-1e30f), 0xFE);
  EXPECT_EQ(floatToFloat8E4M3FNBits(kInf), 0x7E);  // no infinity: the largest finite
  EXPECT_EQ(floatToFloat8E4M3FNBits(-kInf), 0xFE);
  EXPECT_EQ(floatToFloat8E4M3FNBits(kNaN), 0x7F);
  EXPECT_EQ(floatToFloat8E4M3FNBits(-0.0f), 0x80);
  EXPECT_EQ(float8E4M3FNBitsToFloat(0x01), 0x1p-9f);   // smallest subnormal
  EXPECT_EQ(floatToFloat8E4M3FNBits(0x1p-10f), 0x00);  // half of it: tie to even 0
  EXPECT_EQ(floatToFloat8E4M3FNBits(0x1.000002p-10f), 0x01);
  EXPECT_EQ(float8E4M3FNBitsToFloat(0x08), 0x1p-6f);  // smallest normal

  EXPECT_EQ(float8E5M2BitsToFloat(0x7B), 57344.0f);
  EXPECT_EQ(floatToFloat8E5M2Bits(57344.0f), 0x7B);
  EXPECT_EQ(floatToFloat8E5M2Bits(61439.0f), 0x7B);
  EXPECT_EQ(floatToFloat8E5M2Bits(61440.0f), 0x7C);  // the tie goes up to infinity
  EXPECT_EQ(floatToFloat8E5M2Bits(1e30f), 0x7C);
  EXPECT_EQ(floatToFloat8E5M2Bits(-kInf), 0xFC);
  EXPECT_EQ(floatToFloat8E5M2Bits(kNaN), 0x7F);
  EXPECT_EQ(floatToFloat8E5M2Bits(-0.0f), 0x80);
  EXPECT_EQ(float8E5M2BitsToFloat(0x01), 0x1p-16f);
  EXPECT_EQ(floatToFloat8E5M2Bits(0x1p-17f), 0x00);
  EXPECT_EQ(floatToFloat8E5M2Bits(0x1.8p-17f), 0x01);
  EXPECT_EQ(float8E5M2BitsToFloat(0x04), 0x1p-14f);
}

// Tensors store doubles through float, as torch casts a float64 tensor: a double just above a
// tie that float rounds onto the tie then goes to even.
TEST(Float8Test, TensorStoresRoundThroughFloat) {
  const double just_above_tie = 1.0625 + 0x1p-40;  // float(...) == 1.0625, the e4m3 tie 1..1.125
  Tensor t = Tensor::empty({1}, DataType::Float8_e4m3fn);
  t.setDoubleLinear(0, just_above_tie);
  EXPECT_EQ(*t.dataAs<uint8_t>(), floatToFloat8E4M3FNBits(1.0625f));
  EXPECT_EQ(t.getDoubleLinear(0), 1.0);
  Tensor u = Tensor::empty({1}, DataType::Float8_e5m2);
  u.setDoubleLinear(0, -57344.0);
  EXPECT_EQ(*u.dataAs<uint8_t>(), 0xFB);
  EXPECT_EQ(dataTypeSize(DataType::Float8_e4m3fn), 1u);
  EXPECT_EQ(parseDataType("float8_e5m2"), DataType::Float8_e5m2);
  EXPECT_EQ(parseDataType(dataTypeName(DataType::Float8_e4m3fn)), DataType::Float8_e4m3fn);
}

}  // namespace
}  // namespace loom
