// SPDX-License-Identifier: Apache-2.0
// The rules one expr keeps on its own: operand ranks, the IterTypes its output IDs take from its
// operands, and the dtypes of its operands and outputs (docs/text-format.md, "Types" and
// "IterTypes"). ir::verify applies them to every expr; the parser applies them to each line as it
// builds it, so that an error points at that line.
#pragma once

#include <optional>
#include <string>

namespace loom::ir {

class Expr;

/// What is wrong with math expr `e`, or nullopt. The text names the expr, the value and the rule.
std::optional<std::string> mathExprProblem(const Expr* e);

/// What is wrong with the IterTypes of a Split, Merge or Resize, or nullopt.
std::optional<std::string> transformProblem(const Expr* e);

/// What is wrong with the constant extents of a Split, Merge or Resize's outputs (each the
/// extent IterDomain::split, merge or resize would give it), or nullopt. The parser's check only:
/// sharding localizes extents after the transforms were built.
std::optional<std::string> extentProblem(const Expr* e);

}  // namespace loom::ir
