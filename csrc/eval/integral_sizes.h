// SPDX-License-Identifier: Apache-2.0
// Floating sizes: a floating Scalar given as a size, bound or width (ops::Size: nvFuser's
// reshape to `192 * reciprocal(32)`) becomes an extent through a cast to an index; at run time
// its value must be integral, never truncated.
#pragma once

namespace loom::ir {
class Fusion;
}  // namespace loom::ir

namespace loom::eval {

class ExpressionEvaluator;

/// Checks every cast of a floating Scalar to an integer that a tensor's extent (or expanded
/// extent, or a slice or pad width) is computed from and `ee` can evaluate: a value that is not
/// an integer (6.5, inf, nan) is a UserError naming the Scalar, its value and the tensor.
void checkIntegralSizes(const ir::Fusion& fusion, ExpressionEvaluator& ee);

}  // namespace loom::eval
