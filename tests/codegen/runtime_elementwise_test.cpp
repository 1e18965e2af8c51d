// SPDX-License-Identifier: Apache-2.0
// Per-thread helpers of the device runtime: Tensor layout, half/bfloat16, vector accesses, math.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "codegen/runtime_test_util.h"
#include "loom/tensor/half.h"
#include "user_error_of.h"

namespace loom::codegen {
namespace {

using testing::hostModule;

/// Host packing of loom::Tensor<float, 3> and loom::Tensor<int, 0>, as docs/runtime-library.md
/// specifies it.
struct Tensor3 {
  float* data;
  int64_t size[3];
  int64_t stride[3];
};
static_assert(sizeof(Tensor3) == 56 && alignof(Tensor3) == 8);
struct Tensor0 {
  int* data;
};

bool sameFloat(double got, double want, double relTol) {
  if (std::isnan(want)) return std::isnan(got);
  if (got == want) return true;  // infinities
  return std::fabs(got - want) <= relTol * std::fabs(want) + 1e-30;
}

struct ElementwiseRun {
  static constexpr int kN = 64;
  std::vector<float> in, back, vec, math;
  std::vector<uint16_t> h, b, h2;
  std::vector<double> din, dmath;
  std::vector<long long> fields;
  std::vector<float> tdata;

