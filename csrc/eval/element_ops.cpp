// SPDX-License-Identifier: Apache-2.0
// Element semantics of the pointwise ops (see element_ops.h).
#include "eval/element_ops.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <optional>

#include "eval/complex_ops.h"
#include "loom/ir/base.h"
#include "loom/tensor/tensor.h"

namespace loom::eval::detail {
namespace {

using ir::BinaryOpType;
using ir::TernaryOpType;
using ir::UnaryOpType;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Wrapping int64 arithmetic: signed overflow is undefined in C++, kernels wrap.
int64_t wrapAdd(int64_t a, int64_t b) { return int64_t(uint64_t(a) + uint64_t(b)); }
int64_t wrapSub(int64_t a, int64_t b) { return int64_t(uint64_t(a) - uint64_t(b)); }
int64_t wrapMul(int64_t a, int64_t b) { return int64_t(uint64_t(a) * uint64_t(b)); }

int64_t intPow(int64_t base, int64_t exp) {
  if (exp < 0) {
    // Integer powers with a negative exponent: only |base| == 1 keeps a nonzero integer part.
    if (base == 1) return 1;
    if (base == -1) return (exp % 2 == 0) ? 1 : -1;
    return 0;
  }
  int64_t result = 1;
  while (exp > 0) {
    if (exp & 1) result = wrapMul(result, base);
    base = wrapMul(base, base);
    exp >>= 1;
  }
  return result;
}

// C's % without its traps: by zero 0, by -1 0 (the most negative value by -1 overflows).
int64_t safeRem(int64_t a, int64_t b) { return (b == 0 || b == -1) ? 0 : a % b; }

// torch.gcd's algorithm on the magnitudes, with abs wrapping at the dtype's width as two's
// complement does (so gcd(INT_MIN, 0) is INT_MIN, as in torch).
int64_t intGcd(int64_t a, int64_t b, DataType dtype) {
  if (dtype == DataType::UInt64) {  // unsigned magnitudes: Euclid on the bits
    uint64_t x = uint64_t(a), y = uint64_t(b);
    while (x != 0) {
      const uint64_t c = x;
      x = y % x;
      y = c;
    }
    return int64_t(y);
  }
  a = a < 0 ? wrapInteger(wrapSub(0, a), dtype) : a;
  b = b < 0 ? wrapInteger(wrapSub(0, b), dtype) : b;
  while (a != 0) {
    int64_t c = a;
    a = safeRem(b, a);
    b = c;
  }
  return b;
}

// Shifts as torch defines them for every count: a count outside [0, width) shifts every bit out
// (left: 0; arithmetic right: the sign; logical right: 0). The right shift of an unsigned type
// is logical (as C's >> on it, and torch's). A UInt64 count from 2^63 up is out of range.
int64_t intShift(BinaryOpType op, int64_t a, int64_t b, DataType dtype) {
  const int w = integerBits(dtype);
  const bool out_of_range = b < 0 || b >= w;
  if (op == BinaryOpType::Rshift && isUnsignedType(dtype)) op = BinaryOpType::LogicalRshift;
  switch (op) {
    case BinaryOpType::Lshift: return out_of_range ? 0 : int64_t(uint64_t(a) << b);
    case BinaryOpType::Rshift: return out_of_range ? (a < 0 ? -1 : 0) : (a >> b);
    default: {  // LogicalRshift: the bits of the dtype's width, as unsigned
      if (out_of_range) return 0;
      const uint64_t mask = w == 64 ? ~uint64_t(0) : (uint64_t(1) << w) - 1;
      return int64_t((uint64_t(a) & mask) >> b);
    }
  }
}

// The ops whose UInt64 result differs from that of the same bits as int64: unsigned order and
// division. The narrower unsigned types hold their values in int64 exactly, so they need none.
std::optional<int64_t> uint64Binary(BinaryOpType op, uint64_t a, uint64_t b) {
  switch (op) {
    case BinaryOpType::Div: return b == 0 ? 0 : int64_t(a / b);
    case BinaryOpType::Mod:
    case BinaryOpType::Fmod:
    case BinaryOpType::Remainder: return b == 0 ? 0 : int64_t(a % b);
    case BinaryOpType::CeilDiv: return b == 0 ? 0 : int64_t(a / b + (a % b != 0 ? 1 : 0));
    case BinaryOpType::Max: return int64_t(a > b ? a : b);
    case BinaryOpType::Min: return int64_t(a < b ? a : b);
    case BinaryOpType::Lt: return a < b;
    case BinaryOpType::Le: return a <= b;
    case BinaryOpType::Gt: return a > b;
    case BinaryOpType::Ge: return a >= b;
    case BinaryOpType::Pow: {  // every exponent is non-negative
      uint64_t result = 1;
      for (; b > 0; b >>= 1, a *= a) {
        if (b & 1) result *= a;
      }
      return int64_t(result);
    }
    default: return std::nullopt;
  }
}

// A first guess at erfinv from L = log(1 - t^2) (Winitzki's closed form, good to ~2e-3), so that
// callers can pass L without the cancellation of 1 - t^2 near |t| = 1.
double erfinvGuess(double t, double l) {
  constexpr double kA = 0.147;
  const double p = 2.0 / (std::numbers::pi * kA) + l / 2.0;
  const double x = std::sqrt(std::sqrt(p * p - l / kA) - p);
  return t < 0 ? -x : x;
}

constexpr double kTwoOverSqrtPi = 1.1283791670955126;

}  // namespace

double roundToDtype(double v, DataType dtype) {
  switch (dtype) {
    case DataType::Float64:
      return v;
    case DataType::Bool:
      return v != 0.0 ? 1.0 : 0.0;
    case DataType::ComplexFloat:
    case DataType::ComplexDouble:  // one part of a complex value
      return roundToDtype(v, complexPartType(dtype));
    default: {
      alignas(8) unsigned char buf[8];
      storeFromDouble(buf, dtype, v);
      return loadAsDouble(buf, dtype);
    }
  }
}

DataType integerMathType(BinaryOpType op, DataType lhs, DataType rhs, DataType out) {
  if (ir::binaryKind(op) != ir::BinaryKind::Comparison) return out;
  return lhs == DataType::UInt64 || rhs == DataType::UInt64 ? DataType::UInt64 : DataType::Int64;
}

int64_t toInt64(double v) {
  if (std::isnan(v)) return 0;
  constexpr double kTop = 9223372036854775808.0;  // 2^63, exact in double
  if (v >= kTop) return std::numeric_limits<int64_t>::max();
  if (v <= -kTop) return std::numeric_limits<int64_t>::min();
  return int64_t(v);
}

int64_t wrapToDtype(int64_t v, DataType dtype) { return wrapInteger(v, dtype); }

double roundHalfEven(double x) {
  double r = std::round(x);  // halves away from zero
  if (std::fabs(x - std::trunc(x)) == 0.5) r = 2.0 * std::round(x / 2.0);
  return r;
}

bool usesIntegerMath(BinaryOpType op, DataType lhs, DataType rhs, DataType out) {
  if (isIntegralType(out)) return true;
  return out == DataType::Bool && ir::binaryKind(op) == ir::BinaryKind::Comparison &&
         !isFloatingType(lhs) && !isFloatingType(rhs);
}

bool usesIntegerMath(UnaryOpType op, DataType in, DataType out) {
  if (!isIntegralType(out) || isFloatingType(in)) return false;
  // Integer to integer casts wrap, as kernels (and torch) narrow; the ops that keep their dtype
  // and the bitwise ones have exact integer forms (intUnary); the others are floating math.
  switch (ir::unaryKind(op)) {
    case ir::UnaryKind::SameType:
    case ir::UnaryKind::Bitwise:
    case ir::UnaryKind::Cast: return true;
    default: return false;
  }
}

int64_t intUnary(UnaryOpType op, int64_t x, DataType dtype, const ir::Expr* e) {
  if (isUnsignedType(dtype)) {  // no value is negative (UInt64's bits may read so)
    switch (op) {
      case UnaryOpType::Abs:
      case UnaryOpType::Relu: return x;
      case UnaryOpType::Sign: return x != 0 ? 1 : 0;
      default: break;
    }
  }
  switch (op) {
    case UnaryOpType::Neg: return wrapSub(0, x);
    case UnaryOpType::Abs: return x < 0 ? wrapSub(0, x) : x;
    case UnaryOpType::Sign: return x > 0 ? 1 : (x < 0 ? -1 : 0);
    case UnaryOpType::Relu: return x > 0 ? x : 0;
    case UnaryOpType::Floor:
    case UnaryOpType::Ceil:
    case UnaryOpType::Round:
    case UnaryOpType::Trunc:
    case UnaryOpType::Cast:
      return x;
    case UnaryOpType::Frac: return 0;
    case UnaryOpType::BitwiseNot: return ~x;
    default:
      LOOM_THROW("unary op ", ir::opTypeName(op), " has no integer form",
                 e != nullptr ? " in " + e->toString() : std::string());
  }
}

int64_t intBinary(BinaryOpType op, int64_t a, int64_t b, DataType dtype) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  if (dtype == DataType::UInt64) {
    if (auto r = uint64Binary(op, uint64_t(a), uint64_t(b))) return *r;
  }
  switch (op) {
    case BinaryOpType::Add: return wrapAdd(a, b);
    case BinaryOpType::Sub: return wrapSub(a, b);
    case BinaryOpType::Mul: return wrapMul(a, b);
    // Integer division is defined for every operand, as in the kernels (math.cuh, docs/ops.md):
    // by zero 0, the most negative value by -1 itself (remainder 0).
    case BinaryOpType::Div:
      if (b == 0) return 0;
      return (a == kMin && b == -1) ? kMin : a / b;  // truncates toward zero
    case BinaryOpType::Mod:
    case BinaryOpType::Fmod:
      return (b == 0 || b == -1) ? 0 : a % b;  // sign of the dividend
    case BinaryOpType::CeilDiv: {
      if (b == 0) return 0;
      if (a == kMin && b == -1) return kMin;
      int64_t q = a / b;
      int64_t r = a % b;
      if (r != 0 && ((r > 0) == (b > 0))) ++q;
      return q;
    }
    case BinaryOpType::Pow: return intPow(a, b);
    case BinaryOpType::Max: return a > b ? a : b;
    case BinaryOpType::Min: return a < b ? a : b;
    case BinaryOpType::Eq: return a == b;
    case BinaryOpType::Ne: return a != b;
    case BinaryOpType::Lt: return a < b;
    case BinaryOpType::Le: return a <= b;
    case BinaryOpType::Gt: return a > b;
    case BinaryOpType::Ge: return a >= b;
    case BinaryOpType::LogicalAnd: return a != 0 && b != 0;
    case BinaryOpType::LogicalOr: return a != 0 || b != 0;
    case BinaryOpType::Remainder: {  // the sign of the divisor
      const int64_t r = safeRem(a, b);
      return (r != 0 && ((r < 0) != (b < 0))) ? wrapAdd(r, b) : r;
    }
    case BinaryOpType::Gcd: return intGcd(a, b, dtype);
    case BinaryOpType::BitwiseAnd: return a & b;
    case BinaryOpType::BitwiseOr: return a | b;
    case BinaryOpType::BitwiseXor: return a ^ b;
    case BinaryOpType::Lshift:
    case BinaryOpType::Rshift:
    case BinaryOpType::LogicalRshift: return intShift(op, a, b, dtype);
    case BinaryOpType::Atan2:
    case BinaryOpType::Nextafter: break;  // floating only (ir::verify)
  }
  LOOM_UNREACHABLE("binary op ", ir::opTypeName(op), " has no integer form");
}

