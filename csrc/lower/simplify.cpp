// SPDX-License-Identifier: Apache-2.0
// Pass simplify: constant folding and identities in index math and predicates.
//
// Rules (integers only, so no floating rounding changes): c1 op c2 folds for + - * / % and
// comparisons; x * 1, 1 * x, x + 0, 0 + x, x - 0, x / 1 give x; x * 0, 0 * x, x % 1, 0 / x, 0 % x
// give 0; true && x, x && true give x.
// With index bounds (index_ranges.h; loop and thread indices, no branch narrowing, so a value
// simplifies the same wherever it is used): for a constant c > 0 and 0 <= x < c, x % c gives x
// and x / c gives 0; for a, b >= 0, (a * c + b) / c gives a + b / c and (a * c + b) % c gives
// b % c (what a merge of a split with the same factor leaves); a comparison that the bounds
// prove gives true, and an `if (true)` becomes its then-body.
//
//   before: T1[((i0 * 1) + 0)] = ...        after:  T1[i0] = ...
//   before: T2[((i1 * 4) + i2) % 4]  (i2 in 0 .. 4)   after: T2[i2]
#include <unordered_map>

#include "index_ranges.h"

namespace loom::lower {

namespace {

struct Simplifier {
  kir::Kernel& kernel;
  IndexRanges ranges;
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
        // Constants that would trap (by 0, the most negative value by -1) are left to the
        // kernel's total division (kernel_ir.h, BinaryExpr::total).
        case Op::Div: if (y != 0 && y != -1) return kernel.constInt(x / y); break;
        case Op::Mod: if (y != 0 && y != -1) return kernel.constInt(x % y); break;
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
    // (Index math only: its dividends are non-negative, the fusion's own values need not be.)
    if (b->dtype() == kIndexType && !b->total && (b->op == Op::Div || b->op == Op::Mod) &&
        cr > 0) {
      if (kir::Value* v = divMod(b->op, l, *cr)) return v;
    }
    if (b->op == Op::LogicalAnd) {
      if (isTrue(l)) return r;
      if (isTrue(r)) return l;
    }
    kir::Value* out = l == b->lhs && r == b->rhs
                          ? b
                          : kernel.create<kir::BinaryExpr>(b->dtype(), b->op, l, r, b->total);
    if (b->dtype() == DataType::Bool && b->op != Op::LogicalAnd && ranges.provablyTrue(out)) {
      return kernel.constBool(true);
    }
    return out;
  }

  bool nonNegative(kir::Value* v) const {
    auto r = ranges.range(v);
    return r && r->lo >= 0;
  }

  // x / c and x % c (c > 0 constant) by the bounds of x; null when no rule applies.
  kir::Value* divMod(ir::BinaryOpType op, kir::Value* x, int64_t c) {
    using Op = ir::BinaryOpType;
    auto r = ranges.range(x);
    if (r && r->lo >= 0 && r->hi < c) return op == Op::Div ? kernel.constInt(0) : x;
    // a * c (a >= 0): / c gives a, % c gives 0.
    auto times_c = [&](kir::Value* v) -> kir::Value* {
      auto* m = v->dynCast<kir::BinaryExpr>();
      if (m == nullptr || m->op != Op::Mul || m->dtype() != kIndexType) return nullptr;
      if (intOf(m->rhs) == c && nonNegative(m->lhs)) return m->lhs;
      if (intOf(m->lhs) == c && nonNegative(m->rhs)) return m->rhs;
      return nullptr;
    };
    if (kir::Value* a = times_c(x)) return op == Op::Div ? a : kernel.constInt(0);
    auto* add = x->dynCast<kir::BinaryExpr>();
    if (add == nullptr || add->op != Op::Add || add->dtype() != kIndexType) return nullptr;
    kir::Value* a = times_c(add->lhs);
    kir::Value* rest = add->rhs;
    if (a == nullptr) {
      a = times_c(add->rhs);
      rest = add->lhs;
    }
    // floor((a * c + b) / c) = a + floor(b / c) and (a * c + b) % c = b % c for a, b >= 0.
    if (a == nullptr || !nonNegative(rest)) return nullptr;
    auto* rest_op = kernel.create<kir::BinaryExpr>(kIndexType, op, rest, kernel.constInt(c));
    kir::Value* folded = simplify(rest_op);
    if (op == Op::Mod) return folded;
    return simplify(kernel.create<kir::BinaryExpr>(kIndexType, Op::Add, a, folded));
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
    for (size_t k = 0; k < stmts.size(); ++k) {
      kir::Stmt* s = stmts[k];
      if (auto* f = s->dynCast<kir::ForLoop>()) {
        f->start = simplify(f->start);
        f->stop = simplify(f->stop);
        ranges.enterLoop(f);
        scope(f->body);
        ranges.exitLoop(f);
      } else if (auto* i = s->dynCast<kir::IfThenElse>()) {
        i->cond = simplify(i->cond);
        scope(i->thenBody);
        scope(i->elseBody);
        if (isTrue(i->cond)) {  // the else-body never runs: the then-body takes the if's place
          kir::Scope then_body = i->thenBody;
          stmts.erase(stmts.begin() + int64_t(k));
          stmts.insert(stmts.begin() + int64_t(k), then_body.begin(), then_body.end());
          changed = true;
          if (then_body.empty()) {
            --k;  // wraps to the next stmt at k after ++k (unsigned arithmetic is modular)
          } else {
            k += then_body.size() - 1;
          }
        }
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
  Simplifier s{kernel, IndexRanges(kernel), {}};
  s.scope(kernel.body);
  return s.changed;
}

}  // namespace loom::lower
