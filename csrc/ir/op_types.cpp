// SPDX-License-Identifier: Apache-2.0
// Names of the operation enums.
#include "loom/ir/op_types.h"

namespace loom::ir {

#define LOOM_NAME_CASE(e, s) \
  case T::e:                 \
    return s;
#define LOOM_PARSE_ENTRY(e, s) \
  if (name == s) return T::e;

std::string_view opTypeName(UnaryOpType t) {
  using T = UnaryOpType;
  switch (t) { LOOM_FOR_EACH_UNARY_OP(LOOM_NAME_CASE) }
  return "?";
}
std::string_view opTypeName(BinaryOpType t) {
  using T = BinaryOpType;
  switch (t) { LOOM_FOR_EACH_BINARY_OP(LOOM_NAME_CASE) }
  return "?";
}
std::string_view opTypeName(TernaryOpType t) {
  using T = TernaryOpType;
  switch (t) { LOOM_FOR_EACH_TERNARY_OP(LOOM_NAME_CASE) }
  return "?";
}
std::string_view opTypeName(ReductionOpType t) {
  using T = ReductionOpType;
  switch (t) { LOOM_FOR_EACH_REDUCTION_OP(LOOM_NAME_CASE) }
  return "?";
}
std::string_view opTypeName(LoadStoreOpType) { return "set"; }

std::optional<UnaryOpType> parseUnaryOpType(std::string_view name) {
  using T = UnaryOpType;
  LOOM_FOR_EACH_UNARY_OP(LOOM_PARSE_ENTRY)
  return std::nullopt;
}
std::optional<BinaryOpType> parseBinaryOpType(std::string_view name) {
  using T = BinaryOpType;
  LOOM_FOR_EACH_BINARY_OP(LOOM_PARSE_ENTRY)
  return std::nullopt;
}
std::optional<TernaryOpType> parseTernaryOpType(std::string_view name) {
  using T = TernaryOpType;
  LOOM_FOR_EACH_TERNARY_OP(LOOM_PARSE_ENTRY)
  return std::nullopt;
}
std::optional<ReductionOpType> parseReductionOpType(std::string_view name) {
  using T = ReductionOpType;
  LOOM_FOR_EACH_REDUCTION_OP(LOOM_PARSE_ENTRY)
  return std::nullopt;
}

#undef LOOM_NAME_CASE
#undef LOOM_PARSE_ENTRY

bool isPredicateOp(BinaryOpType t) {
  switch (t) {
    case BinaryOpType::Eq:
    case BinaryOpType::Ne:
    case BinaryOpType::Lt:
    case BinaryOpType::Le:
    case BinaryOpType::Gt:
    case BinaryOpType::Ge:
    case BinaryOpType::LogicalAnd:
    case BinaryOpType::LogicalOr:
      return true;
    default:
      return false;
  }
}

bool isPredicateOp(UnaryOpType t) { return t == UnaryOpType::LogicalNot || isUnaryTest(t); }

bool isUnaryTest(UnaryOpType t) {
  switch (t) {
    case UnaryOpType::IsNan:
    case UnaryOpType::IsInf:
    case UnaryOpType::IsFinite:
    case UnaryOpType::IsNegInf:
    case UnaryOpType::IsPosInf:
    case UnaryOpType::IsReal:
    case UnaryOpType::Signbit: return true;
    default: return false;
  }
}

bool isBitwiseOp(UnaryOpType t) { return t == UnaryOpType::BitwiseNot; }

bool isBitwiseOp(BinaryOpType t) {
  switch (t) {
    case BinaryOpType::BitwiseAnd:
    case BinaryOpType::BitwiseOr:
    case BinaryOpType::BitwiseXor:
    case BinaryOpType::Lshift:
    case BinaryOpType::Rshift:
    case BinaryOpType::LogicalRshift:
    case BinaryOpType::Gcd: return true;
    default: return false;
  }
}

}  // namespace loom::ir
