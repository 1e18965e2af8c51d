// SPDX-License-Identifier: Apache-2.0
// Pass unswitch: one hoisted predicate check around an unpredicated fast path of a loop nest.
//
// For an Unswitch loop U (runs after predicates, before indexing), every predicate inside U is
// evaluated with the indices of the serial loops at or inside U at their last iteration
// (stop - 1) and the results are and-ed. Predicates are `logical index < extent` where the
// logical index is built from loop indices by +, * with non-negative extents and / (merge outer),
// all non-decreasing in each loop index, or is a % (merge inner, always in range): when they hold
// at the last iteration they hold for all of them. Thread/block indices are per thread and kept.
// The fast path is a copy of U with the predicates' IfThenElses replaced by their bodies; the
// original, predicated U is the else branch (the tail). Statements are shared between both copies
// (indexing replaces scope slots, it does not mutate TensorOps); only loops and ifs are copied.
//
//   before: for i1 in Unswitch 0 .. 4:       after:  if (((i0 * 4) + 3) < T0.size[0]):
//             if ((i0 * 4) + i1) < 10:                  for i1 in Unswitch 0 .. 4:
//               tensor T1 = ...                           tensor T1 = ...
//                                                     else:
//                                                       for i1 in Unswitch 0 .. 4:
//                                                         if ((i0 * 4) + i1) < 10: ...
#include <unordered_set>

#include "index_compute.h"

namespace loom::lower {

namespace {

using VarMap = std::unordered_map<const kir::Var*, kir::Value*>;

struct Unswitcher {
  kir::Kernel& kernel;
  bool changed = false;
  std::unordered_set<std::string> seen;  // conditions already in the hoisted check

  // Conditions inside `scope` with serial loop indices at their last iteration, and-ed into cond.
  void hoist(const kir::Scope& scope, VarMap& last, kir::Value*& cond) {
    IndexBuilder b{kernel};
    for (kir::Stmt* s : scope) {
      if (auto* f = s->dynCast<kir::ForLoop>()) {
        if (f->isParallel()) {
          // Outside the loop its index is the thread/block index itself.
          std::string name(ir::parallelTypeName(f->ptype));  // "TIDx"
          std::string axis = (name[0] == 'T' ? "threadIdx." : "blockIdx.") + name.substr(3);
          last[f->index] = kernel.create<kir::NamedScalar>(axis);
        } else {
          last[f->index] = b.add(f->stop, kernel.constInt(-1));
        }
        hoist(f->body, last, cond);
        last.erase(f->index);
      } else if (auto* ite = s->dynCast<kir::IfThenElse>()) {
        kir::Value* c = substitute(kernel, ite->cond, last);
        if (seen.insert(kir::toString(c)).second) cond = b.logicalAnd(cond, c);
        hoist(ite->thenBody, last, cond);
        hoist(ite->elseBody, last, cond);
      }
    }
  }

  // A copy of `scope` whose IfThenElses (without else) are replaced by their then-bodies.
  kir::Scope unpredicated(const kir::Scope& scope) {
    kir::Scope out;
    for (kir::Stmt* s : scope) {
      if (auto* f = s->dynCast<kir::ForLoop>()) {
        auto* copy = kernel.create<kir::ForLoop>(f->index, f->start, f->stop, f->ptype, f->id);
        copy->body = unpredicated(f->body);
        out.push_back(copy);
      } else if (auto* ite = s->dynCast<kir::IfThenElse>(); ite && ite->elseBody.empty()) {
        kir::Scope inner = unpredicated(ite->thenBody);
        out.insert(out.end(), inner.begin(), inner.end());
      } else {
        out.push_back(s);
      }
    }
    return out;
  }

  // Block-wide steps must be reached by every thread, so a thread-dependent branch around them
  // is not allowed: such nests are left predicated.
  static bool hasCollective(const kir::Scope& scope) {
    for (const kir::Stmt* s : scope) {
      if (auto* f = s->dynCast<kir::ForLoop>()) {
        if (hasCollective(f->body)) return true;
      } else if (auto* ite = s->dynCast<kir::IfThenElse>()) {
        if (hasCollective(ite->thenBody) || hasCollective(ite->elseBody)) return true;
      } else if (!s->isA<kir::TensorOp>() && !s->isA<kir::Allocate>() &&
                 !s->isA<kir::DeclareVar>() && !s->isA<kir::Comment>()) {
        return true;
      }
    }
    return false;
  }

  void visit(kir::Scope& scope) {
    for (kir::Stmt*& s : scope) {
      if (auto* f = s->dynCast<kir::ForLoop>()) {
        if (f->ptype != ir::ParallelType::Unswitch) {
          visit(f->body);
          continue;
        }
        if (hasCollective(f->body)) continue;
        VarMap last;
        kir::Value* cond = nullptr;
        seen.clear();
        hoist(kir::Scope{f}, last, cond);
        if (cond == nullptr) continue;  // nothing predicated: the loop stays as it is
        auto* ite = kernel.create<kir::IfThenElse>(cond);
        ite->thenBody = unpredicated(kir::Scope{f});
        ite->elseBody.push_back(f);
        s = ite;
        changed = true;
      } else if (auto* ite = s->dynCast<kir::IfThenElse>()) {
        visit(ite->thenBody);
        visit(ite->elseBody);
      }
    }
  }
};

}  // namespace

bool unswitch(kir::Kernel& kernel, LowerContext& /*ctx*/) {
  Unswitcher u{kernel, false, {}};
  u.visit(kernel.body);
  return u.changed;
}

}  // namespace loom::lower
