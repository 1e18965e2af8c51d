// SPDX-License-Identifier: Apache-2.0
// Scalar values: constants (a value, no definition) and symbolic scalars (bound at run time, or
// defined by scalar math such as the extent ceilDiv(N, 4) of a split).
#pragma once

#include <complex>
#include <optional>
#include <variant>

#include "loom/ir/base.h"

namespace loom::ir {

/// A constant's value: bool, integer, floating point or complex (ComplexFloat / ComplexDouble
/// constants; a complex value given for a real dtype keeps its real part).
using ScalarValue = std::variant<std::monostate, bool, int64_t, double, std::complex<double>>;

class Scalar : public Val {
 public:
  LOOM_DECLARE_CLONE(Scalar)

  /// A symbolic scalar of the given type.
  explicit Scalar(DataType dtype);
  /// A constant. The value is converted to `dtype` (double -> integer truncates).
  Scalar(DataType dtype, ScalarValue value);
  Scalar(const Scalar* src, IrCloner& cloner);

  /// True when the scalar has a value and no definition.
  bool isConst() const;
  const ScalarValue& value() const { return value_; }
  /// The constant as an integer / double, or nullopt when not a constant (or, for constDouble, a
  /// complex constant whose imaginary part is not 0).
  std::optional<int64_t> constInt() const;
  std::optional<double> constDouble() const;
  bool isConstInt(int64_t v) const { return constInt() == v; }

  std::string toString() const override;

 private:
  ScalarValue value_;
};

/// Prints a ScalarValue the way the text form writes constants (1, 2.5, true, inf, nan).
std::string scalarValueToString(const ScalarValue& v, DataType dtype);

}  // namespace loom::ir
