// SPDX-License-Identifier: Apache-2.0
// IrCloner: on-demand deep copy with memoization.
//
// Node clone constructors copy their plain fields and ask the cloner for the nodes they refer to
// (a tensor's domain, a domain's IDs, an expr's inputs). Vals never refer to their definition, so
// this recursion follows a DAG and ends. The copy is registered with the target fusion under the
// source's name; registering an expr wires its definitions and uses.
#include "loom/ir/cloner.h"

#include "loom/ir/fusion.h"

namespace loom::ir {

Statement*& IrCloner::slotFor(const Statement* s) {
  if (source_ == nullptr && s->fusion_ != nullptr) {
    source_ = s->fusion_;
    by_slot_.resize(size_t(source_->numStatements()));
  }
  if (s->fusion_ == nullptr || s->fusion_ != source_) return others_[s];
  if (s->slot_ >= by_slot_.size()) by_slot_.resize(size_t(source_->numStatements()));
  Entry& e = by_slot_[s->slot_];
  if (e.source == nullptr) e.source = s;
  return e.source == s ? e.copy : others_[s];
}

Statement* IrCloner::clone(const Statement* s) {
  if (s == nullptr) return nullptr;
  if (Statement* done = slotFor(s)) return done;
  Statement* copy = s->cloneInto(*this);
  // cloneInto may have cloned other statements (and grown by_slot_): look the slot up again.
  slotFor(s) = copy;
  target_->registerStatement(copy, s->name());
  return copy;
}

Statement* IrCloner::lookup(const Statement* s) const {
  if (s == nullptr) return nullptr;
  if (s->fusion_ != nullptr && s->fusion_ == source_) {
    if (s->slot_ < by_slot_.size() && by_slot_[s->slot_].source == s) {
      return by_slot_[s->slot_].copy;
    }
    for (const Entry& e : by_slot_) {  // the source changed since: positions moved
      if (e.source == s) return e.copy;
    }
  }
  auto it = others_.find(s);
  return it == others_.end() ? nullptr : it->second;
}

}  // namespace loom::ir
