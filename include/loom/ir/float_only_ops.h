// SPDX-License-Identifier: Apache-2.0
// The unary math functions defined on floating values only: the verifier's dtype rule and the
// ops layer's promotion (scalar and tensor forms) read the same list.
#pragma once

#include "loom/ir/op_types.h"

namespace loom::ir {

/// exp, log, sqrt, sin, tanh, erf, lgamma, ...: the operand is floating; on integers the ops
/// layer computes them in a floating type.
bool isFloatOnlyOp(UnaryOpType t);

}  // namespace loom::ir
