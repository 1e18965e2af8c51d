// SPDX-License-Identifier: Apache-2.0
// Pass eliminate_predicates: drops the conjuncts of predicates that hold for every index value.
//
// Runs after predicates and thread_predicates, before unswitch (so hoisted checks and vector
// predicates only carry what can fail). A conjunct `a < b` (also <=, ==, !=) is dropped when the
// bounds of both sides (index_ranges.h: loop indices over [start, stop), thread/block indices
// over [0, launch extent) with constant launches, interval arithmetic over + - * / % with
// int32-safe bounds) prove it: a split whose factors divide the extent (4096 = 8 * 128 * 4 gives
// max ((7 * 128 + 127) * 4 + 3) = 4095 < 4096) needs no guard, a non-divisible one keeps it, and
// a parallel loop narrower than its launch keeps its `index < extent` guard. Inside a kept
// guard `x < c` the bound of x is narrowed for the inner predicates. An IfThenElse whose whole
// condition is dropped is replaced by its then-body (its else-body can never run).
//
//   before: for i4 in 0 .. 8:                        after:  for i4 in 0 .. 8:
//             for i5 in TIDx 0 .. 128:  (launch 128)           for i5 in TIDx 0 .. 128:
//               for i6 in 0 .. 4:                                for i6 in 0 .. 4:
//                 if ((((i4*128)+i5)*4)+i6) < 4096:                tensor T3 = ...
//                   tensor T3 = ...
#include <optional>
#include <vector>

#include "index_ranges.h"

namespace loom::lower {

namespace {

struct Eliminator {
  kir::Kernel& kernel;
  IndexRanges ranges;
  bool changed = false;

  // A walk with an explicit stack of open scopes (a loop nest may be tens of thousands deep),
  // binding each loop's index in its body and narrowing bounds in each then-branch.
  void visit(kir::Scope& body) {
    struct Open {
      kir::Scope* scope;
      size_t next = 0;
      const kir::ForLoop* loop = nullptr;         ///< unbound when the scope is done
      std::optional<IndexRanges::State> restore;  ///< a then-branch: bounds before narrowing
    };
    std::vector<Open> stack;
    stack.push_back({&body, 0, nullptr, std::nullopt});
    while (!stack.empty()) {
      Open& o = stack.back();
      if (o.next >= o.scope->size()) {
        if (o.loop != nullptr) ranges.exitLoop(o.loop);
        if (o.restore) ranges.restore(std::move(*o.restore));
        stack.pop_back();
        continue;
      }
      kir::Scope& scope = *o.scope;
      const size_t i = o.next;
      if (auto* f = scope[i]->dynCast<kir::ForLoop>()) {
        ++o.next;
        ranges.enterLoop(f);
        stack.push_back({&f->body, 0, f, std::nullopt});
        continue;
      }
      auto* ite = scope[i]->dynCast<kir::IfThenElse>();
      if (ite == nullptr) {
        ++o.next;
        continue;
      }
      kir::Value* cond = ranges.dropProvable(kernel, ite->cond);
      if (cond == nullptr) {
        // Always true: the then-body takes the if's place and is walked from its first stmt.
        kir::Scope then_body = ite->thenBody;
        scope.erase(scope.begin() + int64_t(i));
        scope.insert(scope.begin() + int64_t(i), then_body.begin(), then_body.end());
        changed = true;
        continue;
      }
      ++o.next;
      if (cond != ite->cond) {
        ite->cond = cond;
        changed = true;
      }
      // The else-branch is walked after the then-branch, with the bounds restored.
      stack.push_back({&ite->elseBody, 0, nullptr, std::nullopt});
      IndexRanges::State saved = ranges.state();
      ranges.narrow(cond);
      stack.push_back({&ite->thenBody, 0, nullptr, std::move(saved)});
    }
  }
};

}  // namespace

bool eliminatePredicates(kir::Kernel& kernel, LowerContext& /*ctx*/) {
  Eliminator e{kernel, IndexRanges(kernel)};
  e.visit(kernel.body);
  return e.changed;
}

}  // namespace loom::lower
