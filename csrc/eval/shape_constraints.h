// SPDX-License-Identifier: Apache-2.0
// The extent equalities a fusion's exprs impose, checked once the inputs are bound.
//
// Every expr lines its operands' dims up with its outputs' dims (ir::pairwiseLogicalMap): an
// operand of add, the input of a reduction and the reduced dim, a reshape's input and its root.
// Dims lined up that way must have equal sizes, unless the operand's dim is a declared broadcast
// (size 1, stretched), a symbolic dim that is 1 at run time (a dynamic reshape's broadcast), or a
// size-1 dim an expand stretches. Binding sizes alone cannot see these: two inputs [s0] and [s1]
// of one add bind s0 and s1 separately, and a kernel that trusts s0 reads past the end of the
// second input.
#pragma once

#include <functional>
#include <string>

namespace loom::ir {
class Fusion;
class Val;
}  // namespace loom::ir

namespace loom::eval {

class ExpressionEvaluator;

/// Checks every extent equality of `fusion`'s exprs whose both sides `ee` can evaluate. A
/// mismatch is a UserError naming the expr, both tensors and dims with their sizes, and (through
/// `origin`, which may return "") where each symbolic extent got its size.
void checkShapeConstraints(const ir::Fusion& fusion, ExpressionEvaluator& ee,
                           const std::function<std::string(const ir::Val*)>& origin);

}  // namespace loom::eval
