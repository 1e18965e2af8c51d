// SPDX-License-Identifier: Apache-2.0
// Operation enums carried by the math exprs, with their text-form names.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace loom::ir {

// The elementwise ops, one entry each: X(Enum, "name", Kind). The name is the op's in the .fus
// text form and in loom.direct (fd.ops.name); the kind is its dtype rule (UnaryKind, BinaryKind
// below). These lists are the one place an elementwise op is named: the enums, the text form, the
// verifier's dtype rules, the ops layer (ops::unaryOp / ops::binaryOp), the codegen of a floating
// function and the Python bindings all read them. docs/design.md, "Elementwise ops: one list",
// lists what a new op needs besides its entry (its math: reference evaluator and device runtime).
// (The lists keep their hand layout, a few entries a line.)
// clang-format off
#define LOOM_FOR_EACH_UNARY_OP(X)                                                                 \
  X(Neg, "neg", SameType) X(Abs, "abs", SameType) X(Exp, "exp", Floating)                         \
  X(Exp2, "exp2", Floating) X(Log, "log", Floating) X(Log2, "log2", Floating)                     \
  X(Sqrt, "sqrt", Floating) X(Rsqrt, "rsqrt", Floating) X(Reciprocal, "reciprocal", Floating)     \
  X(Sin, "sin", Floating) X(Cos, "cos", Floating) X(Tanh, "tanh", Floating)                       \
  X(Sigmoid, "sigmoid", Floating) X(Relu, "relu", SameType) X(Silu, "silu", Floating)             \
  X(Erf, "erf", Floating) X(Floor, "floor", SameType) X(Ceil, "ceil", SameType)                   \
  X(Round, "round", SameType) X(Sign, "sign", SameType) X(IsNan, "isnan", Test)                   \
  X(IsInf, "isinf", Test) X(LogicalNot, "logical_not", Logical) X(Cast, "cast", Cast)             \
  LOOM_FOR_EACH_UNARY_OP_MATH(X) LOOM_FOR_EACH_UNARY_OP_COMPLEX(X)

// nvFuser's further elementwise ops (issue 36): kept in their own lists so that other additions
// merge beside them.
#define LOOM_FOR_EACH_UNARY_OP_MATH(X)                                                            \
  X(Acos, "acos", Floating) X(Acosh, "acosh", Floating) X(Asin, "asin", Floating)                 \
  X(Asinh, "asinh", Floating) X(Atan, "atan", Floating) X(Atanh, "atanh", Floating)               \
  X(Cosh, "cosh", Floating) X(Sinh, "sinh", Floating) X(Tan, "tan", Floating)                     \
  X(Erfc, "erfc", Floating) X(Erfinv, "erfinv", Floating) X(Erfcinv, "erfcinv", Floating)         \
  X(Expm1, "expm1", Floating) X(Log10, "log10", Floating) X(Log1p, "log1p", Floating)             \
  X(Lgamma, "lgamma", Floating) X(Trunc, "trunc", SameType) X(Frac, "frac", SameType)             \
  X(Signbit, "signbit", Test) X(IsFinite, "isfinite", Test) X(IsNegInf, "isneginf", Test)         \
  X(IsPosInf, "isposinf", Test) X(IsReal, "isreal", Test) X(BitwiseNot, "bitwise_not", Bitwise)   \
  X(Erfcx, "erfcx", Floating) X(Digamma, "digamma", Floating)

// The parts of a complex number (issue 36, "Complex numbers"): real and imag give the part type
// (c64 -> f32), conj keeps the complex type.
#define LOOM_FOR_EACH_UNARY_OP_COMPLEX(X) \
  X(Real, "real", ComplexPart) X(Imag, "imag", ComplexPart) X(Conj, "conj", ComplexPart)

