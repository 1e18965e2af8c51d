// SPDX-License-Identifier: Apache-2.0
// The 8-bit floats (issue 36: Float8_e4m3fn, Float8_e5m2) end to end: casts into them from f32,
// f64, f16, bf16 and integers, and out of them to every floating type, bit for bit against
// float8.h (the conversions torch defines) in the reference evaluator and in the kernels, every
// one of the 256 encodings included; arithmetic and reductions on them computed in f32 against
// the reference; constants of the type. Outputs poisoned. Built twice: host backend (emu) and
// CUDA (gpu), whose runtime library has its own copy of the conversions (runtime/types.cuh).
#include "loom/tensor/float8.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "loom/eval/compare.h"
#include "loom/eval/reference_evaluator.h"
#include "loom/ir/ir.h"
#include "loom/ops/ops.h"
#include "loom/runtime/fusion_executor_cache.h"
#include "loom/tensor/half.h"
#include "runtime/runtime_test_backend.h"

namespace loom::runtime {
namespace {

using ir::Fusion;
using ir::FusionGuard;
using ir::IrBuilder;
using ir::TensorView;
using Args = std::vector<eval::Argument>;

constexpr DataType kE4M3 = DataType::Float8_e4m3fn;
constexpr DataType kE5M2 = DataType::Float8_e5m2;

uint8_t encode(DataType dt, float f) {
  return dt == kE4M3 ? floatToFloat8E4M3FNBits(f) : floatToFloat8E5M2Bits(f);
}
float decode(DataType dt, uint8_t b) {
  return dt == kE4M3 ? float8E4M3FNBitsToFloat(b) : float8E5M2BitsToFloat(b);
}

template <typename T>
Tensor tensorOf(const std::vector<T>& values, DataType dt) {
  Tensor t = Tensor::empty({int64_t(values.size())}, dt);
  EXPECT_EQ(dataTypeSize(dt), sizeof(T));
  std::memcpy(t.data(), values.data(), values.size() * sizeof(T));
  return t;
}

template <typename T>
std::vector<T> valuesOf(const Tensor& t) {
  const Tensor dense = t.contiguous();
  EXPECT_EQ(dataTypeSize(t.dtype()), sizeof(T));
  std::vector<T> out(size_t(dense.numel()));
  std::memcpy(out.data(), dense.data(), out.size() * sizeof(T));
  return out;
}

// Floats that exercise every rounding case of both formats: each encoding's value and its
// neighbours one float ulp away, each midpoint and its neighbours, the overflow thresholds,
// infinities, NaN, signed zeros, and random values over the whole exponent range.
std::vector<float> probeFloats() {
  std::vector<float> xs;
  for (DataType dt : {kE4M3, kE5M2}) {
    std::vector<float> vals;
    for (int b = 0; b < 0x80; ++b) {
      const float v = decode(dt, uint8_t(b));
      if (std::isfinite(v)) vals.push_back(v);
    }
    for (size_t i = 0; i < vals.size(); ++i) {
      const float v = vals[i];
      xs.insert(xs.end(), {v, std::nextafter(v, 0.0f), std::nextafter(v, 1e30f)});
      if (i + 1 < vals.size()) {
        const float mid = (v + vals[i + 1]) / 2;  // exact: both have few bits
        xs.insert(xs.end(), {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e30f)});
      }
    }
  }
  const float inf = std::numeric_limits<float>::infinity();
  xs.insert(xs.end(), {448.5f, 464.0f, 465.0f, 479.0f, 480.0f, 1e6f, 61439.0f, 61440.0f, 65536.0f,
                       1e30f, inf, std::nanf(""), 0.0f, -0.0f});
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> exponent(-26.0f, 18.0f);
  for (int i = 0; i < 2000; ++i) xs.push_back(std::exp2(exponent(rng)));
  const size_t n = xs.size();
  for (size_t i = 0; i < n; ++i) xs.push_back(-xs[i]);
  return xs;
}

bool sameFloat(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || (a == b && std::signbit(a) == std::signbit(b));
}

class Float8Test : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = loom::test::backendUnavailable(testBackend())) GTEST_SKIP() << *why;
  }
  // The reference evaluator's and the kernels' outputs for `args`.
  static std::pair<std::vector<Tensor>, std::vector<Tensor>> run(std::unique_ptr<Fusion> f,
                                                                 const Args& args) {
    std::vector<Tensor> reference = eval::evaluateFusion(*f, args);
    FusionExecutorCache cache(std::move(f), poisonedOptions());
    std::vector<Tensor> kernels = cache.run(args);
    return {std::move(reference), std::move(kernels)};
  }
};

