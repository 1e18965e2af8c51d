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

  // Conditions inside `scope` with serial loop indices at their last iteration, and-ed into
  // cond in program order. Explicit stacks here and below: the nest may be deep.
  void hoist(const kir::Scope& scope, kir::Value*& cond) {
    IndexBuilder b{kernel};
    VarMap last;
    struct Open {
      const kir::Scope* scope;
      size_t next;
      const kir::Var* bound;  ///< the loop index to unbind when the scope is done
    };
    std::vector<Open> stack{{&scope, 0, nullptr}};
    while (!stack.empty()) {
      if (stack.back().next >= stack.back().scope->size()) {
        if (stack.back().bound != nullptr) last.erase(stack.back().bound);
        stack.pop_back();
        continue;
      }
      kir::Stmt* s = (*stack.back().scope)[stack.back().next++];
      if (auto* f = s->dynCast<kir::ForLoop>()) {
        if (f->isParallel()) {
          // Outside the loop its index is the thread/block index itself.
          std::string name(ir::parallelTypeName(f->ptype));  // "TIDx"
          std::string axis = (name[0] == 'T' ? "threadIdx." : "blockIdx.") + name.substr(3);
          last[f->index] = kernel.create<kir::NamedScalar>(axis);
        } else {
          last[f->index] = b.add(f->stop, kernel.constInt(-1));
        }
        stack.push_back({&f->body, 0, f->index});
      } else if (auto* ite = s->dynCast<kir::IfThenElse>()) {
        kir::Value* c = substitute(kernel, ite->cond, last);
        if (seen.insert(kir::toString(c)).second) cond = b.logicalAnd(cond, c);
        stack.push_back({&ite->elseBody, 0, nullptr});
        stack.push_back({&ite->thenBody, 0, nullptr});
      }
    }
  }

  // A copy of `scope` whose IfThenElses (without else) are replaced by their then-bodies.
  kir::Scope unpredicated(const kir::Scope& scope) {
    kir::Scope out;
    struct Open {
      const kir::Scope* src;
      size_t next;
      kir::Scope* dst;
    };
    std::vector<Open> stack{{&scope, 0, &out}};
    while (!stack.empty()) {
      if (stack.back().next >= stack.back().src->size()) {
        stack.pop_back();
        continue;
      }
      kir::Stmt* s = (*stack.back().src)[stack.back().next++];
      kir::Scope* dst = stack.back().dst;
      if (auto* f = s->dynCast<kir::ForLoop>()) {
        auto* copy = kernel.create<kir::ForLoop>(f->index, f->start, f->stop, f->ptype, f->id);
        copy->sharedBy = f->sharedBy;
        dst->push_back(copy);
        stack.push_back({&f->body, 0, &copy->body});
      } else if (auto* ite = s->dynCast<kir::IfThenElse>(); ite && ite->elseBody.empty()) {
        stack.push_back({&ite->thenBody, 0, dst});  // spliced where the if was
      } else {
        dst->push_back(s);
      }
    }
    return out;
  }

  // Block-wide steps must be reached by every thread, so a thread-dependent branch around them
  // is not allowed: such nests are left predicated.
  static bool hasCollective(const kir::Scope& scope) {
    bool found = false;
    kir::forEachStmt(scope, [&](const kir::Stmt* s) {
      found |= !s->isA<kir::ForLoop>() && !s->isA<kir::IfThenElse>() && !s->isA<kir::TensorOp>() &&
               !s->isA<kir::Allocate>() && !s->isA<kir::DeclareVar>() && !s->isA<kir::Comment>();
    });
    return found;
  }

  // Unswitch loops are found outside other unswitched nests (an unswitched nest is not
  // entered again).
  void visit(kir::Scope& body) {
    std::vector<std::pair<kir::Scope*, size_t>> stack{{&body, 0}};
    while (!stack.empty()) {
      if (stack.back().second >= stack.back().first->size()) {
        stack.pop_back();
        continue;
      }
      kir::Stmt*& s = (*stack.back().first)[stack.back().second++];
      if (auto* f = s->dynCast<kir::ForLoop>()) {
        if (f->ptype != ir::ParallelType::Unswitch) {
          stack.push_back({&f->body, 0});
          continue;
        }
        if (hasCollective(f->body)) continue;
        kir::Value* cond = nullptr;
        seen.clear();
        hoist(kir::Scope{f}, cond);
        if (cond == nullptr) continue;  // nothing predicated: the loop stays as it is
        auto* ite = kernel.create<kir::IfThenElse>(cond);
        ite->thenBody = unpredicated(kir::Scope{f});
        ite->elseBody.push_back(f);
        s = ite;
        changed = true;
      } else if (auto* ite = s->dynCast<kir::IfThenElse>()) {
        stack.push_back({&ite->elseBody, 0});
        stack.push_back({&ite->thenBody, 0});
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