double erfinvDouble(double y) {
  if (std::isnan(y) || y < -1.0 || y > 1.0) return kNaN;
  if (y == 1.0) return std::numeric_limits<double>::infinity();
  if (y == -1.0) return -std::numeric_limits<double>::infinity();
  if (y == 0.0) return y;  // keeps the sign of zero
  // Near +-1 the root is found through erfc, where 1 - |y| is exact (Sterbenz).
  if (std::fabs(y) > 0.5) return y > 0 ? erfcinvDouble(1.0 - y) : -erfcinvDouble(1.0 + y);
  double x = erfinvGuess(y, std::log1p(-y * y));
  for (int i = 0; i < 8; ++i) {
    const double step = (std::erf(x) - y) / (kTwoOverSqrtPi * std::exp(-x * x));
    x -= step;
    if (std::fabs(step) <= 1e-17 * std::fabs(x)) break;
  }
  return x;
}

double erfcinvDouble(double y) {
  if (std::isnan(y) || y < 0.0 || y > 2.0) return kNaN;
  if (y == 0.0) return std::numeric_limits<double>::infinity();
  if (y == 2.0) return -std::numeric_limits<double>::infinity();
  if (y > 1.0) return -erfcinvDouble(2.0 - y);
  if (y >= 0.5) return erfinvDouble(1.0 - y);  // exact argument, |result| < 0.48
  // Newton on log(erfc(x)) = log(y): well scaled down to the smallest y.
  double x = erfinvGuess(1.0, std::log(y * (2.0 - y)));
  const double target = std::log(y);
  for (int i = 0; i < 12; ++i) {
    const double e = std::erfc(x);
    const double step = (std::log(e) - target) / (-kTwoOverSqrtPi * std::exp(-x * x) / e);
    x -= step;
    if (std::fabs(step) <= 1e-17 * std::fabs(x)) break;
  }
  return x;
}

