// SPDX-License-Identifier: Apache-2.0
// Operand: wraps tensors, Scalars and C++ numbers (as constants of the active fusion).
#include "loom/ops/operand.h"

#include "loom/ir/builder.h"

namespace loom::ops {

Operand::Operand(Val* v) : val_(v) {
  LOOM_CHECK(v != nullptr && (v->isA<TensorView>() || v->isA<Scalar>()),
             "an op operand must be a TensorView or a Scalar, got ",
             v != nullptr ? v->toString() : std::string("nullptr"));
}

Operand::Operand(double v) : val_(ir::IrBuilder::constant(v)) {}
Operand::Operand(int64_t v) : val_(ir::IrBuilder::constant(v)) {}
Operand::Operand(bool v) : val_(ir::IrBuilder::constant(v)) {}
Operand::Operand(std::complex<double> v)
    : val_(ir::IrBuilder::constant(v, DataType::ComplexDouble)) {}

}  // namespace loom::ops
