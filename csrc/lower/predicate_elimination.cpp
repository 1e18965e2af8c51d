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
#include "index_ranges.h"

namespace loom::lower {

namespace {

struct Eliminator {
  kir::Kernel& kernel;
  IndexRanges ranges;
  bool changed = false;

  void visit(kir::Scope& scope) {
    for (size_t i = 0; i < scope.size();) {
      if (auto* f = scope[i]->dynCast<kir::ForLoop>()) {
        ranges.enterLoop(f);
        visit(f->body);
        ranges.exitLoop(f);
      } else if (auto* ite = scope[i]->dynCast<kir::IfThenElse>()) {
        kir::Value* cond = ranges.dropProvable(kernel, ite->cond);
        if (cond == nullptr) {
          // Always true: the then-body takes the if's place and is visited from its first stmt.
          kir::Scope then_body = ite->thenBody;
          scope.erase(scope.begin() + int64_t(i));
          scope.insert(scope.begin() + int64_t(i), then_body.begin(), then_body.end());
          changed = true;
          continue;
        }
        if (cond != ite->cond) {
          ite->cond = cond;
          changed = true;
        }
        IndexRanges::State saved = ranges.state();
        ranges.narrow(cond);
        visit(ite->thenBody);
        ranges.restore(std::move(saved));
        visit(ite->elseBody);
      }
      ++i;
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