double erfcxDouble(double x) {
  if (std::isnan(x)) return x;
  if (x > 10.0) {
    if (std::isinf(x)) return 0.0;
    // The continued fraction erfc(x) e^(x^2) sqrt(pi) = 1 / (x + (1/2) / (x + 1 / (x + (3/2) /
    // (x + ...)))), evaluated from its tail: 40 levels are exact to double at x > 10, where
    // erfc(x) itself would underflow (x > 26.5) or e^(x^2) overflow.
    double t = x;
    for (int k = 40; k >= 1; --k) t = x + 0.5 * k / t;
    return std::numbers::inv_sqrtpi / t;
  }
  // erfc(x) = 2 - erfc(-x) for negative x, and 2 e^(x^2) overflows below about -26.63 (torch's
  // inf), where the split below would no longer be exact.
  if (x < -27.0) return std::numeric_limits<double>::infinity();
  // e^(x^2) with x^2 split exactly into hi + lo (fma): a rounded x^2 would cost x^2 ulps.
  const double hi = x * x;
  const double lo = std::fma(x, x, -hi);
  const double exp_x2 = std::exp(hi) * (1.0 + lo);
  if (x >= 0.0) return exp_x2 * std::erfc(x);
  return 2.0 * exp_x2 - erfcxDouble(-x);
}

