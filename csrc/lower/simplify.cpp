// SPDX-License-Identifier: Apache-2.0
// Pass simplify: constant folding and identities in index math and predicates.
//
// Rules (integers only, so no floating rounding changes): c1 op c2 folds for + - * / % and
// comparisons; x * 1, 1 * x, x + 0, 0 + x, x - 0, x / 1 give x; x * 0, 0 * x, x % 1, 0 / x, 0 % x
// give 0; true && x, x && true give x.
//
//   before: T1[((i0 * 1) + 0)] = ...        after:  T1[i0] = ...
#include <unordered_map>

#include "loom/lower/lower.h"

namespace loom::lower {

namespace {

struct Simplifier {
  kir::Kernel& kernel;
  std::unordered_map<kir::Value*, kir::Value*> memo;
  bool changed = false;

  static std::optional<int64_t> intOf(kir::Value* v) {
    if (auto* c = v->dynCast<kir::Const>()) return c->asInt();
    return std::nullopt;
  }
  static bool isTrue(kir::Value* v) {
    auto* c = v->dynCast<kir::Const>();
    return c && std::holds_alternative<bool>(c->value) && std::get<bool>(c->value);
  }

  kir::Value* binary(kir::BinaryExpr* b) {
    using Op = ir::BinaryOpType;
    kir::Value* l = simplify(b->lhs);
    kir::Value* r = simplify(b->rhs);
    auto cl = intOf(l);
    auto cr = intOf(r);
    if (cl && cr && b->dtype() == kIndexType) {
      int64_t x = *cl, y = *cr;
      switch (b->op) {
        case Op::Add: return kernel.constInt(x + y);
        case Op::Sub: return kernel.constInt(x - y);
        case Op::Mul: return kernel.constInt(x * y);
        case Op::Div: if (y != 0) return kernel.constInt(x / y); break;
        case Op::Mod: if (y != 0) return kernel.constInt(x % y); break;
        case Op::CeilDiv: if (y > 0 && x >= 0) return kernel.constInt((x + y - 1) / y); break;
        default: break;
      }
    }
    if (cl && cr && b->dtype() == DataType::Bool) {
      switch (b->op) {
        case Op::Lt: return kernel.constBool(*cl < *cr);
        case Op::Le: return kernel.constBool(*cl <= *cr);
        case Op::Eq: return kernel.constBool(*cl == *cr);
        default: break;
      }
    }
    if (b->dtype() == kIndexType) {
      if (b->op == Op::Mul && (cl == 1)) return r;
      if ((b->op == Op::Mul || b->op == Op::Div) && cr == 1) return l;
      if (b->op == Op::Add && cl == 0) return r;
      if ((b->op == Op::Add || b->op == Op::Sub) && cr == 0) return l;
      if (b->op == Op::Mul && (cl == 0 || cr == 0)) return kernel.constInt(0);
      if ((b->op == Op::Div || b->op == Op::Mod) && cl == 0) return kernel.constInt(0);
      if (b->op == Op::Mod && cr == 1) return kernel.constInt(0);
    }
    if (b->op == Op::LogicalAnd) {
      if (isTrue(l)) return r;
      if (isTrue(r)) return l;
    }
    if (l == b->lhs && r == b->rhs) return b;
    return kernel.create<kir::BinaryExpr>(b->dtype(), b->op, l, r);
  }

  kir::Value* simplify(kir::Value* v) {
    if (v == nullptr) return v;
    if (auto it = memo.find(v); it != memo.end()) return it->second;
    kir::Value* out = v;
    if (auto* b = v->dynCast<kir::BinaryExpr>()) {
      out = binary(b);
    } else if (auto* u = v->dynCast<kir::UnaryExpr>()) {
      kir::Value* in = simplify(u->in);
      if (in != u->in) out = kernel.create<kir::UnaryExpr>(u->dtype(), u->op, in);
    } else if (auto* t = v->dynCast<kir::TernaryExpr>()) {
      kir::Value* a = simplify(t->a);
      kir::Value* b2 = simplify(t->b);
      kir::Value* c = simplify(t->c);
      if (a != t->a || b2 != t->b || c != t->c) {
        out = kernel.create<kir::TernaryExpr>(t->dtype(), t->op, a, b2, c);
      }
    } else if (auto* l = v->dynCast<kir::Load>()) {
      kir::Value* index = simplify(l->index);
      if (index != l->index) out = kernel.create<kir::Load>(l->buffer, index);
    }
    if (out != v) changed = true;
    memo[v] = out;
    return out;
  }

  void scope(kir::Scope& stmts) {
    for (kir::Stmt* s : stmts) {
      if (auto* f = s->dynCast<kir::ForLoop>()) {
        f->stop = simplify(f->stop);
        scope(f->body);
      } else if (auto* i = s->dynCast<kir::IfThenElse>()) {
        i->cond = simplify(i->cond);
        scope(i->thenBody);
        scope(i->elseBody);
      } else if (auto* st = s->dynCast<kir::Store>()) {
        st->index = simplify(st->index);
        st->value = simplify(st->value);
      } else if (auto* d = s->dynCast<kir::DeclareVar>()) {
        d->init = simplify(d->init);
      } else if (auto* v = s->dynCast<kir::VectorCopy>()) {
        v->dstIndex = simplify(v->dstIndex);
        v->srcIndex = simplify(v->srcIndex);
      }
    }
  }
};

}  // namespace

bool simplify(kir::Kernel& kernel, LowerContext& /*ctx*/) {
  Simplifier s{kernel, {}};
  s.scope(kernel.body);
  return s.changed;
}

}  // namespace loom::lower
