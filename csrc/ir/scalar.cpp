// SPDX-License-Identifier: Apache-2.0
// Scalar: constants and symbolic scalars.
#include "loom/ir/scalar.h"

#include <charconv>
#include <cmath>

#include "loom/ir/cloner.h"

namespace loom::ir {
namespace {

// Converts a constant to the representation of its dtype, so Scalar(i64, 2.7) holds 2.
ScalarValue normalize(DataType dtype, const ScalarValue& v) {
  if (std::holds_alternative<std::monostate>(v)) return v;
  if (isComplexType(dtype)) {
    if (auto* c = std::get_if<std::complex<double>>(&v)) return *c;
  }
  double d = std::visit(
      [](auto x) -> double {
        if constexpr (std::is_same_v<decltype(x), std::monostate>) {
          return 0.0;
        } else if constexpr (std::is_same_v<decltype(x), std::complex<double>>) {
          return x.real();
        } else {
          return double(x);
        }
      },
      v);
  if (isComplexType(dtype)) return std::complex<double>(d, 0.0);
  if (isBooleanType(dtype)) {
    if (auto* b = std::get_if<bool>(&v)) return *b;
    return d != 0.0;
  }
  if (isIntegralType(dtype)) {
    const bool narrow_or_unsigned = dtype != DataType::Int32 && dtype != DataType::Int64;
    if (auto* i = std::get_if<int64_t>(&v)) return narrow_or_unsigned ? wrapInteger(*i, dtype) : *i;
    LOOM_CHECK(std::isfinite(d), "constant ", d, " cannot be an integer of type ", dtype);
    return narrow_or_unsigned ? floatToInteger(d, dtype) : int64_t(d);
  }
  return d;
}

}  // namespace

Scalar::Scalar(DataType dtype) : Val(NodeKind::Scalar, dtype) {}

Scalar::Scalar(DataType dtype, ScalarValue value)
    : Val(NodeKind::Scalar, dtype), value_(normalize(dtype, value)) {}

Scalar::Scalar(const Scalar* src, IrCloner&) : Val(NodeKind::Scalar, src->dtype()),
                                               value_(src->value_) {}

Statement* Scalar::cloneInto(IrCloner& cloner) const { return new Scalar(this, cloner); }

bool Scalar::isConst() const {
  return !std::holds_alternative<std::monostate>(value_) && definition() == nullptr;
}

std::optional<int64_t> Scalar::constInt() const {
  if (!isConst()) return std::nullopt;
  if (auto* i = std::get_if<int64_t>(&value_)) return *i;
  if (auto* b = std::get_if<bool>(&value_)) return *b ? 1 : 0;
  return std::nullopt;
}

std::optional<double> Scalar::constDouble() const {
  if (!isConst()) return std::nullopt;
  if (auto* d = std::get_if<double>(&value_)) return *d;
  if (auto* i = std::get_if<int64_t>(&value_)) return double(*i);
  if (auto* b = std::get_if<bool>(&value_)) return *b ? 1.0 : 0.0;
  if (auto* c = std::get_if<std::complex<double>>(&value_); c != nullptr && c->imag() == 0.0) {
    return c->real();
  }
  return std::nullopt;
}

namespace {

std::string doubleToString(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), d);  // shortest round-trip form
  std::string s(buf, res.ptr);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

}  // namespace

std::string scalarValueToString(const ScalarValue& v, DataType dtype) {
  (void)dtype;
  if (auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  if (auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (auto* d = std::get_if<double>(&v)) return doubleToString(*d);
  // The text form's complex constant: both parts, each as a double is written ("(1.0, -2.5)").
  if (auto* c = std::get_if<std::complex<double>>(&v)) {
    return "(" + doubleToString(c->real()) + ", " + doubleToString(c->imag()) + ")";
  }
  return "?";
}

std::string Scalar::toString() const {
  if (isConst()) return scalarValueToString(value_, dtype());
  return "s" + std::to_string(name());
}

}  // namespace loom::ir