double digammaDouble(double x) {
  if (std::isnan(x)) return x;
  if (x == 0.0) return -1.0 / x;  // -inf at +0, +inf at -0 (torch)
  double reflected = 0.0;
  if (x < 0.0) {
    // The poles, -inf included: NaN (torch, as C's gamma functions).
    if (x == std::trunc(x)) return kNaN;
    // psi(x) = psi(1 - x) - pi / tan(pi x); tan of the fractional part (exact), as pi * x
    // would lose the fraction's bits for large |x|.
    reflected = -std::numbers::pi / std::tan(std::numbers::pi * (x - std::trunc(x)));
    x = 1.0 - x;
  }
  if (std::isinf(x)) return x;
  // psi(x) = psi(x + 1) - 1 / x up to x >= 10, then the asymptotic series
  // ln x - 1/(2x) - sum B_2k / (2k x^2k), which is exact to double there with seven terms.
  double shift = 0.0;
  for (; x < 10.0; x += 1.0) shift -= 1.0 / x;
  const double z = 1.0 / (x * x);
  const double tail =
      z * (1.0 / 12 - z * (1.0 / 120 -
                           z * (1.0 / 252 -
                                z * (1.0 / 240 - z * (1.0 / 132 - z * (691.0 / 32760 - z / 12))))));
  return reflected + shift + std::log(x) - 0.5 / x - tail;
}

