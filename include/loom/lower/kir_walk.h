// SPDX-License-Identifier: Apache-2.0
// Walks over Kernel IR without recursion. A kernel's loop nest is as deep as its tensors have
// loop IDs and an index expression as deep as the splits behind it, both without a bound a user
// cannot exceed (a chain of 20,000 splits is a legal schedule): passes walk scopes and values with
// explicit stacks, so that the depth costs heap, not the thread's stack.
#pragma once

#include <ostream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "loom/lower/kernel_ir.h"

namespace loom::kir {

/// Calls fn(scope, i, loops) for every statement under `root` that is neither a loop nor an if,
/// in program order (then-branch before else-branch), with `loops` the enclosing ForLoops,
/// outermost first. fn may replace scope[i]; the walk goes on with scope[i + 1] and does not
/// descend into what fn put there.
template <typename Fn>
void forEachWithLoops(Scope& root, std::vector<ForLoop*>& loops, Fn&& fn) {
  struct Open {
    Scope* scope;
    size_t next;
    bool loop_body;
  };
  std::vector<Open> stack{{&root, 0, false}};
  while (!stack.empty()) {
    if (stack.back().next >= stack.back().scope->size()) {
      if (stack.back().loop_body) loops.pop_back();
      stack.pop_back();
      continue;
    }
    Scope& scope = *stack.back().scope;
    const size_t i = stack.back().next++;
    if (auto* f = scope[i]->dynCast<ForLoop>()) {
      loops.push_back(f);
      stack.push_back({&f->body, 0, true});
    } else if (auto* ite = scope[i]->dynCast<IfThenElse>()) {
      stack.push_back({&ite->elseBody, 0, false});
      stack.push_back({&ite->thenBody, 0, false});
    } else {
      fn(scope, i, loops);
    }
  }
}

/// The scope that holds each ForLoop under `root` (passes that put statements in front of a
/// loop).
inline std::unordered_map<const ForLoop*, Scope*> loopParents(Scope& root) {
  std::unordered_map<const ForLoop*, Scope*> parent_of;
  std::vector<Scope*> scopes{&root};
  while (!scopes.empty()) {
    Scope* sc = scopes.back();
    scopes.pop_back();
    for (Stmt* st : *sc) {
      if (auto* f = st->dynCast<ForLoop>()) {
        parent_of[f] = sc;
        scopes.push_back(&f->body);
      } else if (auto* ite = st->dynCast<IfThenElse>()) {
        scopes.push_back(&ite->thenBody);
        scopes.push_back(&ite->elseBody);
      }
    }
  }
  return parent_of;
}

/// Calls fn(stmt) for every statement under `root`, loops and ifs included, each before the
/// statements it holds (then-branch before else-branch). fn must not change the scopes.
template <typename Fn>
void forEachStmt(const Scope& root, Fn&& fn) {
  std::vector<std::pair<const Scope*, size_t>> stack{{&root, 0}};
  while (!stack.empty()) {
    if (stack.back().second >= stack.back().first->size()) {
      stack.pop_back();
      continue;
    }
    const Stmt* s = (*stack.back().first)[stack.back().second++];
    fn(s);
    if (auto* f = s->dynCast<ForLoop>()) {
      stack.push_back({&f->body, 0});
    } else if (auto* ite = s->dynCast<IfThenElse>()) {
      stack.push_back({&ite->elseBody, 0});
      stack.push_back({&ite->thenBody, 0});
    }
  }
}

/// The operands of a value (none for leaves), in order.
inline std::vector<Value*> operandsOf(const Value* v) {
  switch (v->kind()) {
    case NodeKind::UnaryExpr: return {v->as<UnaryExpr>()->in};
    case NodeKind::BinaryExpr: {
      auto* b = v->as<BinaryExpr>();
      return {b->lhs, b->rhs};
    }
    case NodeKind::TernaryExpr: {
      auto* t = v->as<TernaryExpr>();
      return {t->a, t->b, t->c};
    }
    case NodeKind::Load: return {v->as<Load>()->index};
    case NodeKind::Call: return v->as<Call>()->args;
    case NodeKind::Misalignment: return {v->as<Misalignment>()->index};
    default: return {};
  }
}

/// The distinct values of the expression `root` (root included), each after its operands: the
/// order in which a bottom-up computation over the DAG finds its operands' results ready.
inline std::vector<Value*> postOrder(Value* root) {
  std::vector<Value*> out;
  std::unordered_set<const Value*> seen;
  std::vector<std::pair<Value*, bool>> stack{{root, false}};
  while (!stack.empty()) {
    auto [v, expanded] = stack.back();
    if (expanded) {
      stack.pop_back();
      out.push_back(v);
      continue;
    }
    if (!seen.insert(v).second) {
      stack.pop_back();
      continue;
    }
    stack.back().second = true;
    std::vector<Value*> ops = operandsOf(v);
    for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
      if (seen.count(*it) == 0) stack.push_back({*it, false});
    }
  }
  return out;
}

/// One piece of a value's text: literal text, or an operand written in its place.
struct TextPiece {
  std::string text;
  const Value* value = nullptr;
};
using TextPieces = std::vector<TextPiece>;

/// Writes the expression `root` to `os` piece by piece with an explicit stack: piecesOf(v) gives
/// v's text as TextPieces. An expression tens of thousands deep costs no recursion, and its text
/// is written once instead of copied into every enclosing level's string.
template <typename PiecesOf>
void writePieces(std::ostream& os, const Value* root, PiecesOf&& piecesOf) {
  std::vector<std::pair<TextPieces, size_t>> stack;
  stack.push_back({piecesOf(root), 0});
  while (!stack.empty()) {
    auto& [pieces, next] = stack.back();
    if (next == pieces.size()) {
      stack.pop_back();
      continue;
    }
    const TextPiece& p = pieces[next++];
    if (p.value == nullptr) {
      os << p.text;
      continue;
    }
    const Value* v = p.value;  // the push below may move `pieces`
    stack.push_back({piecesOf(v), 0});
  }
}

/// `v` with its operands replaced by `ops` (in operandsOf order); `v` itself when they are the
/// same.
Value* withOperands(Kernel& kernel, Value* v, const std::vector<Value*>& ops);

/// Rebuilds the expression `root` bottom-up over its distinct values: replace(v) gives the
/// replacement of a value whose operands (already replaced) are unchanged, and is called for
/// every value, leaves included, after its operands. Each shared subexpression is rebuilt once.
template <typename Replace>
Value* rebuildBottomUp(Kernel& kernel, Value* root, Replace&& replace) {
  std::unordered_map<const Value*, Value*> done;
  for (Value* v : postOrder(root)) {
    std::vector<Value*> ops = operandsOf(v);
    for (Value*& op : ops) op = done.at(op);
    done[v] = replace(withOperands(kernel, v, ops));
  }
  return done.at(root);
}

}  // namespace loom::kir