// f32 -> fp8 rounds to nearest even with torch's overflow rules, bit for bit.
TEST_F(Float8Test, CastsFromFloat32AreBitExact) {
  const std::vector<float> xs = probeFloats();
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x =
        ops::TensorBuilder().shape({int64_t(xs.size())}).dtype(DataType::Float32).build();
    f->addInput(x);
    f->addOutput(ops::cast(x, kE4M3));
    f->addOutput(ops::cast(x, kE5M2));
  }
  auto [reference, kernels] = run(std::move(f), {tensorOf(xs, DataType::Float32)});
  for (int o = 0; o < 2; ++o) {
    const DataType dt = o == 0 ? kE4M3 : kE5M2;
    std::vector<uint8_t> want;
    for (float x : xs) want.push_back(encode(dt, x));
    EXPECT_EQ(reference[o].dtype(), dt);
    EXPECT_EQ(kernels[o].dtype(), dt);
    EXPECT_EQ(valuesOf<uint8_t>(reference[o]), want) << "reference " << dt;
    const std::vector<uint8_t> got = valuesOf<uint8_t>(kernels[o]);
    for (size_t i = 0; i < xs.size(); ++i) {
      EXPECT_EQ(int(got[i]), int(want[i])) << "kernel " << dt << " of " << xs[i];
    }
  }
}

// Every encoding widens exactly to f32, f64, f16 and bf16 (f16 and bf16 round the e4m3fn/e5m2
// values exactly: both hold them), and converts to the other 8-bit type through float.
TEST_F(Float8Test, EveryEncodingCastsOutExactly) {
  std::vector<uint8_t> bytes(256);
  for (int i = 0; i < 256; ++i) bytes[size_t(i)] = uint8_t(i);
  for (DataType dt : {kE4M3, kE5M2}) {
    const DataType other = dt == kE4M3 ? kE5M2 : kE4M3;
    auto f = std::make_unique<Fusion>();
    {
      FusionGuard g(f.get());
      TensorView* x = ops::TensorBuilder().shape({256}).dtype(dt).build();
      f->addInput(x);
      f->addOutput(ops::cast(x, DataType::Float32));
      f->addOutput(ops::cast(x, DataType::Float64));
      f->addOutput(ops::cast(x, DataType::Float16));
      f->addOutput(ops::cast(x, DataType::BFloat16));
      f->addOutput(ops::cast(x, other));
    }
    auto [reference, kernels] = run(std::move(f), {tensorOf(bytes, dt)});
    for (const auto* outs : {&reference, &kernels}) {
      const char* who = outs == &reference ? "reference" : "kernel";
      const auto f32 = valuesOf<float>((*outs)[0]);
      const auto f64 = valuesOf<double>((*outs)[1]);
      const auto f16 = valuesOf<uint16_t>((*outs)[2]);
      const auto bf16 = valuesOf<uint16_t>((*outs)[3]);
      const auto to_other = valuesOf<uint8_t>((*outs)[4]);
      for (int i = 0; i < 256; ++i) {
        const float v = decode(dt, uint8_t(i));
        EXPECT_TRUE(sameFloat(f32[size_t(i)], v)) << who << " " << dt << " byte " << i;
        EXPECT_TRUE(sameFloat(float(f64[size_t(i)]), v)) << who << " f64 byte " << i;
        EXPECT_TRUE(sameFloat(halfBitsToFloat(f16[size_t(i)]), v)) << who << " f16 byte " << i;
        EXPECT_TRUE(sameFloat(bfloat16BitsToFloat(bf16[size_t(i)]), v))
            << who << " bf16 byte " << i;
        EXPECT_EQ(int(to_other[size_t(i)]), int(encode(other, v)))
            << who << " " << dt << " -> " << other << " byte " << i;
      }
    }
  }
}

// f64 and integers convert through float (torch's rule): a double just above a tie that float
// rounds onto the tie goes to even; 465 (an integer) saturates to 448 in e4m3fn; f16/bf16 widen
// exactly.
TEST_F(Float8Test, CastsFromDoublesIntegersAndHalvesGoThroughFloat) {
  const std::vector<double> ds{1.0625 + 0x1p-40,
                               -1.0625 - 0x1p-40,
                               448.0,
                               464.0,
                               465.0,
                               61439.9,
                               1e300,
                               -0.0,
                               0x1p-10 + 0x1p-60,
                               3.1};
  const std::vector<int64_t> is{465, -448, 3, 0, 100000, 57344, 17, -1};
  const std::vector<float> hs{0.5f, 300.0f, 1000.0f, -0.099975586f, 6.1035156e-05f, 7.0f};
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* d =
        ops::TensorBuilder().shape({int64_t(ds.size())}).dtype(DataType::Float64).build();
    TensorView* i = ops::TensorBuilder().shape({int64_t(is.size())}).dtype(DataType::Int64).build();
    TensorView* h =
        ops::TensorBuilder().shape({int64_t(hs.size())}).dtype(DataType::Float16).build();
    f->addInput(d);
    f->addInput(i);
    f->addInput(h);
    for (DataType dt : {kE4M3, kE5M2}) {
      f->addOutput(ops::cast(d, dt));
      f->addOutput(ops::cast(i, dt));
      f->addOutput(ops::cast(h, dt));
    }
  }
  std::vector<uint16_t> hbits;
  for (float v : hs) hbits.push_back(floatToHalfBits(v));
  auto [reference, kernels] =
      run(std::move(f), {tensorOf(ds, DataType::Float64), tensorOf(is, DataType::Int64),
                         tensorOf(hbits, DataType::Float16)});
  for (const auto* outs : {&reference, &kernels}) {
    const char* who = outs == &reference ? "reference" : "kernel";
    for (int k = 0; k < 2; ++k) {
      const DataType dt = k == 0 ? kE4M3 : kE5M2;
      std::vector<uint8_t> wd, wi, wh;
      for (double v : ds) wd.push_back(encode(dt, float(v)));
      for (int64_t v : is) wi.push_back(encode(dt, float(v)));
      for (uint16_t b : hbits) wh.push_back(encode(dt, halfBitsToFloat(b)));
      EXPECT_EQ(valuesOf<uint8_t>((*outs)[size_t(3 * k)]), wd) << who << " f64 -> " << dt;
      EXPECT_EQ(valuesOf<uint8_t>((*outs)[size_t(3 * k + 1)]), wi) << who << " i64 -> " << dt;
      EXPECT_EQ(valuesOf<uint8_t>((*outs)[size_t(3 * k + 2)]), wh) << who << " f16 -> " << dt;
    }
  }
  EXPECT_EQ(encode(kE4M3, float(465)), 0x7E);
}

