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
#include <vector>

#include "index_ranges.h"
#include "loom/lower/kir_walk.h"

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

  // `b` with operands `l` and `r` (already simplified), simplified by the rules above.
  kir::Value* binary(kir::BinaryExpr* b, kir::Value* l, kir::Value* r) {
    using Op = ir::BinaryOpType;
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

  // A new index BinaryExpr of simplified operands, simplified.
  kir::Value* make(ir::BinaryOpType op, kir::Value* l, kir::Value* r) {
    auto* b = kernel.create<kir::BinaryExpr>(kIndexType, op, l, r);
    return binary(b, l, r);
  }

  bool nonNegative(kir::Value* v) const {
    auto r = ranges.range(v);
    return r && r->lo >= 0;
  }

  // a when v is a * c or c * a with a >= 0, else null.
  kir::Value* timesC(kir::Value* v, int64_t c) const {
    using Op = ir::BinaryOpType;
    auto* m = v->dynCast<kir::BinaryExpr>();
    if (m == nullptr || m->op != Op::Mul || m->dtype() != kIndexType) return nullptr;
    if (intOf(m->rhs) == c && nonNegative(m->lhs)) return m->lhs;
    if (intOf(m->lhs) == c && nonNegative(m->rhs)) return m->rhs;
    return nullptr;
  }

  // x / c and x % c (c > 0 constant, x simplified) by the bounds of x; null when no rule applies.
  kir::Value* divMod(ir::BinaryOpType op, kir::Value* x, int64_t c) {
    using Op = ir::BinaryOpType;
    auto r = ranges.range(x);
    if (r && r->lo >= 0 && r->hi < c) return op == Op::Div ? kernel.constInt(0) : x;
    // a * c (a >= 0): / c gives a, % c gives 0.
    if (kir::Value* a = timesC(x, c)) return op == Op::Div ? a : kernel.constInt(0);
    // floor((a * c + b) / c) = a + floor(b / c) and (a * c + b) % c = b % c for a, b >= 0, peeled
    // term by term (a sum may be as long as a loop nest is deep).
    std::vector<kir::Value*> peeled;
    kir::Value* rest = x;
    while (true) {
      auto* add = rest->dynCast<kir::BinaryExpr>();
      if (add == nullptr || add->op != Op::Add || add->dtype() != kIndexType) break;
      kir::Value* a = timesC(add->lhs, c);
      kir::Value* b = add->rhs;
      if (a == nullptr) {
        a = timesC(add->rhs, c);
        b = add->lhs;
      }
      if (a == nullptr || !nonNegative(b)) break;
      peeled.push_back(a);
      rest = b;
    }
    if (peeled.empty()) return nullptr;
    // The rest is not a * c + b: its own / and % need no peeling (no recursion past this).
    kir::Value* folded = make(op, rest, kernel.constInt(c));
    if (op == Op::Mod) return folded;
    for (auto it = peeled.rbegin(); it != peeled.rend(); ++it) folded = make(Op::Add, *it, folded);
    return folded;
  }

  // Drops the memo (a fresh map: clear() would touch every bucket of a once large one, at each
  // loop of a deep nest).
  void forget() {
    if (!memo.empty()) decltype(memo)().swap(memo);
  }

  // `v` simplified: bottom-up over its distinct values with an explicit stack (an index may be
  // tens of thousands of terms deep); results are memoized, simplified values map to themselves.
  kir::Value* simplify(kir::Value* v) {
    if (v == nullptr) return v;
    if (auto it = memo.find(v); it != memo.end()) return it->second;
    std::vector<std::pair<kir::Value*, bool>> stack{{v, false}};
    while (!stack.empty()) {
      auto [x, expanded] = stack.back();
      if (memo.count(x) != 0) {
        stack.pop_back();
        continue;
      }
      std::vector<kir::Value*> ops = kir::operandsOf(x);
      if (!expanded && !ops.empty()) {
        stack.back().second = true;
        for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
          if (memo.count(*it) == 0) stack.push_back({*it, false});
        }
        continue;
      }
      stack.pop_back();
      for (kir::Value*& op : ops) op = memo.at(op);
      kir::Value* out = x;
      if (auto* b = x->dynCast<kir::BinaryExpr>()) {
        out = binary(b, ops[0], ops[1]);
      } else if (!ops.empty()) {
        out = kir::withOperands(kernel, x, ops);
      }
      if (out != x) changed = true;
      memo[x] = out;
      memo.emplace(out, out);
    }
    return memo.at(v);
  }

  // Walks the statements with an explicit stack of open scopes (a nest may be deep), binding
  // loop indices for the bounds; an if whose condition became true is replaced by its then-body.
  void scope(kir::Scope& body) {
    struct Open {
      kir::Scope* scope;
      size_t next;
      const kir::ForLoop* loop;  ///< unbound when done
      kir::Scope* parent;        ///< for an if's then-branch: the scope holding the if
    };
    std::vector<Open> stack{{&body, 0, nullptr, nullptr}};
    while (!stack.empty()) {
      Open& o = stack.back();
      if (o.next >= o.scope->size()) {
        if (o.loop != nullptr) {
          ranges.exitLoop(o.loop);
          forget();  // bounds changed: a value may simplify differently elsewhere
        }
        stack.pop_back();
        continue;
      }
      kir::Scope& stmts = *o.scope;
      const size_t k = o.next++;
      kir::Stmt* s = stmts[k];
      if (auto* f = s->dynCast<kir::ForLoop>()) {
        f->start = simplify(f->start);
        f->stop = simplify(f->stop);
        ranges.enterLoop(f);
        forget();
        stack.push_back({&f->body, 0, f, nullptr});
      } else if (auto* i = s->dynCast<kir::IfThenElse>()) {
        i->cond = simplify(i->cond);
        if (isTrue(i->cond)) {
          // The else-body never runs: the then-body takes the if's place, walked from there.
          kir::Scope then_body = i->thenBody;
          stmts.erase(stmts.begin() + int64_t(k));
          stmts.insert(stmts.begin() + int64_t(k), then_body.begin(), then_body.end());
          --o.next;
          changed = true;
          continue;
        }
        stack.push_back({&i->elseBody, 0, nullptr, nullptr});
        stack.push_back({&i->thenBody, 0, nullptr, nullptr});
      } else if (auto* st = s->dynCast<kir::Store>()) {
        st->index = simplify(st->index);
        st->value = simplify(st->value);
      } else if (auto* d = s->dynCast<kir::DeclareVar>()) {
        d->init = simplify(d->init);
      } else if (auto* v = s->dynCast<kir::VectorCopy>()) {
        v->dstIndex = simplify(v->dstIndex);
        v->srcIndex = simplify(v->srcIndex);
      } else if (auto* r = s->dynCast<kir::SortRow>()) {
        for (kir::Value** slot : r->valueSlots()) *slot = simplify(*slot);
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
