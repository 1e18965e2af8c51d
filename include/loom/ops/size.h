// SPDX-License-Identifier: Apache-2.0
// Size and SizeList: the sizes, bounds and pad widths that shape ops and factories take, each a
// C++ integer (a constant) or an integer Scalar bound at run time (a scalar fusion input, an
// extent, scalar math on them). A floating Scalar is taken too, as nvFuser takes it, cast to an
// index, but only an integral value is a size: 6.0 is 6, 6.5 a UserError naming it (when it is
// built for a constant, when the run binds its value otherwise: an ir::ExtentRequirement):
//
//   auto* n = ir::IrBuilder::symbolic(DataType::Int64);
//   fusion.addInput(n);
//   ops::reshape(x, {n, -1});                  // one size from a scalar input, one inferred
//   ops::full({n, 4}, 0.0, DataType::Float32);
#pragma once

#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "loom/ir/scalar.h"

namespace loom::ops {

class Size {
 public:
  Size(int64_t v) : value_(v) {}  // NOLINT: implicit by design
  Size(int v) : value_(v) {}      // NOLINT
  /// An integer or floating Scalar (the template keeps a literal 0 from meaning a null Scalar).
  template <typename T>
  requires std::same_as<T, ir::Scalar> Size(T* s) : scalar_(s) {  // NOLINT
    check();
  }

  /// The value when it is known now: a C++ integer or a constant Scalar.
  std::optional<int64_t> constant() const;
  bool isConst() const { return constant().has_value(); }
  /// The Scalar given, or nullptr for a C++ integer.
  ir::Scalar* scalar() const { return scalar_; }
  /// An index (Int64) Scalar in the active fusion: a constant, the Scalar itself, or a Cast of it.
  ir::Scalar* toScalar() const;
  /// "4", or the Scalar's name ("s3").
  std::string toString() const;

 private:
  void check() const;
  int64_t value_ = 0;
  ir::Scalar* scalar_ = nullptr;
};

/// A list of Sizes: written `{2, n, -1}`, or given as a std::vector of int64_t, Scalar* or Size.
class SizeList {
 public:
  SizeList(std::initializer_list<Size> sizes) : sizes_(sizes) {}   // NOLINT
  SizeList(std::vector<Size> sizes) : sizes_(std::move(sizes)) {}  // NOLINT
  SizeList(const std::vector<int64_t>& sizes);                     // NOLINT
  SizeList(const std::vector<ir::Scalar*>& sizes);                 // NOLINT

  size_t size() const { return sizes_.size(); }
  bool empty() const { return sizes_.empty(); }
  const Size& operator[](size_t i) const { return sizes_[i]; }
  auto begin() const { return sizes_.begin(); }
  auto end() const { return sizes_.end(); }
  /// The constants when every entry is known now.
  std::optional<std::vector<int64_t>> constants() const;
  /// "[2, s3, -1]".
  std::string toString() const;

 private:
  std::vector<Size> sizes_;
};

}  // namespace loom::ops