#define LOOM_FOR_EACH_BINARY_OP(X)                                                                \
  X(Add, "add", Arithmetic) X(Sub, "sub", Arithmetic) X(Mul, "mul", Arithmetic)                   \
  X(Div, "div", NotBool) X(Pow, "pow", Arithmetic) X(Fmod, "fmod", Arithmetic)                    \
  X(Max, "maximum", Arithmetic) X(Min, "minimum", Arithmetic) X(Eq, "eq", Comparison)             \
  X(Ne, "ne", Comparison) X(Lt, "lt", Comparison) X(Le, "le", Comparison)                         \
  X(Gt, "gt", Comparison) X(Ge, "ge", Comparison) X(LogicalAnd, "logical_and", Logical)           \
  X(LogicalOr, "logical_or", Logical) X(CeilDiv, "ceil_div", Index) X(Mod, "mod", NotBool)        \
  LOOM_FOR_EACH_BINARY_OP_MATH(X)

#define LOOM_FOR_EACH_BINARY_OP_MATH(X)                                                           \
  X(Atan2, "atan2", Floating) X(Remainder, "remainder", NotBool)                                  \
  X(Nextafter, "nextafter", FloatOnly) X(Gcd, "gcd", Integer)                                     \
  X(BitwiseAnd, "bitwise_and", Bitwise) X(BitwiseOr, "bitwise_or", Bitwise)                       \
  X(BitwiseXor, "bitwise_xor", Bitwise) X(Lshift, "bitwise_left_shift", Integer)                  \
  X(Rshift, "bitwise_right_shift", Integer) X(LogicalRshift, "logical_right_shift", Integer)

// clang-format on

#define LOOM_FOR_EACH_TERNARY_OP(X) X(Where, "where") X(Clamp, "clamp") X(Lerp, "lerp")

#define LOOM_FOR_EACH_REDUCTION_OP(X) X(Sum, "sum") X(Prod, "prod") X(Max, "max") X(Min, "min")

/// An elementwise unary op's dtype rule.
enum class UnaryKind : uint8_t {
  Floating,     ///< a floating function: integer and Bool operands compute in Float32 (exp, erf)
  SameType,     ///< keeps the operand's dtype, integers included (neg, abs, floor, trunc, ...)
  Test,         ///< gives Bool; the operand keeps its dtype (isnan, signbit, ...)
  Logical,      ///< Bool operand and result (logical_not)
  Bitwise,      ///< integers and Bool only (bitwise_not)
  ComplexPart,  ///< the parts of a complex number (real, imag, conj; complex_ops.h)
  Cast,         ///< converts to the output's dtype
};

/// An elementwise binary op's dtype rule.
enum class BinaryKind : uint8_t {
  Arithmetic,  ///< computes in the operands' promoted type (add, pow, maximum, fmod, ...)
  NotBool,     ///< the same, Bool operands refused (div, mod, remainder)
  Floating,    ///< integer operands compute in Float32 (atan2)
  FloatOnly,   ///< Float32 or Float64 operands only (nextafter)
  Comparison,  ///< Bool result of operands promoted together (eq, lt, ...)
  Logical,     ///< Bool operands and result (logical_and, logical_or)
  Bitwise,     ///< integers and Bool only (bitwise_and, _or, _xor)
  Integer,     ///< integers only (gcd, the shifts)
  Index,       ///< index math that no user-level op builds (ceil_div)
};

