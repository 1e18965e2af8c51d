// SPDX-License-Identifier: Apache-2.0
// Operation enums carried by the math exprs, with their text-form names.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace loom::ir {

#define LOOM_FOR_EACH_UNARY_OP(X)                                                          \
  X(Neg, "neg") X(Abs, "abs") X(Exp, "exp") X(Exp2, "exp2") X(Log, "log") X(Log2, "log2")    \
  X(Sqrt, "sqrt") X(Rsqrt, "rsqrt") X(Reciprocal, "reciprocal") X(Sin, "sin") X(Cos, "cos")  \
  X(Tanh, "tanh") X(Sigmoid, "sigmoid") X(Relu, "relu") X(Silu, "silu") X(Erf, "erf")        \
  X(Floor, "floor") X(Ceil, "ceil") X(Round, "round") X(Sign, "sign") X(IsNan, "isnan")      \
  X(IsInf, "isinf") X(LogicalNot, "logical_not") X(Cast, "cast")                           \
  LOOM_FOR_EACH_UNARY_OP_MATH(X) LOOM_FOR_EACH_UNARY_OP_COMPLEX(X)

// nvFuser's further elementwise ops (issue 36): kept in their own lists so that other additions
// merge beside them.
#define LOOM_FOR_EACH_UNARY_OP_MATH(X)                                                        \
  X(Acos, "acos") X(Acosh, "acosh") X(Asin, "asin") X(Asinh, "asinh") X(Atan, "atan")        \
  X(Atanh, "atanh") X(Cosh, "cosh") X(Sinh, "sinh") X(Tan, "tan") X(Erfc, "erfc")           \
  X(Erfinv, "erfinv") X(Erfcinv, "erfcinv") X(Expm1, "expm1") X(Log10, "log10")             \
  X(Log1p, "log1p") X(Lgamma, "lgamma") X(Trunc, "trunc") X(Frac, "frac")                   \
  X(Signbit, "signbit") X(IsFinite, "isfinite") X(IsNegInf, "isneginf")                     \
  X(IsPosInf, "isposinf") X(IsReal, "isreal") X(BitwiseNot, "bitwise_not")

// The parts of a complex number (issue 36, "Complex numbers"): real and imag give the part type
// (c64 -> f32), conj keeps the complex type.
#define LOOM_FOR_EACH_UNARY_OP_COMPLEX(X) X(Real, "real") X(Imag, "imag") X(Conj, "conj")

#define LOOM_FOR_EACH_BINARY_OP(X)                                                      \
  X(Add, "add") X(Sub, "sub") X(Mul, "mul") X(Div, "div") X(Pow, "pow") X(Fmod, "fmod")   \
  X(Max, "maximum") X(Min, "minimum") X(Eq, "eq") X(Ne, "ne") X(Lt, "lt") X(Le, "le")     \
  X(Gt, "gt") X(Ge, "ge") X(LogicalAnd, "logical_and") X(LogicalOr, "logical_or")         \
  X(CeilDiv, "ceil_div") X(Mod, "mod") LOOM_FOR_EACH_BINARY_OP_MATH(X)

#define LOOM_FOR_EACH_BINARY_OP_MATH(X)                                                       \
  X(Atan2, "atan2") X(Remainder, "remainder") X(Nextafter, "nextafter") X(Gcd, "gcd")        \
  X(BitwiseAnd, "bitwise_and") X(BitwiseOr, "bitwise_or") X(BitwiseXor, "bitwise_xor")      \
  X(Lshift, "bitwise_left_shift") X(Rshift, "bitwise_right_shift")                          \
  X(LogicalRshift, "logical_right_shift")

#define LOOM_FOR_EACH_TERNARY_OP(X) X(Where, "where") X(Clamp, "clamp") X(Lerp, "lerp")

#define LOOM_FOR_EACH_REDUCTION_OP(X) X(Sum, "sum") X(Prod, "prod") X(Max, "max") X(Min, "min")

#define LOOM_ENUM_ENTRY(e, s) e,
/// Round rounds half to even (as torch.round). Sign gives -1, 0 or 1. Cast converts to the output
/// dtype. On integers, Div truncates toward zero (C semantics); ops::div promotes integers to float
/// before it builds a Div, so users get true division.
enum class UnaryOpType : uint8_t { LOOM_FOR_EACH_UNARY_OP(LOOM_ENUM_ENTRY) };
/// Mod is C's % (sign of the dividend), Fmod the floating fmod; CeilDiv and Mod are index math.
/// Remainder has the sign of the divisor (torch.remainder). The bitwise ops take integers and Bool,
/// the shifts and Gcd integers only; docs/ops.md gives each op's edge values.
enum class BinaryOpType : uint8_t { LOOM_FOR_EACH_BINARY_OP(LOOM_ENUM_ENTRY) };
/// Where(c, a, b); Clamp(x, lo, hi); Lerp(a, b, w) = a + w * (b - a).
enum class TernaryOpType : uint8_t { LOOM_FOR_EACH_TERNARY_OP(LOOM_ENUM_ENTRY) };
enum class ReductionOpType : uint8_t { LOOM_FOR_EACH_REDUCTION_OP(LOOM_ENUM_ENTRY) };
#undef LOOM_ENUM_ENTRY

/// Set copies its input; the output may permute it (root -> logical) or change its memory type.
enum class LoadStoreOpType : uint8_t { Set };

std::string_view opTypeName(UnaryOpType t);
std::string_view opTypeName(BinaryOpType t);
std::string_view opTypeName(TernaryOpType t);
std::string_view opTypeName(ReductionOpType t);
std::string_view opTypeName(LoadStoreOpType t);

std::optional<UnaryOpType> parseUnaryOpType(std::string_view s);
std::optional<BinaryOpType> parseBinaryOpType(std::string_view s);
std::optional<TernaryOpType> parseTernaryOpType(std::string_view s);
std::optional<ReductionOpType> parseReductionOpType(std::string_view s);

/// Comparisons, logical ops and the tests (isnan, isfinite, signbit, ...) produce Bool.
bool isPredicateOp(BinaryOpType t);
bool isPredicateOp(UnaryOpType t);
/// The unary tests whose output is Bool and whose input keeps its own dtype (isnan, signbit, ...).
bool isUnaryTest(UnaryOpType t);
/// Ops with exact integer meaning only: bitwise_not / and / or / xor (also Bool), the shifts and
/// gcd (integers only).
bool isBitwiseOp(UnaryOpType t);
bool isBitwiseOp(BinaryOpType t);

}  // namespace loom::ir
