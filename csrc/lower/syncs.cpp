// SPDX-License-Identifier: Apache-2.0
// Pass syncs: a BlockSync between a write of a shared buffer and a later read of it (RAW).
//
// Within one scope, statements that wrote shared buffers since the last barrier are tracked; a
// statement that reads one of them gets a BlockSync in front. BlockReduce ends with a barrier, so
// it clears the tracking. Nested scopes are checked on their own (a conservative first version:
// WAR hazards and hazards carried around loop back edges come with shared-memory tensors).
//
//   before: T3[i1] = ...            after:  T3[i1] = ...
//           T4[i1] = T3[(127 - i1)]         block_sync
//                                           T4[i1] = T3[(127 - i1)]
#include <unordered_set>

#include "loom/lower/lower.h"

namespace loom::lower {

namespace {

using BufferSet = std::unordered_set<const kir::Buffer*>;

void valueReads(const kir::Value* v, BufferSet& reads) {
  if (v == nullptr) return;
  switch (v->kind()) {
    case kir::NodeKind::Load:
      reads.insert(v->as<kir::Load>()->buffer);
      valueReads(v->as<kir::Load>()->index, reads);
      return;
    case kir::NodeKind::UnaryExpr: valueReads(v->as<kir::UnaryExpr>()->in, reads); return;
    case kir::NodeKind::BinaryExpr:
      valueReads(v->as<kir::BinaryExpr>()->lhs, reads);
      valueReads(v->as<kir::BinaryExpr>()->rhs, reads);
      return;
    case kir::NodeKind::TernaryExpr:
      valueReads(v->as<kir::TernaryExpr>()->a, reads);
      valueReads(v->as<kir::TernaryExpr>()->b, reads);
      valueReads(v->as<kir::TernaryExpr>()->c, reads);
      return;
    default: return;
  }
}

void accesses(const kir::Stmt* s, BufferSet& reads, BufferSet& writes) {
  if (auto* st = s->dynCast<kir::Store>()) {
    if (st->buffer) writes.insert(st->buffer);
    valueReads(st->index, reads);
    valueReads(st->value, reads);
  } else if (auto* f = s->dynCast<kir::ForLoop>()) {
    for (const kir::Stmt* c : f->body) accesses(c, reads, writes);
  } else if (auto* i = s->dynCast<kir::IfThenElse>()) {
    valueReads(i->cond, reads);
    for (const kir::Stmt* c : i->thenBody) accesses(c, reads, writes);
    for (const kir::Stmt* c : i->elseBody) accesses(c, reads, writes);
  }
}

bool visit(kir::Kernel& kernel, kir::Scope& scope) {
  bool changed = false;
  BufferSet pending;
  for (size_t i = 0; i < scope.size(); ++i) {
    kir::Stmt* s = scope[i];
    if (s->isA<kir::BlockSync>() || s->isA<kir::BlockReduce>()) {
      pending.clear();
      continue;
    }
    BufferSet reads, writes;
    accesses(s, reads, writes);
    bool hazard = false;
    for (const kir::Buffer* b : reads) hazard |= pending.count(b) != 0;
    if (hazard) {
      scope.insert(scope.begin() + int64_t(i), kernel.create<kir::BlockSync>());
      ++i;
      pending.clear();
      changed = true;
    }
    for (const kir::Buffer* b : writes) {
      if (b->kind == kir::BufferKind::Shared) pending.insert(b);
    }
    if (auto* f = s->dynCast<kir::ForLoop>()) changed |= visit(kernel, f->body);
  }
  return changed;
}

}  // namespace

bool syncs(kir::Kernel& kernel, LowerContext& /*ctx*/) { return visit(kernel, kernel.body); }

}  // namespace loom::lower
