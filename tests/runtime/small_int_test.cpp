// SPDX-License-Identifier: Apache-2.0
// The 8- and 16-bit and unsigned integer types (issue 36: i8, i16, u8, u16, u32, u64) end to end:
// arithmetic wrapping as two's complement, division and remainders defined for every operand,
// bitwise ops and shifts (logical right shift for unsigned types), neg and abs, comparisons and
// where, casts from floats (negative ones to unsigned types wrap, as torch on the CPU) and to
// f64, sums (in i64) and max reductions. Each output is checked exactly against the same
// arithmetic done here in the C++ type itself, in the reference evaluator and in the kernels of
// the automatic path, outputs poisoned. Built twice: host backend (emu) and CUDA (gpu).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <type_traits>
#include <vector>

#include "loom/eval/reference_evaluator.h"
#include "loom/ir/ir.h"
#include "loom/ops/ops.h"
#include "loom/runtime/fusion_executor_cache.h"
#include "runtime/runtime_test_backend.h"

namespace loom::runtime {
namespace {

using ir::Fusion;
using ir::FusionGuard;
using ir::IrBuilder;
using ir::TensorView;
using Args = std::vector<eval::Argument>;

template <typename T>
constexpr DataType dtypeOf() {
  if constexpr (std::is_same_v<T, int8_t>) return DataType::Int8;
  if constexpr (std::is_same_v<T, int16_t>) return DataType::Int16;
  if constexpr (std::is_same_v<T, uint8_t>) return DataType::UInt8;
  if constexpr (std::is_same_v<T, uint16_t>) return DataType::UInt16;
  if constexpr (std::is_same_v<T, uint32_t>) return DataType::UInt32;
  if constexpr (std::is_same_v<T, uint64_t>) return DataType::UInt64;
  if constexpr (std::is_same_v<T, int64_t>) return DataType::Int64;
  if constexpr (std::is_same_v<T, double>) return DataType::Float64;
}

template <typename T>
Tensor tensorOf(const std::vector<T>& values) {
  Tensor t = Tensor::empty({int64_t(values.size())}, dtypeOf<T>());
  std::memcpy(t.data(), values.data(), values.size() * sizeof(T));
  return t;
}

template <typename T>
std::vector<T> valuesOf(const Tensor& t) {
  EXPECT_EQ(t.dtype(), dtypeOf<T>());
  const Tensor dense = t.contiguous();
  std::vector<T> out(size_t(dense.numel()));
  std::memcpy(out.data(), dense.data(), out.size() * sizeof(T));
  return out;
}

// The ops' semantics, written in T (docs/ops.md, "Integer types").
template <typename T>
struct Expect {
  static constexpr bool kSigned = std::is_signed_v<T>;
  static constexpr int kBits = int(sizeof(T) * 8);
  static T wrap(uint64_t v) { return T(v); }  // modular (C++20)
  static bool negative(T v) {
    if constexpr (kSigned) return v < 0;
    return false;
  }
  static T add(T a, T b) { return wrap(uint64_t(a) + uint64_t(b)); }
  static T sub(T a, T b) { return wrap(uint64_t(a) - uint64_t(b)); }
  static T mul(T a, T b) { return wrap(uint64_t(a) * uint64_t(b)); }
  static T div(T a, T b) {
    if (b == 0) return 0;
    if constexpr (kSigned) return wrap(uint64_t(int64_t(a) / int64_t(b)));
    return T(a / b);
  }
  static T fmod(T a, T b) {
    if (b == 0) return 0;
    if constexpr (kSigned) return T(int64_t(a) % int64_t(b));
    return T(a % b);
  }
  static T remainder(T a, T b) {
    const T r = fmod(a, b);
    if constexpr (kSigned) {
      if (r != 0 && (negative(r) != negative(b))) return add(r, b);
    }
    return r;
  }
  static T shl(T a, T b) {
    if (negative(b) || uint64_t(b) >= uint64_t(kBits)) return 0;
    return wrap(uint64_t(a) << b);
  }
  static T shr(T a, T b) {  // arithmetic for signed, logical for unsigned types
    if (negative(b) || uint64_t(b) >= uint64_t(kBits)) return negative(a) ? T(-1) : T(0);
    return T(a >> b);
  }
  static T neg(T a) { return wrap(0 - uint64_t(a)); }
  static T abs(T a) {
    return negative(a) ? neg(a) : a;
  }
};

// Edge values of T: its limits, 0, 1, and the values of -1, -2 and 2^(bits-1) in T.
template <typename T>
std::vector<T> edgeValues() {
  using L = std::numeric_limits<T>;
  return {L::min(), L::max(), T(0), T(1), T(-1), T(-2), T(L::max() / 3), T(L::min() + 1),
          T(5),     T(7)};
}
template <typename T>
std::vector<T> divisors() {
  using L = std::numeric_limits<T>;
  return {T(-1), T(0), T(3), L::max(), T(-2), L::min(), T(1), T(2), T(-7), T(L::max() - 1)};
}
template <typename T>
std::vector<T> shiftCounts() {  // in and out of [0, width), negative ones for signed types
  return {T(1), T(0), T(3), T(sizeof(T) * 8 - 1), T(sizeof(T) * 8), T(-1), T(2), T(9), T(4),
          T(sizeof(T) * 8 + 2)};
}

template <typename T>
class SmallIntTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = loom::test::backendUnavailable(testBackend())) GTEST_SKIP() << *why;
  }

  // Runs `f` on `args` by the reference evaluator and the kernels; both must give `want`.
  template <typename Out>
  void check(std::unique_ptr<Fusion> f, const Args& args,
             const std::vector<std::vector<Out>>& want) {
    const std::vector<Tensor> reference = eval::evaluateFusion(*f, args);
    FusionExecutorCache cache(std::move(f), poisonedOptions());
    const std::vector<Tensor> kernels = cache.run(args);
    ASSERT_EQ(reference.size(), want.size());
    ASSERT_EQ(kernels.size(), want.size());
    for (size_t o = 0; o < want.size(); ++o) {
      EXPECT_EQ(valuesOf<Out>(reference[o]), want[o]) << "reference, output " << o;
      EXPECT_EQ(valuesOf<Out>(kernels[o]), want[o]) << "kernel, output " << o;
    }
  }
};

