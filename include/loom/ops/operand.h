// SPDX-License-Identifier: Apache-2.0
// Operand: what a pointwise op accepts: a tensor, a Scalar node, or a C++ number (which becomes a
// constant in the active fusion).
#pragma once

#include <cstdint>

#include "loom/ir/scalar.h"
#include "loom/ir/tensor_view.h"

namespace loom::ops {

using ir::Scalar;
using ir::TensorView;
using ir::Val;

class Operand {
 public:
  Operand(TensorView* tv) : val_(tv) {}  // NOLINT: implicit by design
  Operand(Scalar* s) : val_(s) {}        // NOLINT
  Operand(Val* v);                       // NOLINT; must be a TensorView or a Scalar
  Operand(double v);                     // NOLINT
  Operand(int64_t v);                    // NOLINT
  Operand(int v) : Operand(int64_t(v)) {}  // NOLINT
  Operand(bool v);                       // NOLINT
  /// A complex number: a ComplexDouble constant, of the complex category in type promotion.
  Operand(std::complex<double> v);  // NOLINT

  Val* val() const { return val_; }
  bool isTensor() const { return val_->isA<TensorView>(); }
  TensorView* tensor() const { return val_->dynCast<TensorView>(); }
  /// True for C++ numbers and Scalar nodes ("wrapped numbers" in type promotion).
  bool isScalar() const { return !isTensor(); }

 private:
  Val* val_;
};

}  // namespace loom::ops
