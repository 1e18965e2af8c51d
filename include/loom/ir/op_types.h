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
  X(IsInf, "isinf") X(LogicalNot, "logical_not") X(Cast, "cast")

#define LOOM_FOR_EACH_BINARY_OP(X)                                                      \
  X(Add, "add") X(Sub, "sub") X(Mul, "mul") X(Div, "div") X(Pow, "pow") X(Fmod, "fmod")   \
  X(Max, "maximum") X(Min, "minimum") X(Eq, "eq") X(Ne, "ne") X(Lt, "lt") X(Le, "le")     \
  X(Gt, "gt") X(Ge, "ge") X(LogicalAnd, "logical_and") X(LogicalOr, "logical_or")         \
  X(CeilDiv, "ceil_div") X(Mod, "mod")

#define LOOM_FOR_EACH_TERNARY_OP(X) X(Where, "where") X(Clamp, "clamp") X(Lerp, "lerp")

#define LOOM_FOR_EACH_REDUCTION_OP(X) X(Sum, "sum") X(Prod, "prod") X(Max, "max") X(Min, "min")

#define LOOM_ENUM_ENTRY(e, s) e,
/// Round rounds half to even (as torch.round). Sign gives -1, 0 or 1. Cast converts to the output
/// dtype. On integers, Div truncates toward zero (C semantics); ops::div promotes integers to float
/// before it builds a Div, so users get true division.
enum class UnaryOpType : uint8_t { LOOM_FOR_EACH_UNARY_OP(LOOM_ENUM_ENTRY) };
/// Mod is C's % (sign of the dividend), Fmod the floating fmod; CeilDiv and Mod are index math.
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

/// Comparisons and logical ops produce Bool.
bool isPredicateOp(BinaryOpType t);
bool isPredicateOp(UnaryOpType t);

}  // namespace loom::ir