using SmallIntTypes = ::testing::Types<int8_t, int16_t, uint8_t, uint16_t, uint32_t, uint64_t>;
TYPED_TEST_SUITE(SmallIntTest, SmallIntTypes);

// Every binary and unary op of the integers on edge values, in T: overflow wraps, division by
// zero gives 0, the most negative value divided by -1 itself, unsigned right shifts are
// logical, neg of an unsigned value wraps and abs is the identity.
TYPED_TEST(SmallIntTest, ArithmeticBitwiseAndShifts) {
  using T = TypeParam;
  using E = Expect<T>;
  const DataType dt = dtypeOf<T>();
  const std::vector<T> xs = edgeValues<T>();
  const std::vector<T> ys = divisors<T>();
  const std::vector<T> ss = shiftCounts<T>();
  std::vector<std::function<T(T, T, T)>> expect;
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    const int64_t n = int64_t(xs.size());
    TensorView* x = ops::TensorBuilder().shape({n}).dtype(dt).build();
    TensorView* y = ops::TensorBuilder().shape({n}).dtype(dt).build();
    TensorView* s = ops::TensorBuilder().shape({n}).dtype(dt).build();
    f->addInput(x);
    f->addInput(y);
    f->addInput(s);
    auto out = [&](TensorView* t, std::function<T(T, T, T)> fn) {
      ASSERT_EQ(t->dtype(), dt) << t->toString();
      f->addOutput(t);
      expect.push_back(std::move(fn));
    };
    out(ops::add(x, y), [](T a, T b, T) { return E::add(a, b); });
    out(ops::sub(x, y), [](T a, T b, T) { return E::sub(a, b); });
    out(ops::mul(x, y), [](T a, T b, T) { return E::mul(a, b); });
    out(ops::cDiv(x, y), [](T a, T b, T) { return E::div(a, b); });
    out(ops::fmod(x, y), [](T a, T b, T) { return E::fmod(a, b); });
    out(ops::remainder(x, y), [](T a, T b, T) { return E::remainder(a, b); });
    out(ops::bitwiseAnd(x, y), [](T a, T b, T) { return T(a & b); });
    out(ops::bitwiseOr(x, y), [](T a, T b, T) { return T(a | b); });
    out(ops::bitwiseXor(x, y), [](T a, T b, T) { return T(a ^ b); });
    out(ops::bitwiseNot(x), [](T a, T, T) { return T(~a); });
    out(ops::bitwiseLeftShift(x, s), [](T a, T, T c) { return E::shl(a, c); });
    out(ops::bitwiseRightShift(x, s), [](T a, T, T c) { return E::shr(a, c); });
    out(ops::neg(x), [](T a, T, T) { return E::neg(a); });
    out(ops::abs(x), [](T a, T, T) { return E::abs(a); });
    out(ops::maximum(x, y), [](T a, T b, T) { return a > b ? a : b; });
    out(ops::minimum(x, y), [](T a, T b, T) { return a < b ? a : b; });
    out(ops::where(ops::gt(x, y), x, y), [](T a, T b, T) { return a > b ? a : b; });
    // A Python-style number keeps the tensor's type (torch's wrapped numbers).
    out(ops::add(x, IrBuilder::constant(int64_t{3})), [](T a, T, T) { return E::add(a, T(3)); });
  }
  this->template check<T>(std::move(f), {tensorOf(xs), tensorOf(ys), tensorOf(ss)},
           [&] {
             std::vector<std::vector<T>> want;
             for (const auto& fn : expect) {
               std::vector<T> w;
               for (size_t i = 0; i < xs.size(); ++i) w.push_back(fn(xs[i], ys[i], ss[i]));
               want.push_back(std::move(w));
             }
             return want;
           }());
}

