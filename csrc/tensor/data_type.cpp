// SPDX-License-Identifier: Apache-2.0
// Names and sizes of DataTypes.
#include "loom/tensor/data_type.h"

#include "loom/support/error.h"

namespace loom {

size_t dataTypeSize(DataType dtype) {
  switch (dtype) {
    case DataType::Bool: return 1;
    case DataType::Int32: return 4;
    case DataType::Int64: return 8;
    case DataType::Float16: return 2;
    case DataType::BFloat16: return 2;
    case DataType::Float32: return 4;
    case DataType::Float64: return 8;
    case DataType::ComplexFloat: return 8;
    case DataType::ComplexDouble: return 16;
  }
  LOOM_UNREACHABLE("bad DataType ", static_cast<int>(dtype));
}

std::string_view dataTypeName(DataType dtype) {
  switch (dtype) {
    case DataType::Bool: return "bool";
    case DataType::Int32: return "i32";
    case DataType::Int64: return "i64";
    case DataType::Float16: return "f16";
    case DataType::BFloat16: return "bf16";
    case DataType::Float32: return "f32";
    case DataType::Float64: return "f64";
    case DataType::ComplexFloat: return "c64";
    case DataType::ComplexDouble: return "c128";
  }
  LOOM_UNREACHABLE("bad DataType ", static_cast<int>(dtype));
}

std::string_view cudaTypeName(DataType dtype) {
  switch (dtype) {
    case DataType::Bool: return "bool";
    case DataType::Int32: return "int";
    case DataType::Int64: return "int64_t";
    case DataType::Float16: return "__half";
    case DataType::BFloat16: return "__nv_bfloat16";
    case DataType::Float32: return "float";
    case DataType::Float64: return "double";
    case DataType::ComplexFloat: return "loom::Complex<float>";
    case DataType::ComplexDouble: return "loom::Complex<double>";
  }
  LOOM_UNREACHABLE("bad DataType ", static_cast<int>(dtype));
}

std::optional<DataType> parseDataType(std::string_view name) {
  struct Alias {
    std::string_view name;
    DataType dtype;
  };
  static constexpr Alias kAliases[] = {
      {"bool", DataType::Bool},
      {"i32", DataType::Int32},
      {"int32", DataType::Int32},
      {"i64", DataType::Int64},
      {"int64", DataType::Int64},
      {"f16", DataType::Float16},
      {"float16", DataType::Float16},
      {"half", DataType::Float16},
      {"bf16", DataType::BFloat16},
      {"bfloat16", DataType::BFloat16},
      {"f32", DataType::Float32},
      {"float32", DataType::Float32},
      {"float", DataType::Float32},
      {"f64", DataType::Float64},
      {"float64", DataType::Float64},
      {"double", DataType::Float64},
      {"c64", DataType::ComplexFloat},
      {"complex64", DataType::ComplexFloat},
      {"cfloat", DataType::ComplexFloat},
      {"c128", DataType::ComplexDouble},
      {"complex128", DataType::ComplexDouble},
      {"cdouble", DataType::ComplexDouble},
  };
  for (const auto& a : kAliases) {
    if (a.name == name) return a.dtype;
  }
  return std::nullopt;
}

std::ostream& operator<<(std::ostream& os, DataType dtype) { return os << dataTypeName(dtype); }

}  // namespace loom
