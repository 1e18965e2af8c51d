// SPDX-License-Identifier: Apache-2.0
// Names and sizes of DataTypes.
#include "loom/tensor/data_type.h"

#include <algorithm>
#include <cmath>
#include <limits>

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
    case DataType::Int8: return 1;
    case DataType::Int16: return 2;
    case DataType::UInt8: return 1;
    case DataType::UInt16: return 2;
    case DataType::UInt32: return 4;
    case DataType::UInt64: return 8;
    case DataType::Float8_e4m3fn:
    case DataType::Float8_e5m2: return 1;
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
    case DataType::Int8: return "i8";
    case DataType::Int16: return "i16";
    case DataType::UInt8: return "u8";
    case DataType::UInt16: return "u16";
    case DataType::UInt32: return "u32";
    case DataType::UInt64: return "u64";
    case DataType::Float8_e4m3fn: return "f8e4m3fn";
    case DataType::Float8_e5m2: return "f8e5m2";
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
    case DataType::Int8: return "int8_t";
    case DataType::Int16: return "int16_t";
    case DataType::UInt8: return "uint8_t";
    case DataType::UInt16: return "uint16_t";
    case DataType::UInt32: return "uint32_t";
    case DataType::UInt64: return "uint64_t";
    // The runtime library's own one-byte types (runtime/types.cuh), with torch's conversions.
    case DataType::Float8_e4m3fn: return "loom::Float8_e4m3fn";
    case DataType::Float8_e5m2: return "loom::Float8_e5m2";
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
      {"i8", DataType::Int8},
      {"int8", DataType::Int8},
      {"i16", DataType::Int16},
      {"int16", DataType::Int16},
      {"u8", DataType::UInt8},
      {"uint8", DataType::UInt8},
      {"u16", DataType::UInt16},
      {"uint16", DataType::UInt16},
      {"u32", DataType::UInt32},
      {"uint32", DataType::UInt32},
      {"u64", DataType::UInt64},
      {"uint64", DataType::UInt64},
      {"f8e4m3fn", DataType::Float8_e4m3fn},
      {"float8_e4m3fn", DataType::Float8_e4m3fn},
      {"f8e5m2", DataType::Float8_e5m2},
      {"float8_e5m2", DataType::Float8_e5m2},
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

int64_t wrapInteger(int64_t v, DataType dtype) {
  const auto u = uint64_t(v);
  switch (dtype) {
    case DataType::Bool: return v != 0 ? 1 : 0;
    case DataType::Int8: return int8_t(uint8_t(u));
    case DataType::Int16: return int16_t(uint16_t(u));
    case DataType::Int32: return int32_t(uint32_t(u));
    case DataType::UInt8: return uint8_t(u);
    case DataType::UInt16: return uint16_t(u);
    case DataType::UInt32: return uint32_t(u);
    default: return v;
  }
}

double integerToDouble(int64_t v, DataType dtype) {
  return dtype == DataType::UInt64 ? double(uint64_t(v)) : double(v);
}

int64_t floatToInteger(double v, DataType dtype) {
  if (std::isnan(v)) return 0;
  const double t = std::trunc(v);
  constexpr double kTwo63 = 9223372036854775808.0;  // exact in double
  if (dtype == DataType::UInt64 && t >= kTwo63) {
    return t >= 2.0 * kTwo63 ? int64_t(~uint64_t(0)) : int64_t(uint64_t(t));
  }
  const int64_t i = t >= kTwo63                  ? std::numeric_limits<int64_t>::max()
                    : t <= -kTwo63               ? std::numeric_limits<int64_t>::min()
                                                 : int64_t(t);
  if (dtype == DataType::Int32) {
    return std::clamp<int64_t>(i, std::numeric_limits<int32_t>::min(),
                               std::numeric_limits<int32_t>::max());
  }
  return wrapInteger(i, dtype);
}

std::ostream& operator<<(std::ostream& os, DataType dtype) { return os << dataTypeName(dtype); }

}  // namespace loom