// Floats to T truncate toward zero; a value in int64's range wraps to T's width, so negative
// floats become large unsigned values (torch on the CPU: -1.0 is 255 as uint8); NaN gives 0.
TYPED_TEST(SmallIntTest, CastsFromFloats) {
  using T = TypeParam;
  const std::vector<float> vs{-1.0f,   -1.5f, -129.0f, 200.7f, -300.7f,
                              70000.0f, 0.0f, 3.99f,   -0.5f,  std::nanf("")};
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x =
        ops::TensorBuilder().shape({int64_t(vs.size())}).dtype(DataType::Float32).build();
    f->addInput(x);
    f->addOutput(ops::cast(x, dtypeOf<T>()));
  }
  std::vector<T> want;
  for (float v : vs) want.push_back(std::isnan(v) ? T(0) : T(uint64_t(int64_t(std::trunc(v)))));
  Tensor in = Tensor::empty({int64_t(vs.size())}, DataType::Float32);
  std::memcpy(in.data(), vs.data(), vs.size() * sizeof(float));
  this->template check<T>(std::move(f), {in}, {want});
}

// T to f64 (exact for every value but UInt64's past 2^53, which round to nearest), the sum of a
// row in i64 (torch sums every integer type into int64) and the max of a row in T.
TYPED_TEST(SmallIntTest, CastsToDoubleSumsAndMax) {
  using T = TypeParam;
  const std::vector<T> xs = edgeValues<T>();  // [2, 5]
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().shape({2, 5}).dtype(dtypeOf<T>()).build();
    f->addInput(x);
    f->addOutput(ops::cast(x, DataType::Float64));
    TensorView* s = ops::sum(x, {1});
    ASSERT_EQ(s->dtype(), DataType::Int64);
    f->addOutput(s);
    f->addOutput(ops::max(x, {1}));
    f->addOutput(ops::min(x, {1}));
  }
  Tensor in = Tensor::empty({2, 5}, dtypeOf<T>());
  std::memcpy(in.data(), xs.data(), xs.size() * sizeof(T));
  const Args args{in};
  const std::vector<Tensor> reference = eval::evaluateFusion(*f, args);
  FusionExecutorCache cache(std::move(f), poisonedOptions());
  const std::vector<Tensor> kernels = cache.run(args);
  std::vector<double> as_double;
  std::vector<int64_t> sums(2, 0);
  std::vector<T> maxes(2, std::numeric_limits<T>::min());
  std::vector<T> mins(2, std::numeric_limits<T>::max());
  for (size_t i = 0; i < xs.size(); ++i) {
    as_double.push_back(double(xs[i]));
    sums[i / 5] = int64_t(uint64_t(sums[i / 5]) + uint64_t(int64_t(xs[i])));  // wraps in i64
    maxes[i / 5] = std::max(maxes[i / 5], xs[i]);
    mins[i / 5] = std::min(mins[i / 5], xs[i]);
  }
  for (const auto* outs : {&reference, &kernels}) {
    const char* who = outs == &reference ? "reference" : "kernel";
    ASSERT_EQ(outs->size(), 4u);
    EXPECT_EQ(valuesOf<double>((*outs)[0]), as_double) << who;
    EXPECT_EQ(valuesOf<int64_t>((*outs)[1]), sums) << who;
    EXPECT_EQ(valuesOf<T>((*outs)[2]), maxes) << who;
    EXPECT_EQ(valuesOf<T>((*outs)[3]), mins) << who;
  }
}

