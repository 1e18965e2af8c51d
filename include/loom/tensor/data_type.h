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
};

inline constexpr DataType kIndexType = DataType::Int64;

/// Every DataType, in enum order.
inline constexpr DataType kAllDataTypes[] = {
    DataType::Bool,    DataType::Int32,        DataType::Int64,
    DataType::Float16, DataType::BFloat16,     DataType::Float32,
    DataType::Float64, DataType::ComplexFloat, DataType::ComplexDouble};

/// Size of one element in bytes.
size_t dataTypeSize(DataType dtype);

/// Short name used in the text form and messages: bool, i32, i64, f16, bf16, f32, f64, c64, c128
/// (the complex types are named by their total width, as torch's complex64 / complex128).
std::string_view dataTypeName(DataType dtype);

/// Inverse of dataTypeName; also accepts long names (float32, bfloat16, int64, ...).
std::optional<DataType> parseDataType(std::string_view name);

inline bool isFloatingType(DataType t) {
  return t == DataType::Float16 || t == DataType::BFloat16 || t == DataType::Float32 ||
         t == DataType::Float64;
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
inline bool isIntegralType(DataType t) { return t == DataType::Int32 || t == DataType::Int64; }
inline bool isBooleanType(DataType t) { return t == DataType::Bool; }
/// Float16 or BFloat16: stored in 16 bits, computed in Float32.
inline bool isReducedPrecision(DataType t) {
  return t == DataType::Float16 || t == DataType::BFloat16;
}

/// Name of the matching C++ type in generated code (bool, int, int64_t, __half, ...).
std::string_view cudaTypeName(DataType dtype);

std::ostream& operator<<(std::ostream& os, DataType dtype);

}  // namespace loom
