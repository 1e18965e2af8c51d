// SPDX-License-Identifier: Apache-2.0
// The unary math functions defined on floating values only (float_only_ops.h).
#include "loom/ir/float_only_ops.h"

namespace loom::ir {

bool isFloatOnlyOp(UnaryOpType t) {
  switch (t) {
    case UnaryOpType::Exp:
    case UnaryOpType::Exp2:
    case UnaryOpType::Log:
    case UnaryOpType::Log2:
    case UnaryOpType::Sqrt:
    case UnaryOpType::Rsqrt:
    case UnaryOpType::Reciprocal:
    case UnaryOpType::Sin:
    case UnaryOpType::Cos:
    case UnaryOpType::Tanh:
    case UnaryOpType::Sigmoid:
    case UnaryOpType::Silu:
    case UnaryOpType::Erf:
    case UnaryOpType::Acos:
    case UnaryOpType::Acosh:
    case UnaryOpType::Asin:
    case UnaryOpType::Asinh:
    case UnaryOpType::Atan:
    case UnaryOpType::Atanh:
    case UnaryOpType::Cosh:
    case UnaryOpType::Sinh:
    case UnaryOpType::Tan:
    case UnaryOpType::Erfc:
    case UnaryOpType::Erfinv:
    case UnaryOpType::Erfcinv:
    case UnaryOpType::Expm1:
    case UnaryOpType::Log10:
    case UnaryOpType::Log1p:
    case UnaryOpType::Lgamma: return true;
    default: return false;
  }
}

}  // namespace loom::ir