double floatUnary(UnaryOpType op, double x) {
  switch (op) {
    case UnaryOpType::Neg: return -x;
    case UnaryOpType::Abs: return std::fabs(x);
    case UnaryOpType::Exp: return std::exp(x);
    case UnaryOpType::Exp2: return std::exp2(x);
    case UnaryOpType::Log: return std::log(x);
    case UnaryOpType::Log2: return std::log2(x);
    case UnaryOpType::Sqrt: return std::sqrt(x);
    case UnaryOpType::Rsqrt: return 1.0 / std::sqrt(x);
    case UnaryOpType::Reciprocal: return 1.0 / x;
    case UnaryOpType::Sin: return std::sin(x);
    case UnaryOpType::Cos: return std::cos(x);
    case UnaryOpType::Tanh: return std::tanh(x);
    case UnaryOpType::Sigmoid: return 1.0 / (1.0 + std::exp(-x));
    case UnaryOpType::Relu: return std::isnan(x) ? x : (x > 0.0 ? x : 0.0);
    case UnaryOpType::Silu: return x / (1.0 + std::exp(-x));
    case UnaryOpType::Erf: return std::erf(x);
    case UnaryOpType::Floor: return std::floor(x);
    case UnaryOpType::Ceil: return std::ceil(x);
    case UnaryOpType::Round: return roundHalfEven(x);
    case UnaryOpType::Sign:
      if (std::isnan(x)) return x;  // NaN stays NaN
      return x > 0.0 ? 1.0 : (x < 0.0 ? -1.0 : 0.0);
    case UnaryOpType::IsNan: return std::isnan(x) ? 1.0 : 0.0;
    case UnaryOpType::IsInf: return std::isinf(x) ? 1.0 : 0.0;
    case UnaryOpType::LogicalNot: return x == 0.0 ? 1.0 : 0.0;
    case UnaryOpType::Cast: return x;
    case UnaryOpType::Acos: return std::acos(x);
    case UnaryOpType::Acosh: return std::acosh(x);
    case UnaryOpType::Asin: return std::asin(x);
    case UnaryOpType::Asinh: return std::asinh(x);
    case UnaryOpType::Atan: return std::atan(x);
    case UnaryOpType::Atanh: return std::atanh(x);
    case UnaryOpType::Cosh: return std::cosh(x);
    case UnaryOpType::Sinh: return std::sinh(x);
    case UnaryOpType::Tan: return std::tan(x);
    case UnaryOpType::Erfc: return std::erfc(x);
    case UnaryOpType::Erfinv: return erfinvDouble(x);
    case UnaryOpType::Erfcinv: return erfcinvDouble(x);
    case UnaryOpType::Expm1: return std::expm1(x);
    case UnaryOpType::Log10: return std::log10(x);
    case UnaryOpType::Log1p: return std::log1p(x);
    case UnaryOpType::Lgamma: {
      int sign = 0;  // lgamma_r: no shared signgam between threads
      return ::lgamma_r(x, &sign);
    }
    case UnaryOpType::Trunc: return std::trunc(x);
    case UnaryOpType::Frac: return x - std::trunc(x);  // inf - inf: NaN, as torch.frac
    case UnaryOpType::Signbit: return std::signbit(x) ? 1.0 : 0.0;
    case UnaryOpType::IsFinite: return std::isfinite(x) ? 1.0 : 0.0;
    case UnaryOpType::IsNegInf: return (std::isinf(x) && x < 0) ? 1.0 : 0.0;
    case UnaryOpType::IsPosInf: return (std::isinf(x) && x > 0) ? 1.0 : 0.0;
    case UnaryOpType::IsReal:
      return 1.0;  // a real value (complex ones: complex_ops.cpp)
    // The real part and conjugate of a real value are itself (ops never builds them on real
    // operands; ir::verify refuses imag there).
    case UnaryOpType::Real:
    case UnaryOpType::Conj: return x;
    case UnaryOpType::Imag: return 0.0;
    case UnaryOpType::BitwiseNot: return x == 0.0 ? 1.0 : 0.0;  // Bool: logical not
    case UnaryOpType::Erfcx: return erfcxDouble(x);
    case UnaryOpType::Digamma: return digammaDouble(x);
  }
  LOOM_UNREACHABLE("unary op ", int(op));
}