// i64 and u64 to f32 round once, from the exact integer, in the reference evaluator as in the
// kernels: 2^60 + 2^36 + 1 is just above the midpoint of two floats, but through a double it
// would be the midpoint itself (2^60 + 2^36) and round to even, down. bf16 converts through a
// double in both (exact below 2^53): 2^60 + 2^52 + 1 becomes the bf16 midpoint 2^60 + 2^52 there
// and rounds to even, down.
TEST(SixtyFourBitCasts, RoundToFloatOnceFromTheExactInteger) {
  if (auto why = loom::test::backendUnavailable(testBackend())) GTEST_SKIP() << *why;
  const uint64_t tricky = (uint64_t(1) << 60) + (uint64_t(1) << 36) + 1;
  const std::vector<uint64_t> us{tricky, ~uint64_t(0), (uint64_t(1) << 63) + 1, 3};
  const int64_t bf16_tricky = int64_t((uint64_t(1) << 60) + (uint64_t(1) << 52) + 1);
  const std::vector<int64_t> is{int64_t(tricky), -bf16_tricky,
                                std::numeric_limits<int64_t>::min(), -3};
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* u = ops::TensorBuilder().shape({4}).dtype(DataType::UInt64).build();
    TensorView* i = ops::TensorBuilder().shape({4}).dtype(DataType::Int64).build();
    f->addInput(u);
    f->addInput(i);
    f->addOutput(ops::cast(u, DataType::Float32));
    f->addOutput(ops::cast(i, DataType::Float32));
    f->addOutput(ops::cast(ops::cast(i, DataType::BFloat16), DataType::Float32));
  }
  const Args args{tensorOf(us), tensorOf(is)};
  std::vector<float> want_u, want_i, want_b;
  for (uint64_t v : us) want_u.push_back(static_cast<float>(v));
  for (int64_t v : is) want_i.push_back(static_cast<float>(v));
  // bf16 (8 significant bits) of each, through the double: by hand.
  want_b = {float(uint64_t(1) << 60), -float(uint64_t(1) << 60), -float(uint64_t(1) << 63), -3.0f};
  ASSERT_EQ(want_u[0], float((uint64_t(1) << 60) + (uint64_t(1) << 37)));  // rounded up, once
  const std::vector<Tensor> reference = eval::evaluateFusion(*f, args);
  FusionExecutorCache cache(std::move(f), poisonedOptions());
  const std::vector<Tensor> kernels = cache.run(args);
  for (const auto* outs : {&reference, &kernels}) {
    const char* who = outs == &reference ? "reference" : "kernel";
    ASSERT_EQ(outs->size(), 3u);
    const Tensor u32 = (*outs)[0].contiguous();
    const Tensor i32 = (*outs)[1].contiguous();
    const Tensor b32 = (*outs)[2].contiguous();
    EXPECT_EQ(std::vector<float>(u32.dataAs<const float>(), u32.dataAs<const float>() + 4), want_u)
        << who;
    EXPECT_EQ(std::vector<float>(i32.dataAs<const float>(), i32.dataAs<const float>() + 4), want_i)
        << who;
    EXPECT_EQ(std::vector<float>(b32.dataAs<const float>(), b32.dataAs<const float>() + 4), want_b)
        << who;
  }
}

}  // namespace
}  // namespace loom::runtime
