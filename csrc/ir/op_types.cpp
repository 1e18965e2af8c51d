// SPDX-License-Identifier: Apache-2.0
// Names of the operation enums.
#include "loom/ir/op_types.h"

namespace loom::ir {

#define LOOM_NAME_CASE(e, s, ...) \
  case T::e:                      \
    return s;
#define LOOM_PARSE_ENTRY(e, s, ...) \
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
std::string_view opTypeName(LoadStoreOpType t) {
  return t == LoadStoreOpType::TmaCopy ? "tma_copy" : "set";
}

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

}  // namespace loom::ir
