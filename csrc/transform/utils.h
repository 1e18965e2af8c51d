// SPDX-License-Identifier: Apache-2.0
// Private helpers of the transform layer: ID-graph walks inside one tensor, expr rebuilding, and
// producer/consumer queries between TensorViews.
#pragma once

#include <unordered_set>
#include <vector>

#include "loom/ir/ir.h"

namespace loom::transform::detail {

using ir::Expr;
using ir::IterDomain;
using ir::TensorView;

/// Split/Merge exprs on the paths from `from` to `to`, producers before consumers. The walk goes
/// backward from `to` through definitions and stops at IDs of `from` and at IDs that a Resize
/// (slice, pad) defines: Resize is never replayed or mapped through.
std::vector<Expr*> exprsBetween(const std::vector<IterDomain*>& from,
                                const std::vector<IterDomain*>& to);

/// Every IterDomain of a tensor's live schedule: root, logical, allocation, loop and the IDs
/// between them.
std::vector<IterDomain*> allIds(const TensorView* tv);
/// The live Split/Merge exprs of a tensor's schedule.
std::vector<Expr*> allIdExprs(const TensorView* tv);

/// TensorView inputs / outputs of an expr.
std::vector<TensorView*> tvInputs(const Expr* e);
std::vector<TensorView*> tvOutputs(const Expr* e);
/// Consumers of `tv` (outputs of its uses) and producers (inputs of its definition).
std::vector<TensorView*> consumersOf(const TensorView* tv);
std::vector<TensorView*> producersOf(const TensorView* tv);
/// Other outputs of tv's definition.
std::vector<TensorView*> siblingsOf(const TensorView* tv);

/// Rebuilds math expr `e` with the same inputs and attributes and new outputs (same count and
/// kinds). Registering the new expr replaces `e` as the definition of outputs it shares with `e`.
Expr* recreateWithOutputs(Expr* e, const std::vector<ir::Val*>& outputs);
/// Rebuilds math expr `e` with new inputs and outputs.
Expr* recreate(Expr* e, const std::vector<ir::Val*>& inputs, const std::vector<ir::Val*>& outputs);

/// A fresh domain with clones of `tv`'s logical IDs minus reductions, serial (a copy's output
/// domain).
ir::TensorDomain* copyDomain(const TensorView* tv);
/// A tensor on `domain` with `like`'s dtype and device mesh.
TensorView* newTensor(const TensorView* like, ir::TensorDomain* domain, ir::MemoryType memory);

/// "[i0, i3, i5]".
std::string idList(const std::vector<IterDomain*>& ids);

/// Every TensorView that depends on `tv` (not including it).
std::unordered_set<const TensorView*> downstreamOf(const TensorView* tv);
/// The tensors reachable from tv through consumers without entering any of `avoid` (tv itself
/// excluded unless reached again).
std::unordered_set<const TensorView*> downstreamOf(
    const TensorView* tv, const std::unordered_set<const TensorView*>& avoid);

}  // namespace loom::transform::detail