#define LOOM_ENUM_ENTRY(e, ...) e,
/// Round rounds half to even (as torch.round). Sign gives -1, 0 or 1. Cast converts to the output
/// dtype. Erfcx is exp(x^2) * erfc(x); Digamma the derivative of lgamma (NaN at the poles, the
/// negative integers; -inf at +0 and +inf at -0, as torch).
enum class UnaryOpType : uint8_t { LOOM_FOR_EACH_UNARY_OP(LOOM_ENUM_ENTRY) };
/// Mod is C's % (sign of the dividend), Fmod the floating fmod; CeilDiv and Mod are index math.
/// On integers, Div truncates toward zero (C semantics); ops::div promotes integers to float
/// before it builds a Div, so that it is true division. Remainder has the sign of the divisor
/// (torch.remainder). The bitwise ops take integers and Bool, the shifts and Gcd integers only;
/// docs/ops.md gives each op's edge values.
enum class BinaryOpType : uint8_t { LOOM_FOR_EACH_BINARY_OP(LOOM_ENUM_ENTRY) };
/// Where(c, a, b); Clamp(x, lo, hi); Lerp(a, b, w) = a + w * (b - a).
enum class TernaryOpType : uint8_t { LOOM_FOR_EACH_TERNARY_OP(LOOM_ENUM_ENTRY) };
enum class ReductionOpType : uint8_t { LOOM_FOR_EACH_REDUCTION_OP(LOOM_ENUM_ENTRY) };
#undef LOOM_ENUM_ENTRY

#define LOOM_ENUM_VALUE(e, ...) UnaryOpType::e,
/// Every unary op, in the list's order (for loops over the ops: bindings, tests).
inline constexpr UnaryOpType kUnaryOpTypes[] = {LOOM_FOR_EACH_UNARY_OP(LOOM_ENUM_VALUE)};
#undef LOOM_ENUM_VALUE
#define LOOM_ENUM_VALUE(e, ...) BinaryOpType::e,
inline constexpr BinaryOpType kBinaryOpTypes[] = {LOOM_FOR_EACH_BINARY_OP(LOOM_ENUM_VALUE)};
#undef LOOM_ENUM_VALUE

#define LOOM_KIND_CASE(e, s, k) \
  case T::e: return K::k;
constexpr UnaryKind unaryKind(UnaryOpType t) {
  using T = UnaryOpType;
  using K = UnaryKind;
  switch (t) { LOOM_FOR_EACH_UNARY_OP(LOOM_KIND_CASE) }
  return K::Cast;
}
constexpr BinaryKind binaryKind(BinaryOpType t) {
  using T = BinaryOpType;
  using K = BinaryKind;
  switch (t) { LOOM_FOR_EACH_BINARY_OP(LOOM_KIND_CASE) }
  return K::Index;
}
#undef LOOM_KIND_CASE

/// Set copies its input; the output may permute it (root -> logical) or change its memory type.
/// TmaCopy is the same copy between global and shared memory done by the tensor memory
/// accelerator: its output's Bulk loop IDs are the box one copy moves (nvFuser's
/// CpAsyncBulkTensorTile, LoadStoreOpType.tma in Python).
enum class LoadStoreOpType : uint8_t { Set, TmaCopy };

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
constexpr bool isPredicateOp(BinaryOpType t) {
  return binaryKind(t) == BinaryKind::Comparison || binaryKind(t) == BinaryKind::Logical;
}
constexpr bool isPredicateOp(UnaryOpType t) {
  return unaryKind(t) == UnaryKind::Test || unaryKind(t) == UnaryKind::Logical;
}
/// The unary tests whose output is Bool and whose input keeps its own dtype (isnan, signbit, ...).
constexpr bool isUnaryTest(UnaryOpType t) { return unaryKind(t) == UnaryKind::Test; }
/// Ops with exact integer meaning only: bitwise_not / and / or / xor (also Bool), the shifts and
/// gcd (integers only).
constexpr bool isBitwiseOp(UnaryOpType t) { return unaryKind(t) == UnaryKind::Bitwise; }
constexpr bool isBitwiseOp(BinaryOpType t) {
  return binaryKind(t) == BinaryKind::Bitwise || binaryKind(t) == BinaryKind::Integer;
}
/// exp, log, sqrt, sin, tanh, erf, lgamma, ...: the operand is floating; on integers the ops
/// layer computes them in a floating type (the verifier's dtype rule and the scalar and tensor
/// ops' promotion read this).
constexpr bool isFloatOnlyOp(UnaryOpType t) { return unaryKind(t) == UnaryKind::Floating; }

}  // namespace loom::ir
