// SPDX-License-Identifier: Apache-2.0
// Scalar constants as C++ expressions of exactly their dtype and value, for NVRTC and the host
// backend alike (see scalarLiteral in kernel_codegen.h for the forms).
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <system_error>

#include "loom/codegen/kernel_codegen.h"
#include "loom/support/error.h"
#include "loom/tensor/float8.h"
#include "loom/tensor/half.h"

namespace loom::codegen {
namespace {

constexpr int64_t kInt32Min = std::numeric_limits<int32_t>::min();
constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

// An integer as a double, exactly up to 2^53; beyond, truncated to 53 bits with the lowest kept
// bit set when any dropped bit was (round to odd), so that a second rounding to at most 51 bits
// gives the same result as rounding the integer itself.
double roundToOddDouble(int64_t v) {
  uint64_t mag = v < 0 ? uint64_t(0) - uint64_t(v) : uint64_t(v);
  int width = std::bit_width(mag);
  if (width <= 53) return v < 0 ? -double(mag) : double(mag);
  int drop = width - 53;
  uint64_t kept = mag >> drop;
  if ((mag & ((uint64_t(1) << drop) - 1)) != 0) kept |= 1;
  double d = std::ldexp(double(kept), drop);
  return v < 0 ? -d : d;
}

// The value a half or bfloat16 constant is rounded from: exact up to 2^53; beyond, an integer's
// low bits are rounded to odd first (roundToOddDouble), so the one rounding to 11 or 8 bits
// that follows gives what rounding the exact integer would.
double halfSource(const ir::ScalarValue& value) {
  if (auto* b = std::get_if<bool>(&value)) return *b ? 1.0 : 0.0;
  if (auto* i = std::get_if<int64_t>(&value)) return roundToOddDouble(*i);
  return std::get<double>(value);
}

// `text` followed by `suffix`, with ".0" added when `text` is not yet a floating literal.
std::string decimal(std::string text, std::string_view suffix) {
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text + std::string(suffix);
}

// A float (f32) or double (f64) value as an expression of that type. Finite normal values are
// the shortest decimal that reads back as the same value; subnormals are hexadecimal literals
// (exact, and no compiler warns about their range); infinities and NaN are bit patterns through
// the CUDA intrinsics, which the host emulation also defines.
template <typename T>
std::string floatingLiteral(T v) {
  constexpr bool f32 = std::is_same_v<T, float>;
  const char* suffix = f32 ? "f" : "";
  if (std::isnan(v)) {
    return f32 ? "__int_as_float(0x7fffffff)" : "__longlong_as_double(0x7ff8000000000000LL)";
  }
  if (std::isinf(v)) {
    std::string inf =
        f32 ? "__int_as_float(0x7f800000)" : "__longlong_as_double(0x7ff0000000000000LL)";
    return v > 0 ? inf : "(-" + inf + ")";
  }
  const bool negative = std::signbit(v);
  const T mag = std::fabs(v);
  std::string text;
  if (mag == T(0)) {
    text = std::string("0.0") + suffix;
  } else {
    char buf[64];
    if (mag < std::numeric_limits<T>::min()) {
      // Scaled into the normal range first, so the digits read 1.xxx (0x1p-149f, not
      // 0x0.000002p-126f); the exponent is then scaled back.
      auto res = std::to_chars(buf, buf + sizeof(buf), std::ldexp(mag, 64), std::chars_format::hex);
      LOOM_ASSERT(res.ec == std::errc(), "cannot print the constant ", double(v));
      std::string digits(buf, res.ptr);
      size_t p = digits.find('p');
      LOOM_ASSERT(p != std::string::npos, "hexadecimal form without exponent: ", digits);
      text = "0x" + digits.substr(0, p + 1) + std::to_string(std::stoi(digits.substr(p + 1)) - 64) +
             suffix;
    } else {
      auto res = std::to_chars(buf, buf + sizeof(buf), mag);
      LOOM_ASSERT(res.ec == std::errc(), "cannot print the constant ", double(v));
      text = decimal(std::string(buf, res.ptr), suffix);
    }
  }
  return negative ? "(-" + text + ")" : text;
}

// An integer as an expression of type int (ll false; the value must fit) or long long. The most
// negative value of each type has no literal (its magnitude does not fit), so it is a difference.
std::string integerLiteral(int64_t v, bool ll) {
  const char* suffix = ll ? "LL" : "";
  if (v == std::numeric_limits<int64_t>::min()) return "(-9223372036854775807LL - 1LL)";
  if (!ll && v == kInt32Min) return "(-2147483647 - 1)";
  if (v < 0) return "(-" + std::to_string(-v) + suffix + ")";
  return std::to_string(v) + suffix;
}

// An integer constant's value; a floating value must be a whole number in range (ir::Scalar
// normalizes integer constants, so only hand-built kernels can hold anything else).
int64_t integerValue(const ir::ScalarValue& value, DataType dtype) {
  if (auto* b = std::get_if<bool>(&value)) return *b ? 1 : 0;
  if (auto* i = std::get_if<int64_t>(&value)) return *i;
  double d = std::get<double>(value);
  LOOM_ASSERT(std::isfinite(d) && d >= -0x1p63 && d < 0x1p63, "the constant ", d,
              " is not a value of ", dtype);
  return int64_t(d);
}

}  // namespace

std::string scalarLiteral(DataType dtype, const ir::ScalarValue& value, DataType index_type) {
  LOOM_ASSERT(!std::holds_alternative<std::monostate>(value), "a ", dtype,
              " constant without a value");
  switch (dtype) {
    case DataType::Bool: {
      bool b = false;
      if (auto* x = std::get_if<bool>(&value)) b = *x;
      if (auto* x = std::get_if<int64_t>(&value)) b = *x != 0;
      if (auto* x = std::get_if<double>(&value)) b = *x != 0.0;
      return b ? "true" : "false";
    }
    case DataType::Int8:
    case DataType::Int16:
    case DataType::UInt8:
    case DataType::UInt16:
      // Typed, so that the templates of math.cuh deduce the operand's own type.
      return "static_cast<" + std::string(cTypeName(dtype)) + ">(" +
             integerLiteral(wrapInteger(integerValue(value, dtype), dtype), false) + ")";
    case DataType::UInt32:
      return std::to_string(uint32_t(uint64_t(integerValue(value, dtype)))) + "u";
    case DataType::UInt64:
      return std::to_string(uint64_t(integerValue(value, dtype))) + "ULL";
    case DataType::Int32:
      // An int64 value out of range wraps as static_cast<int32_t> does.
      return integerLiteral(int64_t(int32_t(uint32_t(uint64_t(integerValue(value, dtype))))),
                            false);
    case DataType::Int64: {
      // Index constants share Int64 with data; in a kernel whose index type is Int32 they are
      // ints so that index math stays 32-bit. Values beyond int are long long in any kernel.
      int64_t v = integerValue(value, dtype);
      bool fits = v >= kInt32Min && v <= kInt32Max;
      return integerLiteral(v, index_type == DataType::Int64 || !fits);
    }
    case DataType::Float64:
      if (auto* b = std::get_if<bool>(&value)) return *b ? "1.0" : "0.0";
      if (auto* i = std::get_if<int64_t>(&value)) return floatingLiteral(double(*i));
      return floatingLiteral(std::get<double>(value));
    case DataType::Float32:
      // The f32 value of the constant, rounded once (a double past the f32 range is infinite).
      if (auto* b = std::get_if<bool>(&value)) return *b ? "1.0f" : "0.0f";
      if (auto* i = std::get_if<int64_t>(&value)) return floatingLiteral(float(*i));
      return floatingLiteral(float(std::get<double>(value)));
    case DataType::Float16:
    case DataType::BFloat16: {
      // The half value rounded once from the constant, then written as the float that holds it
      // exactly: the conversion in the constructor is exact.
      const bool half = dtype == DataType::Float16;
      double d = halfSource(value);
      float f = half ? halfBitsToFloat(doubleToHalfBits(d))
                     : bfloat16BitsToFloat(doubleToBFloat16Bits(d));
      return std::string(half ? "__half(" : "__nv_bfloat16(") + floatingLiteral(f) + ")";
    }
    case DataType::Float8_e4m3fn:
    case DataType::Float8_e5m2: {
      // The 8-bit value of the constant, rounded as a cast does (through float: float8.h), then
      // written as the float that holds it exactly.
      const float from = float(halfSource(value));
      const bool e4m3 = dtype == DataType::Float8_e4m3fn;
      const float f = e4m3 ? float8E4M3FNBitsToFloat(floatToFloat8E4M3FNBits(from))
                           : float8E5M2BitsToFloat(floatToFloat8E5M2Bits(from));
      return std::string(cTypeName(dtype)) + "(" + floatingLiteral(f) + ")";
    }
    case DataType::ComplexFloat:
    case DataType::ComplexDouble: {
      // Each part as a constant of the part type: loom::Complex<float>(1.0f, -2.0f).
      std::complex<double> z;
      if (auto* c = std::get_if<std::complex<double>>(&value)) {
        z = *c;
      } else if (auto* d = std::get_if<double>(&value)) {
        z = *d;
      } else if (auto* i = std::get_if<int64_t>(&value)) {
        z = double(*i);
      } else {
        z = std::get<bool>(value) ? 1.0 : 0.0;
      }
      const DataType part = complexPartType(dtype);
      return "loom::Complex<" + std::string(cTypeName(part)) + ">(" +
             scalarLiteral(part, z.real(), index_type) + ", " +
             scalarLiteral(part, z.imag(), index_type) + ")";
    }
  }
  LOOM_UNREACHABLE();
}

}  // namespace loom::codegen
