// SPDX-License-Identifier: Apache-2.0
// Checks the IR contract (base.h) on a whole fusion. Throws InternalError naming the first broken
// rule; user-facing entry points (the parser) translate that into a UserError.
#pragma once

#include <optional>
#include <string>

namespace loom::ir {

class Expr;
class Fusion;

/// The rules one expr keeps on its own: operand ranks, the IterTypes of its output IDs and the
/// dtypes of its operands and outputs (docs/text-format.md, "Types" and "IterTypes of op
/// outputs"); for a Split, Merge or Resize the IterTypes of its outputs. The first broken rule,
/// naming the expr and the value, or nullopt. verify() checks it for every expr.
std::optional<std::string> exprProblem(const Expr* e);

/// SSA links, input/output rules, exprProblem of every expr, and for every tensor: domains connected by Split/Merge exprs
/// (Resize too from root to logical; a dynamic reshape's logical IDs are fresh), contiguity
/// aligned with allocation, each parallel type at most once in the loop domain.
void verify(const Fusion& fusion);

/// What a fusion needs beyond the IR contract to be run (the parser and FusionExecutorCache
/// check it): every reduction reduces some dim. (The contract allows a reduction without
/// reduction IDs: clearReductionIterDomains leaves one on the way to a communication.)
/// Throws InternalError like verify().
void verifyRunnable(const Fusion& fusion);

}  // namespace loom::ir