// Arithmetic on fp8 operands computes in f32 and gives f32 (as on the 16-bit floats, nvFuser's
// rule; a cast rounds once back to fp8); sums accumulate in f32; constants of the type are its
// rounded value. Against the reference evaluator, within fp8's tolerance once cast back.
TEST_F(Float8Test, ArithmeticAndReductionsComputeInFloat) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-4.0f, 4.0f);
  for (DataType dt : {kE4M3, kE5M2}) {
    Tensor a = Tensor::empty({6, 40}, dt), b = Tensor::empty({6, 40}, dt);
    Tensor c = Tensor::empty({6, 40}, DataType::Float32);
    for (int64_t i = 0; i < 240; ++i) {
      a.dataAs<uint8_t>()[i] = encode(dt, u(rng));
      b.dataAs<uint8_t>()[i] = encode(dt, u(rng));
      c.dataAs<float>()[i] = u(rng);
    }
    auto f = std::make_unique<Fusion>();
    {
      FusionGuard g(f.get());
      TensorView* x = ops::TensorBuilder().shape({6, 40}).dtype(dt).build();
      TensorView* y = ops::TensorBuilder().shape({6, 40}).dtype(dt).build();
      TensorView* z = ops::TensorBuilder().shape({6, 40}).dtype(DataType::Float32).build();
      f->addInput(x);
      f->addInput(y);
      f->addInput(z);
      TensorView* xy = ops::mul(ops::add(x, y), x);
      EXPECT_EQ(xy->dtype(), DataType::Float32);
      f->addOutput(ops::cast(xy, dt));
      f->addOutput(ops::add(x, z));
      f->addOutput(ops::cast(ops::add(x, IrBuilder::constant(0.1)), dt));
      f->addOutput(ops::cast(ops::sum(x, {1}), dt));
      f->addOutput(ops::max(y, {1}));
      f->addOutput(ops::exp(x));
      f->addOutput(ops::add(x, ops::full({6, 40}, IrBuilder::constant(3.3), dt)));
    }
    auto [reference, kernels] = run(std::move(f), {a, b, c});
    ASSERT_EQ(kernels.size(), 7u);
    for (size_t o = 0; o < kernels.size(); ++o) {
      EXPECT_EQ(kernels[o].dtype(), reference[o].dtype());
      // One unit in the last place of an 8-bit result: f32 computing vs the reference's double
      // may fall either side of a rounding boundary.
      const eval::Tolerance tol = isFloat8Type(reference[o].dtype())
                                      ? eval::Tolerance{dt == kE4M3 ? 0x1p-3 : 0x1p-2, 1e-6}
                                      : eval::defaultTolerance(reference[o].dtype());
      if (auto err = eval::expectClose(kernels[o], reference[o], tol, "output")) {
        ADD_FAILURE() << dt << " output " << o << ": " << *err;
      }
    }
    EXPECT_EQ(reference[4].dtype(), dt);  // max keeps the type, and is exact
    EXPECT_EQ(valuesOf<uint8_t>(kernels[4]), valuesOf<uint8_t>(reference[4])) << dt;
    // The constant 3.3 as an fp8 tensor is its rounded value: 3.25 (e4m3fn) or 3.5 (e5m2).
    const float c33 = decode(dt, encode(dt, 3.3f));
    EXPECT_EQ(c33, dt == kE4M3 ? 3.25f : 3.5f);
    EXPECT_EQ(valuesOf<float>(kernels[6])[0], decode(dt, a.dataAs<uint8_t>()[0]) + c33) << dt;
  }
}

}  // namespace
}  // namespace loom::runtime