double floatBinary(BinaryOpType op, double a, double b) {
  switch (op) {
    case BinaryOpType::Add: return a + b;
    case BinaryOpType::Sub: return a - b;
    case BinaryOpType::Mul: return a * b;
    case BinaryOpType::Div: return a / b;
    case BinaryOpType::Pow: return std::pow(a, b);
    case BinaryOpType::Fmod:
    case BinaryOpType::Mod:
      return std::fmod(a, b);
    case BinaryOpType::CeilDiv: return std::ceil(a / b);
    case BinaryOpType::Max:
      if (std::isnan(a) || std::isnan(b)) return kNaN;
      return a > b ? a : b;
    case BinaryOpType::Min:
      if (std::isnan(a) || std::isnan(b)) return kNaN;
      return a < b ? a : b;
    case BinaryOpType::Eq: return a == b ? 1.0 : 0.0;
    case BinaryOpType::Ne: return a != b ? 1.0 : 0.0;
    case BinaryOpType::Lt: return a < b ? 1.0 : 0.0;
    case BinaryOpType::Le: return a <= b ? 1.0 : 0.0;
    case BinaryOpType::Gt: return a > b ? 1.0 : 0.0;
    case BinaryOpType::Ge: return a >= b ? 1.0 : 0.0;
    case BinaryOpType::LogicalAnd: return (a != 0.0 && b != 0.0) ? 1.0 : 0.0;
    case BinaryOpType::LogicalOr: return (a != 0.0 || b != 0.0) ? 1.0 : 0.0;
    case BinaryOpType::Atan2: return std::atan2(a, b);
    case BinaryOpType::Remainder: {  // torch.remainder: the sign of the divisor
      const double r = std::fmod(a, b);
      return (r != 0.0 && ((r < 0.0) != (b < 0.0))) ? r + b : r;
    }
    case BinaryOpType::Nextafter: return std::nextafter(a, b);
    // Bool operands (integers take intBinary): the logical meaning.
    case BinaryOpType::BitwiseAnd: return (a != 0.0 && b != 0.0) ? 1.0 : 0.0;
    case BinaryOpType::BitwiseOr: return (a != 0.0 || b != 0.0) ? 1.0 : 0.0;
    case BinaryOpType::BitwiseXor: return ((a != 0.0) != (b != 0.0)) ? 1.0 : 0.0;
    case BinaryOpType::Gcd:
    case BinaryOpType::Lshift:
    case BinaryOpType::Rshift:
    case BinaryOpType::LogicalRshift: break;  // integers only (ir::verify)
  }
  LOOM_UNREACHABLE("binary op ", ir::opTypeName(op), " on floating operands");
}

