// SPDX-License-Identifier: Apache-2.0
// PyTorch's result_type over tensors and wrapped numbers, plus Loom's compute-type rule.
#include "loom/ops/type_promotion.h"

#include <optional>

namespace loom::ops {
namespace {

enum class Category : uint8_t { Bool, Integer, Floating, Complex };

Category categoryOf(DataType t) {
  if (isBooleanType(t)) return Category::Bool;
  if (isIntegralType(t)) return Category::Integer;
  if (isComplexType(t)) return Category::Complex;
  return Category::Floating;
}

// The type a wrapped number of this category contributes (PyTorch's defaults).
DataType defaultType(Category c) {
  switch (c) {
    case Category::Bool: return DataType::Bool;
    case Category::Integer: return DataType::Int64;
    case Category::Floating: return DataType::Float32;
    case Category::Complex: return DataType::ComplexFloat;
  }
  LOOM_UNREACHABLE();
}

}  // namespace

// Two different integer types, as torch.promote_types: the narrowest signed type that holds
// both (UInt8 with Int8 is Int16); torch defines none for UInt16, UInt32 and UInt64 with another
// integer type, and neither does Loom.
DataType promoteIntegers(DataType a, DataType b) {
  const bool wide_unsigned_a = isUnsignedType(a) && a != DataType::UInt8;
  const bool wide_unsigned_b = isUnsignedType(b) && b != DataType::UInt8;
  LOOM_CHECK(!wide_unsigned_a && !wide_unsigned_b, "type promotion of ", a, " with ", b,
             " is not defined (as in torch, u16, u32 and u64 promote only with themselves, bool "
             "and the floating types); cast one operand first");
  if (a == DataType::UInt8) return b == DataType::Int8 ? DataType::Int16 : b;
  if (b == DataType::UInt8) return a == DataType::Int8 ? DataType::Int16 : a;
  return dataTypeSize(a) >= dataTypeSize(b) ? a : b;  // both signed: the wider
}

DataType promoteTypes(DataType a, DataType b) {
  if (a == b) return a;
  if (isBooleanType(a)) return b;
  if (isBooleanType(b)) return a;
  if (isIntegralType(a) && isIntegralType(b)) return promoteIntegers(a, b);
  if (isIntegralType(a)) return b;
  if (isIntegralType(b)) return a;
  // A complex type with a floating one: complex with the wider part (c64 with f64 is c128).
  if (isComplexType(a) || isComplexType(b)) {
    return complexTypeOf(promoteTypes(complexPartType(a), complexPartType(b)));
  }
  // Both floating and different: Float16 with BFloat16 meet in Float32; otherwise the wider.
  if (isReducedPrecision(a) && isReducedPrecision(b)) return DataType::Float32;
  if (a == DataType::Float64 || b == DataType::Float64) return DataType::Float64;
  return DataType::Float32;
}

namespace {

using MaybeType = std::optional<DataType>;

MaybeType promoteSkipUnset(MaybeType a, MaybeType b) {
  if (!a) return b;
  if (!b) return a;
  return promoteTypes(*a, *b);
}

// The type of a `higher` tier (tensors with dims over 0-dim tensors, 0-dim tensors over numbers)
// met by a `lower` one: the lower tier counts only when its category is above the higher's
// (torch's combine_categories).
MaybeType combineTiers(MaybeType higher, MaybeType lower) {
  if (!higher) return lower;
  if (!lower || isComplexType(*higher)) return higher;
  if (isComplexType(*lower)) {
    // A complex lower tier with floating higher ones keeps their precision, as torch does (f64
    // tensor times 1j is c128; f16 has no complex type in Loom and gives c64).
    return isFloatingType(*higher) ? complexTypeOf(*higher) : *lower;
  }
  if (isFloatingType(*higher)) return higher;
  if (isBooleanType(*higher) || isFloatingType(*lower)) return promoteTypes(*higher, *lower);
  return higher;
}

}  // namespace

DataType resultType(std::span<const Operand> operands) {
  LOOM_CHECK(!operands.empty(), "resultType needs at least one operand");
  // torch's three tiers: tensors with dims, 0-dim tensors, and numbers (Scalars), which count
  // by their category's default type.
  MaybeType dims, zero_dim, numbers;
  for (const Operand& op : operands) {
    DataType t = op.val()->dtype();
    if (!op.isTensor()) {
      numbers = promoteSkipUnset(numbers, defaultType(categoryOf(t)));
    } else if (op.tensor()->rank() > 0) {
      dims = promoteSkipUnset(dims, t);
    } else {
      zero_dim = promoteSkipUnset(zero_dim, t);
    }
  }
  return *combineTiers(dims, combineTiers(zero_dim, numbers));
}

DataType selectionType(std::span<const Operand> operands) {
  bool any_tensor = false;
  for (const Operand& op : operands) any_tensor = any_tensor || op.isTensor();
  if (any_tensor) return resultType(operands);
  DataType t = operands.front().val()->dtype();
  for (const Operand& op : operands.subspan(1)) t = promoteTypes(t, op.val()->dtype());
  return t;
}

DataType computeType(std::span<const Operand> operands, PromotionKind kind) {
  DataType t = resultType(operands);
  if (kind == PromotionKind::IntToFloat && !isFloatingType(t) && !isComplexType(t)) {
    t = DataType::Float32;
  }
  if (isReducedPrecision(t)) t = DataType::Float32;
  return t;
}

}  // namespace loom::ops
