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

Statement* IrCloner::clone(const Statement* s) {
  if (s == nullptr) return nullptr;
  if (auto it = map_.find(s); it != map_.end()) return it->second;
  Statement* copy = s->cloneInto(*this);
  map_[s] = copy;
  target_->registerStatement(copy, s->name());
  return copy;
}

Statement* IrCloner::lookup(const Statement* s) const {
  auto it = map_.find(s);
  return it == map_.end() ? nullptr : it->second;
}

}  // namespace loom::ir
