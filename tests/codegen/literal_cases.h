// SPDX-License-Identifier: Apache-2.0
// Constants of every dtype with their expected literal text and stored bits, and a hand-built
// kernel that stores each of them (and uses them in expressions), for the literal tests.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "loom/lower/kernel_ir.h"

namespace loom::codegen::testing {

/// One constant: its kir dtype and value, the literal codegen prints in an Int64-index kernel,
/// and the bits a kernel storing it writes (the dtype's storage; NaN is only checked as NaN).
struct LiteralCase {
  DataType dtype;
  ir::ScalarValue value;
  std::string literal;
  uint64_t bits = 0;
  bool nan = false;
};

inline uint64_t bitsOf(double d) { return std::bit_cast<uint64_t>(d); }
inline uint64_t bitsOf(float f) { return std::bit_cast<uint32_t>(f); }

inline std::vector<LiteralCase> literalCases() {
  using F64 = std::numeric_limits<double>;
  using F32 = std::numeric_limits<float>;
  using I64 = std::numeric_limits<int64_t>;
  using I32 = std::numeric_limits<int32_t>;
  const std::string f64_inf = "__longlong_as_double(0x7ff0000000000000LL)";
  const std::string f32_inf = "__int_as_float(0x7f800000)";
  const DataType f64 = DataType::Float64, f32 = DataType::Float32, f16 = DataType::Float16,
                 bf16 = DataType::BFloat16, i64 = DataType::Int64, i32 = DataType::Int32,
                 b = DataType::Bool;
  return {
      // f64: shortest round-trip decimals, subnormals in hexadecimal, specials as bit patterns.
      {f64, 0.1, "0.1", bitsOf(0.1)},
      {f64, -2.5, "(-2.5)", bitsOf(-2.5)},
      {f64, 1e300, "1e+300", bitsOf(1e300)},
      {f64, 0.0, "0.0", bitsOf(0.0)},
      {f64, -0.0, "(-0.0)", bitsOf(-0.0)},
      {f64, 5e-324, "0x1p-1074", bitsOf(F64::denorm_min())},
      {f64, -1.5e-310, "(-0x1.b9cd1295941p-1030)", bitsOf(-1.5e-310)},
      {f64, F64::min(), "2.2250738585072014e-308", bitsOf(F64::min())},
      {f64, F64::max(), "1.7976931348623157e+308", bitsOf(F64::max())},
      {f64, F64::infinity(), f64_inf, bitsOf(F64::infinity())},
      {f64, -F64::infinity(), "(-" + f64_inf + ")", bitsOf(-F64::infinity())},
      {f64, F64::quiet_NaN(), "__longlong_as_double(0x7ff8000000000000LL)", 0, true},
      {f64, int64_t{3}, "3.0", bitsOf(3.0)},
      {f64, I64::max(), "9223372036854775808.0", bitsOf(0x1p63)},
      {f64, true, "1.0", bitsOf(1.0)},
      // f32: the value rounded once to float, so 1e300 is inf and 1e-50 is 0.
      {f32, 0.1, "0.1f", bitsOf(0.1f)},
      {f32, -2.5, "(-2.5f)", bitsOf(-2.5f)},
      {f32, 1e300, f32_inf, bitsOf(F32::infinity())},
      {f32, -1e300, "(-" + f32_inf + ")", bitsOf(-F32::infinity())},
      {f32, 1e-45, "0x1p-149f", bitsOf(F32::denorm_min())},
      {f32, 3e-39, "0x1.05564p-128f", bitsOf(3e-39f)},
      {f32, 1e-50, "0.0f", bitsOf(0.0f)},
      {f32, -1e-50, "(-0.0f)", bitsOf(-0.0f)},
      {f32, -0.0, "(-0.0f)", bitsOf(-0.0f)},
      {f32, 3.4028235e38, "3.4028235e+38f", bitsOf(F32::max())},
      {f32, 3.4028235677973366e38, f32_inf, bitsOf(F32::infinity())},
      {f32, F64::infinity(), f32_inf, bitsOf(F32::infinity())},
      {f32, F64::quiet_NaN(), "__int_as_float(0x7fffffff)", 0, true},
      {f32, int64_t{16777217}, "16777216.0f", bitsOf(16777216.0f)},
      {f32, I64::min(), "(-9.223372e+18f)", bitsOf(-0x1p63f)},
      // f16 / bf16: rounded once from the constant, written as the float holding the result.
      {f16, 0.1, "__half(0.099975586f)", 0x2e66},
      {f16, 1.0004882821813226, "__half(1.0009766f)", 0x3c01},  // 1 + 2^-11 + 2^-30
      {f16, 65504.0, "__half(65504.0f)", 0x7bff},
      {f16, 65519.0, "__half(65504.0f)", 0x7bff},
      {f16, 65520.0, "__half(" + f32_inf + ")", 0x7c00},
      {f16, 3e-8, "__half(5.9604645e-08f)", 0x0001},
      {f16, 0x1p-25, "__half(0.0f)", 0x0000},
      {f16, -0.0, "__half((-0.0f))", 0x8000},
      {f16, -F64::infinity(), "__half((-" + f32_inf + "))", 0xfc00},
      {f16, F64::quiet_NaN(), "__half(__int_as_float(0x7fffffff))", 0, true},
      {f16, int64_t{65519}, "__half(65504.0f)", 0x7bff},
      {bf16, 0.1, "__nv_bfloat16(0.100097656f)", 0x3dcd},
      {bf16, 1e38, "__nv_bfloat16(9.96921e+37f)", 0x7e96},
      {bf16, 3.4e38, "__nv_bfloat16(" + f32_inf + ")", 0x7f80},
      {bf16, -2.5, "__nv_bfloat16((-2.5f))", 0xc020},
      // 2^60 + 2^52 + 1 rounds up; through a double it would be a tie rounding down to 2^60.
      {bf16, int64_t{1157425104234217473}, "__nv_bfloat16(1.1619287e+18f)", 0x5d81},
      {bf16, F64::quiet_NaN(), "__nv_bfloat16(__int_as_float(0x7fffffff))", 0, true},
      // Integers: the most negative values have no literal.
      {i64, int64_t{0}, "0LL", 0},
      {i64, int64_t{-5}, "(-5LL)", uint64_t(int64_t{-5})},
      {i64, I64::min(), "(-9223372036854775807LL - 1LL)", uint64_t(I64::min())},
      {i64, I64::max(), "9223372036854775807LL", uint64_t(I64::max())},
      {i64, int64_t{I32::min()}, "(-2147483648LL)", uint64_t(int64_t{I32::min()})},
      {i64, int64_t{2147483648}, "2147483648LL", 2147483648u},
      {i64, true, "1LL", 1},
      {i32, int64_t{0}, "0", 0},
      {i32, int64_t{-7}, "(-7)", uint32_t(-7)},
      {i32, int64_t{I32::min()}, "(-2147483647 - 1)", uint32_t(I32::min())},
      {i32, int64_t{I32::max()}, "2147483647", uint32_t(I32::max())},
      {i32, int64_t{(int64_t{1} << 32) + 5}, "5", 5},  // wraps like static_cast<int32_t>
      {b, true, "true", 1},
      {b, false, "false", 0},
      {b, int64_t{2}, "true", 1},
  };
}

/// The dtypes of literalCases, one kernel parameter each (T0 ... T6), in this order.
inline constexpr DataType kLiteralDtypes[] = {
    DataType::Float64, DataType::Float32, DataType::Float16, DataType::BFloat16,
    DataType::Int64,   DataType::Int32,   DataType::Bool};

inline int64_t literalParam(DataType dtype) {
  for (int64_t i = 0; i < int64_t(std::size(kLiteralDtypes)); ++i) {
    if (kLiteralDtypes[i] == dtype) return i;
  }
  return -1;
}

/// The slot of case c in its dtype's parameter (cases of one dtype are numbered in order).
inline std::vector<int64_t> literalSlots(const std::vector<LiteralCase>& cases) {
  std::vector<int64_t> next(std::size(kLiteralDtypes), 0), slots;
  for (const LiteralCase& c : cases) slots.push_back(next[size_t(literalParam(c.dtype))]++);
  return slots;
}

/// Elements per parameter: every case's slot, then three expression slots per case.
inline constexpr int64_t kLiteralSlots = 64;

/// A kernel (one thread) storing every case's constant at its slot of the parameter of its
/// dtype, then, at slots kLiteralSlots/4 and after, using each constant in expressions: max with
/// a loaded value, a where, an accumulator initialized to it, and an integer constant added to a
/// float (integer constants in floating context).
inline std::unique_ptr<kir::Kernel> literalKernel(DataType index_type) {
  auto kernel = std::make_unique<kir::Kernel>();
  kir::Kernel& k = *kernel;
  k.indexType = index_type;
  std::vector<kir::Buffer*> params;
  for (DataType dt : kLiteralDtypes) {
    kir::Buffer* p = k.createBuffer();
    p->name = "T" + std::to_string(params.size());
    p->dtype = dt;
    p->rank = 1;
    k.params.push_back(p);
    params.push_back(p);
  }
  std::vector<LiteralCase> cases = literalCases();
  std::vector<int64_t> slots = literalSlots(cases);
  auto index = [&](int64_t i) { return k.constInt(i); };
  for (size_t i = 0; i < cases.size(); ++i) {
    const LiteralCase& c = cases[i];
    k.body.push_back(k.create<kir::Store>(params[size_t(literalParam(c.dtype))], index(slots[i]),
                                          k.create<kir::Const>(c.dtype, c.value)));
  }
  const kir::Buffer* flags = params[size_t(literalParam(DataType::Bool))];
  const kir::Buffer* f32 = params[size_t(literalParam(DataType::Float32))];
  for (size_t i = 0; i < cases.size(); ++i) {
    const LiteralCase& c = cases[i];
    const kir::Buffer* p = params[size_t(literalParam(c.dtype))];
    int64_t at = kLiteralSlots / 4 + 3 * slots[i];
    auto* cst = k.create<kir::Const>(c.dtype, c.value);
    auto* load = k.create<kir::Load>(p, index(slots[i]));
    if (c.dtype != DataType::Bool) {
      k.body.push_back(k.create<kir::Store>(
          p, index(at), k.create<kir::BinaryExpr>(c.dtype, ir::BinaryOpType::Max, load, cst)));
    }
    k.body.push_back(k.create<kir::Store>(
        p, index(at + 1),
        k.create<kir::TernaryExpr>(c.dtype, ir::TernaryOpType::Where,
                                   k.create<kir::Load>(flags, index(0)), cst, load)));
    kir::Var* acc = k.newVar(c.dtype, "acc");
    k.body.push_back(k.create<kir::DeclareVar>(acc, cst));
    k.body.push_back(k.create<kir::Store>(p, index(at + 2), acc));
    if (isIntegralType(c.dtype)) {
      k.body.push_back(
          k.create<kir::Store>(f32, index(kLiteralSlots - 1),
                               k.create<kir::BinaryExpr>(DataType::Float32, ir::BinaryOpType::Add,
                                                         k.create<kir::Load>(f32, index(0)), cst)));
    }
  }
  return kernel;
}

}  // namespace loom::codegen::testing
