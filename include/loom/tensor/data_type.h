// SPDX-License-Identifier: Apache-2.0
// Element types of Loom tensors and scalars.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string_view>

namespace loom {

/// Element types. Int64 is also the index type of extents and loop indices.
enum class DataType : uint8_t {
  Bool,
  Int32,
  Int64,
  Float16,
  BFloat16,
  Float32,
  Float64,
  ComplexFloat,   ///< two Float32s (real, imaginary): torch.complex64
  ComplexDouble,  ///< two Float64s: torch.complex128
  // The narrow and unsigned integers (torch.int8 ... torch.uint64; nvFuser's Char, Short, Byte,
  // UInt16, UInt32, UInt64). Listed last so that the older enumerators keep their values.
  Int8,
  Int16,
  UInt8,
  UInt16,
  UInt32,
  UInt64,
  // The 8-bit floats (torch.float8_e4m3fn, torch.float8_e5m2; nvFuser's names): stored in one
  // byte, computed in Float32 like the 16-bit floats. E4M3FN has no infinity (0x7F/0xFF are NaN,
  // 448 the largest finite, casts saturate), E5M2 is IEEE-like (57344 the largest finite).
  // Conversions follow torch's exactly (float8.h).
  Float8_e4m3fn,
  Float8_e5m2,
};

inline constexpr DataType kIndexType = DataType::Int64;

/// Every DataType, in enum order.
inline constexpr DataType kAllDataTypes[] = {
    DataType::Bool,    DataType::Int32,        DataType::Int64,
    DataType::Float16, DataType::BFloat16,     DataType::Float32,
    DataType::Float64, DataType::ComplexFloat, DataType::ComplexDouble,
    DataType::Int8,    DataType::Int16,        DataType::UInt8,
    DataType::UInt16,  DataType::UInt32,       DataType::UInt64,
    DataType::Float8_e4m3fn, DataType::Float8_e5m2};

/// Size of one element in bytes.
size_t dataTypeSize(DataType dtype);

/// Short name used in the text form and messages: bool, i8, i16, i32, i64, u8, u16, u32, u64,
/// f8e4m3fn, f8e5m2, f16, bf16, f32, f64, c64, c128 (the complex types are named by their total
/// width, as torch's complex64 / complex128).
std::string_view dataTypeName(DataType dtype);

/// Inverse of dataTypeName; also accepts long names (float32, bfloat16, int64, ...).
std::optional<DataType> parseDataType(std::string_view name);

/// Float8_e4m3fn or Float8_e5m2.
inline bool isFloat8Type(DataType t) {
  return t == DataType::Float8_e4m3fn || t == DataType::Float8_e5m2;
}
inline bool isFloatingType(DataType t) {
  return t == DataType::Float16 || t == DataType::BFloat16 || t == DataType::Float32 ||
         t == DataType::Float64 || isFloat8Type(t);
}
/// ComplexFloat or ComplexDouble. Complex types are not floating types (torch.is_floating_point is
/// false for them); the ops that accept them say so (docs/ops.md, "Complex numbers").
inline bool isComplexType(DataType t) {
  return t == DataType::ComplexFloat || t == DataType::ComplexDouble;
}
/// The type of one part of a complex type (Float32 / Float64); other types are their own.
inline DataType complexPartType(DataType t) {
  return t == DataType::ComplexFloat    ? DataType::Float32
         : t == DataType::ComplexDouble ? DataType::Float64
                                        : t;
}
/// The complex type whose parts are `t` (Float64 -> ComplexDouble; every other type, complex
/// ones included, -> ComplexFloat unless it is already ComplexDouble).
inline DataType complexTypeOf(DataType t) {
  return t == DataType::Float64 || t == DataType::ComplexDouble ? DataType::ComplexDouble
                                                                : DataType::ComplexFloat;
}
/// The integer types, signed and unsigned (not Bool).
inline bool isIntegralType(DataType t) {
  switch (t) {
    case DataType::Int8:
    case DataType::Int16:
    case DataType::Int32:
    case DataType::Int64:
    case DataType::UInt8:
    case DataType::UInt16:
    case DataType::UInt32:
    case DataType::UInt64: return true;
    default: return false;
  }
}
/// UInt8, UInt16, UInt32 or UInt64.
inline bool isUnsignedType(DataType t) {
  return t == DataType::UInt8 || t == DataType::UInt16 || t == DataType::UInt32 ||
         t == DataType::UInt64;
}
/// The width in bits of an integral type (8 for Bool).
inline int integerBits(DataType t) {
  switch (t) {
    case DataType::Bool:
    case DataType::Int8:
    case DataType::UInt8: return 8;
    case DataType::Int16:
    case DataType::UInt16: return 16;
    case DataType::Int32:
    case DataType::UInt32: return 32;
    default: return 64;
  }
}
inline bool isBooleanType(DataType t) { return t == DataType::Bool; }
/// Float16, BFloat16 and the 8-bit floats: stored narrower than Float32, computed in Float32.
inline bool isReducedPrecision(DataType t) {
  return t == DataType::Float16 || t == DataType::BFloat16 || isFloat8Type(t);
}

/// Integers of every integral type are carried in an int64_t: the value itself for the signed
/// types and the unsigned ones up to 32 bits, the bit pattern for UInt64 (values from 2^63 up
/// read as negative int64s). These three functions are the one definition of the conversions.
///
/// Two's-complement wrap of `v` to the width of `dtype` (sign-extended for signed types,
/// zero-extended for unsigned ones; Bool: `v != 0`; other types: `v`).
int64_t wrapInteger(int64_t v, DataType dtype);
/// The value carried by `v` as a double (UInt64: the unsigned value, rounded to nearest).
double integerToDouble(int64_t v, DataType dtype);
/// A floating value converted to integral `dtype` (docs/ops.md, "Integer types"): truncation
/// toward zero; Int32 and Int64 saturate; the other integer types wrap the truncated value
/// (saturated to int64) to their width, as torch does on the CPU for every value in range;
/// UInt64 takes [2^63, 2^64) exactly and saturates above; NaN gives 0.
int64_t floatToInteger(double v, DataType dtype);

/// Name of the matching C++ type in generated code (bool, int, int64_t, __half, ...).
std::string_view cudaTypeName(DataType dtype);

std::ostream& operator<<(std::ostream& os, DataType dtype);

}  // namespace loom
