// SPDX-License-Identifier: Apache-2.0
// The ops defined on complex values (complex_ops.h).
#include "loom/ir/complex_ops.h"

namespace loom::ir {

bool isComplexOp(UnaryOpType t) {
  switch (t) {
    case UnaryOpType::Neg:
    case UnaryOpType::Conj:
    case UnaryOpType::Exp:
    case UnaryOpType::Log:
    case UnaryOpType::Sqrt:
    case UnaryOpType::Reciprocal:
    case UnaryOpType::Rsqrt:
    case UnaryOpType::Sin:
    case UnaryOpType::Cos:
    case UnaryOpType::Tan:
    case UnaryOpType::Sinh:
    case UnaryOpType::Cosh:
    case UnaryOpType::Tanh:
    case UnaryOpType::Asin:
    case UnaryOpType::Acos:
    case UnaryOpType::Atan:
    case UnaryOpType::Asinh:
    case UnaryOpType::Acosh:
    case UnaryOpType::Atanh:
    case UnaryOpType::Log2:
    case UnaryOpType::Log10:
    case UnaryOpType::Sigmoid:
    case UnaryOpType::IsNan:
    case UnaryOpType::IsInf:
    case UnaryOpType::IsFinite:
    case UnaryOpType::IsReal:
    case UnaryOpType::Cast: return true;
    default: return isComplexToRealOp(t);
  }
}

bool isComplexToRealOp(UnaryOpType t) {
  return t == UnaryOpType::Abs || t == UnaryOpType::Real || t == UnaryOpType::Imag;
}

bool isComplexOp(BinaryOpType t) {
  switch (t) {
    case BinaryOpType::Add:
    case BinaryOpType::Sub:
    case BinaryOpType::Mul:
    case BinaryOpType::Div:
    case BinaryOpType::Eq:
    case BinaryOpType::Ne: return true;
    default: return false;
  }
}

bool isComplexOp(TernaryOpType t) { return t == TernaryOpType::Where; }

bool isComplexOp(ReductionOpType t) {
  return t == ReductionOpType::Sum || t == ReductionOpType::Prod;
}

}  // namespace loom::ir
