// SPDX-License-Identifier: Apache-2.0
// Structural equality of fusions: same graph shape, op types, dtypes, constants, domains,
// schedules and extent requirements, regardless of node names and creation order.
#pragma once

#include <string>

namespace loom::ir {

class Fusion;

/// True when `a` and `b` are structurally equal. On a mismatch, `why` (when given) says where.
bool structurallyEqual(const Fusion& a, const Fusion& b, std::string* why = nullptr);

}  // namespace loom::ir