  ElementwiseRun() {
    const float base[16] = {2.5f, -2.5f, 0.5f, 1.5f, -0.0f, std::nanf(""), 3.0f, -7.25f,
                            1e-3f, 100.0f, -100.0f, 65504.0f, 1e-6f, 0.1f, 5.5f, -3.75f};
    for (int i = 0; i < kN; ++i) in.push_back(base[i % 16] * static_cast<float>(1 + i / 16 * 2));
    for (int i = 0; i < kN; ++i) din.push_back(static_cast<double>(in[i]) * 1.25);
    back.assign(2 * kN, -1);
    vec.assign(kN, -1);
    math.assign(16 * kN, -1);
    dmath.assign(8 * kN, -1);
    h.assign(kN, 0xdead);
    b.assign(kN, 0xdead);
    h2.assign(kN, 0xdead);
    fields.assign(8, -1);
    tdata.resize(100);
    for (int i = 0; i < 100; ++i) tdata[i] = static_cast<float>(i) + 0.5f;
    Tensor3 t{tdata.data(), {4, 5, 6}, {30, 1, 5}};
    int scalar = 42;
    Tensor0 t0{&scalar};
    long long* f = fields.data();
    const float* p = in.data();
    uint16_t *hp = h.data(), *bp = b.data(), *h2p = h2.data();
    float *bk = back.data(), *v = vec.data(), *m = math.data();
    const double* dp = din.data();
    double* dm = dmath.data();
    int n = kN;
    void* args[] = {&t, &t0, &f, &p, &hp, &bp, &bk, &v, &h2p, &m, &dp, &dm, &n};
    hostModule(testing::kElementwiseKernel).launch({1}, {kN}, 0, args);
  }
};

const ElementwiseRun& run() {
  static const ElementwiseRun r;
  return r;
}

// A Tensor parameter packed on the host as {data, size[N], stride[N]} (int64, no padding) reads
// back the same sizes and strides, and operator[] indexes the data pointer; rank 0 is data only.
TEST(RuntimeTypes, TensorLayoutMatchesHostPacking) {
  const auto& r = run();
  EXPECT_EQ(r.fields, (std::vector<long long>{4, 5, 6, 30, 1, 5, 40, 42}));
}

// storeFromFloat/loadAsFloat round to nearest even exactly like loom::Half/BFloat16 on the host,
// and 16-byte vector loads/stores of floats and halves move whole chunks.
TEST(RuntimeTypes, HalfAndBFloat16ConversionsAndVectorAccesses) {
  const auto& r = run();
  for (int i = 0; i < ElementwiseRun::kN; ++i) {
    EXPECT_EQ(r.h[i], floatToHalfBits(r.in[i])) << "half of " << r.in[i];
    EXPECT_EQ(r.b[i], floatToBFloat16Bits(r.in[i])) << "bfloat16 of " << r.in[i];
    EXPECT_TRUE(sameFloat(r.back[2 * i], halfBitsToFloat(r.h[i]), 0)) << i;
    EXPECT_TRUE(sameFloat(r.back[2 * i + 1], bfloat16BitsToFloat(r.b[i]), 0)) << i;
    EXPECT_TRUE(sameFloat(r.vec[i], 2.0 * r.in[i], 0)) << i;
    EXPECT_EQ(r.h2[i], floatToHalfBits(2.0f * halfBitsToFloat(r.h[i]))) << i;
  }
}

// loom::misalignment counts the elements past the last boundary of N elements (address /
// sizeof(T) mod N), and a vector access at an address its size does not divide stops the launch
// on the host backend (a GPU faults with CUDA_ERROR_MISALIGNED_ADDRESS) instead of reading or
// writing there as x86 would.
TEST(RuntimeTypes, MisalignmentAndMisalignedVectorAccessesTrap) {
  const auto& m = hostModule(testing::kAlignmentKernel);
  alignas(16) float f[40] = {};
  alignas(16) uint16_t b[40] = {};
  std::vector<int> out(65, -1);
  int* o = out.data();
  float* fp = f;
  uint16_t* bp = b;
  int mode = 0;
  void* args[] = {&o, &fp, &bp, &mode};
  m.launch({1}, {32}, 0, args);
  for (int i = 0; i < 32; ++i) {
    EXPECT_EQ(out[size_t(i)], i % 4) << i;
    EXPECT_EQ(out[32 + size_t(i)], i % 8) << i;
  }
  for (int bad : {1, 2}) {
    mode = bad;
    const std::string msg = test::userErrorOf([&] { m.launch({1}, {32}, 0, args); });
    EXPECT_NE(msg.find("kernel trapped: misaligned vector access"), std::string::npos)
        << "mode " << bad << ": " << msg;
  }
  EXPECT_EQ(f[1], 0.0f) << "the misaligned store must not happen";
}

// The math helpers follow PyTorch: NaN-propagating max/min, round half to even, sign, fmod with
// the dividend's sign, remainder with the divisor's, and the activation formulas.
TEST(RuntimeMath, FloatAndIntegerHelpersFollowTorchSemantics) {
  const auto& r = run();
  const int n = ElementwiseRun::kN;
  for (int i = 0; i < n; ++i) {
    const float x = r.in[i], y = r.in[(i + 1) % n];
    const float* m = &r.math[16 * i];
    const bool anyNan = std::isnan(x) || std::isnan(y);
    const double sig = 1.0 / (1.0 + std::exp(-static_cast<double>(x)));
    const double cdf = 0.5 * std::erfc(-x / std::sqrt(2.0));
    // 0.5 (1 + tanh(u)) == 1 / (1 + e^-2u), the form without cancellation for negative u.
    const double u = std::sqrt(2.0 / M_PI) * (x + 0.044715 * std::pow(x, 3.0));
    float rem = std::fmod(x, y);
    if (rem != 0 && ((rem < 0) != (y < 0))) rem += y;
    const std::string at = "x=" + std::to_string(x) + " y=" + std::to_string(y);
    EXPECT_TRUE(sameFloat(m[0], anyNan ? NAN : std::max(x, y), 0)) << at;
    EXPECT_TRUE(sameFloat(m[1], anyNan ? NAN : std::min(x, y), 0)) << at;
    EXPECT_TRUE(sameFloat(m[2], std::nearbyint(x), 0)) << at;
    EXPECT_TRUE(sameFloat(m[3], std::isnan(x) ? NAN : (x > 0) - (x < 0), 0)) << at;
    EXPECT_TRUE(sameFloat(m[4], sig, 1e-6)) << at;
    EXPECT_TRUE(sameFloat(m[5], x * sig, 1e-6)) << at;
    EXPECT_TRUE(sameFloat(m[6], x * cdf, 1e-5)) << at;  // erfc is steep in its tail
    // e^-2u magnifies float rounding of u (|2u| up to about 40 here), hence the looser bound.
    EXPECT_TRUE(sameFloat(m[7], x / (1.0 + std::exp(-2.0 * u)), 1e-4)) << at;
    const double grad = cdf + x * std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI);
    EXPECT_TRUE(sameFloat(m[8], grad, 1e-5)) << at << " got " << m[8] << " want " << grad;
    EXPECT_TRUE(sameFloat(m[9], std::fmod(x, y), 0)) << at;
    EXPECT_TRUE(sameFloat(m[10], rem, 0)) << at;
    EXPECT_TRUE(sameFloat(m[11], x > y ? x : y, 0)) << at;
    EXPECT_EQ(m[12], static_cast<float>((i + 5 + 3) / 4)) << i;
    EXPECT_EQ(m[13], static_cast<float>((i - 3) % 2)) << i;
    EXPECT_EQ(m[14], static_cast<float>(((i - 3) % 2 + 2) % 2)) << i;
    EXPECT_EQ(m[15], static_cast<float>(std::max(i, 3))) << i;
  }
  // Spot checks that pin the semantics independently of the formulas above.
  EXPECT_EQ(r.math[16 * 0 + 2], 2.0f);    // round(2.5) == 2
  EXPECT_EQ(r.math[16 * 1 + 2], -2.0f);   // round(-2.5) == -2
  EXPECT_EQ(r.math[16 * 3 + 2], 2.0f);    // round(1.5) == 2
  EXPECT_TRUE(std::isnan(r.math[16 * 4 + 0]));  // max(-0.0, NaN) is NaN, not -0.0
}

// The double overloads compute in double.
TEST(RuntimeMath, DoubleOverloads) {
  const auto& r = run();
  for (int i = 0; i < ElementwiseRun::kN; ++i) {
    const double x = r.din[i];
    const double* m = &r.dmath[8 * i];
    const double sig = 1.0 / (1.0 + std::exp(-x));
    EXPECT_TRUE(sameFloat(m[0], std::isnan(x) ? NAN : std::max(x, 0.5), 0)) << x;
    EXPECT_TRUE(sameFloat(m[1], std::nearbyint(x), 0)) << x;
    EXPECT_TRUE(sameFloat(m[2], sig, 1e-14)) << x;
    EXPECT_TRUE(sameFloat(m[3], x * sig, 1e-14)) << x;
    EXPECT_TRUE(sameFloat(m[4], 0.5 * x * std::erfc(-x / std::sqrt(2.0)), 1e-14)) << x;
    EXPECT_TRUE(sameFloat(m[6], std::fmod(x, 0.75), 0)) << x;
    EXPECT_TRUE(sameFloat(m[7], std::isnan(x) ? NAN : (x > 0) - (x < 0), 0)) << x;
  }
}

}  // namespace
}  // namespace loom::codegen