double floatTernary(TernaryOpType op, double a, double b, double c) {
  switch (op) {
    case TernaryOpType::Where: return a != 0.0 ? b : c;
    case TernaryOpType::Clamp:
      if (std::isnan(a) || std::isnan(b) || std::isnan(c)) return kNaN;
      return std::min(std::max(a, b), c);
    case TernaryOpType::Lerp: return a + c * (b - a);
  }
  LOOM_UNREACHABLE("ternary op ", int(op));
}

double applyUnary(UnaryOpType op, double x, DataType in, DataType out, const ir::Expr* e) {
  if (usesIntegerMath(op, in, out)) {
    return integerToDouble(wrapToDtype(intUnary(op, floatToInteger(x, in), out, e), out), out);
  }
  return roundToDtype(floatUnary(op, x), out);
}

double applyBinary(BinaryOpType op, double a, double b, DataType lhs, DataType rhs,
                   DataType out) {
  if (usesIntegerMath(op, lhs, rhs, out)) {
    const DataType t = integerMathType(op, lhs, rhs, out);
    const int64_t r = intBinary(op, floatToInteger(a, isIntegralType(lhs) ? lhs : DataType::Int64),
                                floatToInteger(b, isIntegralType(rhs) ? rhs : DataType::Int64), t);
    return integerToDouble(wrapToDtype(r, out), out);
  }
  // The next representable value is the dtype's own, not double's rounded back.
  if (op == BinaryOpType::Nextafter && out == DataType::Float32) {
    return double(std::nextafter(float(a), float(b)));
  }
  return roundToDtype(floatBinary(op, a, b), out);
}

double applyTernary(TernaryOpType op, double a, double b, double c, DataType out) {
  return roundToDtype(floatTernary(op, a, b, c), out);
}

double scalarToDouble(const ir::ScalarValue& v) {
  if (auto* d = std::get_if<double>(&v)) return *d;
  if (auto* i = std::get_if<int64_t>(&v)) return double(*i);
  if (auto* b = std::get_if<bool>(&v)) return *b ? 1.0 : 0.0;
  if (auto* c = std::get_if<std::complex<double>>(&v)) return c->real();
  LOOM_UNREACHABLE("scalarToDouble of an empty value");
}

int64_t scalarToInt(const ir::ScalarValue& v) {
  if (auto* i = std::get_if<int64_t>(&v)) return *i;
  if (auto* b = std::get_if<bool>(&v)) return *b ? 1 : 0;
  if (auto* d = std::get_if<double>(&v)) return toInt64(*d);
  if (auto* c = std::get_if<std::complex<double>>(&v)) return toInt64(c->real());
  LOOM_UNREACHABLE("scalarToInt of an empty value");
}

int64_t normalizeScalarInt(const ir::ScalarValue& v, DataType dtype) {
  return wrapToDtype(scalarToInt(v), dtype);
}

ir::ScalarValue scalarFromDouble(double v, DataType dtype) {
  if (isBooleanType(dtype)) return v != 0.0;
  if (isComplexType(dtype)) return std::complex<double>(roundToDtype(v, dtype), 0.0);
  if (dtype == DataType::Int64) return toInt64(v);
  if (isIntegralType(dtype)) return floatToInteger(v, dtype);
  return roundToDtype(v, dtype);
}

ir::ScalarValue normalizeScalar(const ir::ScalarValue& v, DataType dtype) {
  if (std::holds_alternative<std::monostate>(v)) return v;
  if (isComplexType(dtype)) return roundComplex(scalarToComplex(v), dtype);
  if (isBooleanType(dtype)) return scalarToDouble(v) != 0.0;
  if (isIntegralType(dtype)) {
    if (std::holds_alternative<double>(v)) return scalarFromDouble(std::get<double>(v), dtype);
    return wrapToDtype(scalarToInt(v), dtype);
  }
  return roundToDtype(scalarToDouble(v), dtype);
}

}  // namespace loom::eval::detail
