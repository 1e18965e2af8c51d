// SPDX-License-Identifier: Apache-2.0
// Pass hoist_indices: loop-invariant and repeated index math becomes named const index values.
//
// Index expressions are integer BinaryExprs (+ - * / % ceilDiv max min) over loop indices,
// named scalars (threadIdx.x, ...), tensor sizes/strides and integer constants. Each occurrence
// has a home: the innermost scope that defines one of its loop indices (the kernel body when it
// uses none). A thread/block-parallel loop is not a loop: its index is defined at the top of its
// body, and leaving that body costs nothing. Such an expression is replaced by a `const` index
// variable declared in its home, right before the statement there that holds the first use, when
// it leaves at least one serial (or unrolled / vectorized / unswitched) loop, or when it occurs
// more than once in its home's scope (common subexpressions: each distinct expression is named
// once per home; an occurrence inside an already named one counts once). The largest such
// expression is named first, and its operands are then treated as used in its home.
//
// Division safety: an expression with a / % or ceilDiv by anything but a nonzero constant (a
// tensor size can be 0) may only be moved where it is evaluated anyway: it never leaves an if
// branch or a serial loop body (a loop may run zero times), nor the right side of && / ||, nor a
// branch of `where`, unless the scope it moves to already evaluates the same expression
// unconditionally (e.g. the if's own condition computes `i / T0.size[1]`).
//
//   before:  for i1 in 0 .. 8:                     after:  const i3 = (i0 * T0.stride[0])
//              T1[i1] = T0[((i0 * T0.stride[0]) + i1)]      for i1 in 0 .. 8:
//                                                            T1[i1] = T0[(i3 + i1)]
#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "loom/lower/lower.h"

namespace loom::lower {

namespace {

// One scope of the kernel: its body, loop bodies, if branches.
struct Frame {
  kir::Scope* scope = nullptr;
  int parent = -1;
  size_t indexInParent = 0;  ///< position of the statement owning this scope in the parent's
  int depth = 0;
  const kir::Var* defines = nullptr;  ///< loop index defined at the top (loop bodies)
  bool guard = false;                 ///< entered only under a condition (if branch, serial loop)
  bool serialLoop = false;            ///< the body of a loop that repeats (not thread/block)
};

// A place that holds a value: a statement field, with the scope it is evaluated in.
struct Slot {
  kir::Value** value;
  int frame;
  size_t stmt;  ///< position of the statement in its frame's scope
};

struct Hoister {
  explicit Hoister(kir::Kernel& k) : kernel(k) {}
  kir::Kernel& kernel;
  std::vector<Frame> frames;
  std::vector<Slot> slots;
  std::unordered_set<const kir::Var*> loopVars;

  // ---- Structural keys: equal keys mean equal index expressions -------------------------------
  std::map<std::tuple<int, int64_t, int64_t, int64_t, const void*>, int> keyOf;
  std::unordered_map<const kir::Value*, int> keyMemo;
  std::map<std::string, int> names;
  struct KeyInfo {
    bool unsafe = false;                 ///< divides by a value that may be 0
    std::vector<const kir::Var*> vars;   ///< loop indices used
  };
  std::vector<KeyInfo> info;

  static bool isIndexOp(ir::BinaryOpType op) {
    using Op = ir::BinaryOpType;
    switch (op) {
      case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: case Op::Mod: case Op::CeilDiv:
      case Op::Max: case Op::Min: return true;
      default: return false;
    }
  }

  int intern(std::tuple<int, int64_t, int64_t, int64_t, const void*> t, KeyInfo ki) {
    auto [it, fresh] = keyOf.emplace(t, int(info.size()));
    if (fresh) info.push_back(std::move(ki));
    return it->second;
  }

  // The key of `v` when it is an index expression (leaves included), else -1.
  int key(const kir::Value* v) {
    if (auto it = keyMemo.find(v); it != keyMemo.end()) return it->second;
    int k = -1;
    switch (v->kind()) {
      case kir::NodeKind::Const: {
        auto c = v->as<kir::Const>()->asInt();
        if (c && v->dtype() == kIndexType) k = intern({0, *c, 0, 0, nullptr}, {});
        break;
      }
      case kir::NodeKind::Var:
        if (loopVars.count(v->as<kir::Var>()) != 0) {
          k = intern({1, 0, 0, 0, v}, {false, {v->as<kir::Var>()}});
        }
        break;
      case kir::NodeKind::NamedScalar: {
        auto [it, fresh] = names.emplace(v->as<kir::NamedScalar>()->name, int(names.size()));
        k = intern({2, it->second, 0, 0, nullptr}, {});
        break;
      }
      case kir::NodeKind::TensorSize: {
        auto* t = v->as<kir::TensorSize>();
        k = intern({3, t->dim, t->isStride ? 1 : 0, 0, t->buffer}, {});
        break;
      }
      case kir::NodeKind::BinaryExpr: {
        auto* b = v->as<kir::BinaryExpr>();
        if (b->dtype() != kIndexType || !isIndexOp(b->op)) break;
        int l = key(b->lhs);
        int r = key(b->rhs);
        if (l < 0 || r < 0) break;
        KeyInfo ki;
        ki.unsafe = info[size_t(l)].unsafe || info[size_t(r)].unsafe;
        if (b->op == ir::BinaryOpType::Div || b->op == ir::BinaryOpType::Mod ||
            b->op == ir::BinaryOpType::CeilDiv) {
          auto* c = b->rhs->dynCast<kir::Const>();
          ki.unsafe = ki.unsafe || c == nullptr || c->asInt().value_or(0) == 0;
        }
        ki.vars = info[size_t(l)].vars;
        for (const kir::Var* x : info[size_t(r)].vars) {
          if (std::find(ki.vars.begin(), ki.vars.end(), x) == ki.vars.end()) ki.vars.push_back(x);
        }
        k = intern({4, int64_t(b->op), l, r, nullptr}, std::move(ki));
        break;
      }
      default: break;
    }
    keyMemo[v] = k;
    return k;
  }

  static bool hoistable(const kir::Value* v) { return v->isA<kir::BinaryExpr>(); }

  // ---- Frames and slots ------------------------------------------------------------------------
  int addFrame(kir::Scope* scope, int parent, size_t index, const kir::Var* defines, bool guard,
               bool serial) {
    Frame f;
    f.scope = scope;
    f.parent = parent;
    f.indexInParent = index;
    f.depth = parent < 0 ? 0 : frames[size_t(parent)].depth + 1;
    f.defines = defines;
    f.guard = guard;
    f.serialLoop = serial;
    frames.push_back(f);
    return int(frames.size()) - 1;
  }

  void collect(int frame) {
    kir::Scope& scope = *frames[size_t(frame)].scope;
    for (size_t i = 0; i < scope.size(); ++i) {
      kir::Stmt* s = scope[i];
      auto slot = [&](kir::Value*& v) {
        if (v != nullptr) slots.push_back({&v, frame, i});
      };
      switch (s->kind()) {
        case kir::NodeKind::ForLoop: {
          auto* f = s->as<kir::ForLoop>();
          slot(f->start);
          slot(f->stop);
          loopVars.insert(f->index);
          bool parallel = f->isParallel();
          collect(addFrame(&f->body, frame, i, f->index, !parallel, !parallel));
          break;
        }
        case kir::NodeKind::IfThenElse: {
          auto* ite = s->as<kir::IfThenElse>();
          slot(ite->cond);
          collect(addFrame(&ite->thenBody, frame, i, nullptr, true, false));
          collect(addFrame(&ite->elseBody, frame, i, nullptr, true, false));
          break;
        }
        case kir::NodeKind::DeclareVar: slot(s->as<kir::DeclareVar>()->init); break;
        case kir::NodeKind::Store: {
          auto* st = s->as<kir::Store>();
          slot(st->index);
          slot(st->value);
          break;
        }
        case kir::NodeKind::BlockReduce: slot(s->as<kir::BlockReduce>()->init); break;
        case kir::NodeKind::GridReduce: slot(s->as<kir::GridReduce>()->init); break;
        case kir::NodeKind::Welford:
          for (kir::Value*& v : s->as<kir::Welford>()->in) slot(v);
          break;
        case kir::NodeKind::VectorCopy: {
          auto* v = s->as<kir::VectorCopy>();
          slot(v->dstIndex);
          slot(v->srcIndex);
          break;
        }
        default: break;  // Allocate sizes stay constants; syncs and comments hold no values
      }
    }
  }

  // ---- Where an occurrence may go ------------------------------------------------------------
  /// (frame, key) pairs evaluated unconditionally by a statement directly in the frame.
  std::set<std::pair<int, int>> evaluated;

  // Whether child `i` of `v` is evaluated only under a condition of `v` itself.
  static bool conditionalChild(const kir::Value* v, int i) {
    if (auto* b = v->dynCast<kir::BinaryExpr>()) {
      return i == 1 && (b->op == ir::BinaryOpType::LogicalAnd ||
                        b->op == ir::BinaryOpType::LogicalOr);
    }
    if (auto* t = v->dynCast<kir::TernaryExpr>()) {
      return i > 0 && t->op == ir::TernaryOpType::Where;
    }
    return false;
  }

  static std::vector<kir::Value*> children(kir::Value* v) {
    switch (v->kind()) {
      case kir::NodeKind::UnaryExpr: return {v->as<kir::UnaryExpr>()->in};
      case kir::NodeKind::BinaryExpr: {
        auto* b = v->as<kir::BinaryExpr>();
        return {b->lhs, b->rhs};
      }
      case kir::NodeKind::TernaryExpr: {
        auto* t = v->as<kir::TernaryExpr>();
        return {t->a, t->b, t->c};
      }
      case kir::NodeKind::Load: return {v->as<kir::Load>()->index};
      default: return {};
    }
  }

  void markEvaluated(kir::Value* v, int frame) {
    int k = key(v);
    if (k >= 0 && hoistable(v)) evaluated.insert({frame, k});
    std::vector<kir::Value*> c = children(v);
    for (size_t i = 0; i < c.size(); ++i) {
      if (!conditionalChild(v, int(i))) markEvaluated(c[i], frame);
    }
  }

  // The frame an occurrence of index expression `v` (key k) at `use` goes to, or -1 when it must
  // stay where it is. `conditional`: the occurrence is evaluated only under a condition of its
  // statement's value.
  int target(int use, int k, bool conditional) {
    const KeyInfo& ki = info[size_t(k)];
    // The home: the deepest frame on the way up that defines one of the loop indices.
    int home = 0;
    for (const kir::Var* x : ki.vars) {
      int f = use;
      while (f >= 0 && frames[size_t(f)].defines != x) f = frames[size_t(f)].parent;
      if (f < 0) return -1;  // not in scope (cannot happen in a well-formed kernel)
      if (frames[size_t(f)].depth > frames[size_t(home)].depth) home = f;
    }
    if (!ki.unsafe) return home;
    int best = -1;
    bool reached = !conditional;  // evaluating it at the top of this frame is as good as at `use`
    for (int f = use;; f = frames[size_t(f)].parent) {
      if (reached || evaluated.count({f, k}) != 0) best = f;
      if (f == home) break;
      reached = reached && !frames[size_t(f)].guard;
    }
    return best;
  }

  bool leavesALoop(int use, int to) const {
    for (int f = use; f != to; f = frames[size_t(f)].parent) {
      if (frames[size_t(f)].serialLoop) return true;
    }
    return false;
  }

  // ---- Counting, then rewriting --------------------------------------------------------------
  std::map<std::pair<int, int>, int> count;

  void countUses(kir::Value* v, int use, bool conditional) {
    int k = key(v);
    if (k >= 0 && hoistable(v)) {
      int to = target(use, k, conditional);
      if (to >= 0) {
        // An expression named once is evaluated once: its operands count once, in its home.
        if (++count[{to, k}] == 1) {
          for (kir::Value* c : children(v)) countUses(c, to, false);
        }
        return;
      }
    }
    std::vector<kir::Value*> c = children(v);
    for (size_t i = 0; i < c.size(); ++i) {
      countUses(c[i], use, conditional || conditionalChild(v, int(i)));
    }
  }

  struct Decl {
    int frame;
    size_t before;  ///< statement position in the frame's scope
    kir::Stmt* stmt;
  };
  std::vector<Decl> decls;
  std::map<std::pair<int, int>, kir::Var*> named;
  bool changed = false;

  // Position, in ancestor frame `to`, of the statement that holds `use`'s statement `stmt`.
  size_t positionIn(int to, int use, size_t stmt) const {
    for (int f = use; f != to; f = frames[size_t(f)].parent) stmt = frames[size_t(f)].indexInParent;
    return stmt;
  }

  kir::Value* rebuild(kir::Value* v, const std::vector<kir::Value*>& c) {
    std::vector<kir::Value*> old = children(v);
    if (c == old) return v;
    switch (v->kind()) {
      case kir::NodeKind::UnaryExpr:
        return kernel.create<kir::UnaryExpr>(v->dtype(), v->as<kir::UnaryExpr>()->op, c[0]);
      case kir::NodeKind::BinaryExpr:
        return kernel.create<kir::BinaryExpr>(v->dtype(), v->as<kir::BinaryExpr>()->op, c[0], c[1],
                                              v->as<kir::BinaryExpr>()->total);
      case kir::NodeKind::TernaryExpr:
        return kernel.create<kir::TernaryExpr>(v->dtype(), v->as<kir::TernaryExpr>()->op, c[0],
                                               c[1], c[2]);
      case kir::NodeKind::Load: return kernel.create<kir::Load>(v->as<kir::Load>()->buffer, c[0]);
      default: LOOM_UNREACHABLE("a value without children has none to replace");
    }
  }

  kir::Value* rewrite(kir::Value* v, int use, size_t stmt, bool conditional) {
    int k = key(v);
    if (k >= 0 && hoistable(v)) {
      int to = target(use, k, conditional);
      if (to >= 0 && (count[{to, k}] >= 2 || leavesALoop(use, to))) {
        if (auto it = named.find({to, k}); it != named.end()) return it->second;
        size_t at = positionIn(to, use, stmt);
        std::vector<kir::Value*> c;
        for (kir::Value* x : children(v)) c.push_back(rewrite(x, to, at, false));
        kir::Var* var = kernel.newVar(kIndexType, "i");
        decls.push_back({to, at, kernel.create<kir::DeclareVar>(var, rebuild(v, c), true)});
        named[{to, k}] = var;
        changed = true;
        return var;
      }
    }
    std::vector<kir::Value*> c = children(v);
    for (size_t i = 0; i < c.size(); ++i) {
      c[i] = rewrite(c[i], use, stmt, conditional || conditionalChild(v, int(i)));
    }
    return c.empty() ? v : rebuild(v, c);
  }

  void run() {
    collect(addFrame(&kernel.body, -1, 0, nullptr, false, false));
    for (const Slot& s : slots) markEvaluated(*s.value, s.frame);
    for (const Slot& s : slots) countUses(*s.value, s.frame, false);
    for (const Slot& s : slots) *s.value = rewrite(*s.value, s.frame, s.stmt, false);
    // Insert per frame from the back, so earlier positions stay valid; declarations for one
    // position keep their creation order (operands first).
    std::stable_sort(decls.begin(), decls.end(), [](const Decl& a, const Decl& b) {
      return a.frame != b.frame ? a.frame < b.frame : a.before > b.before;
    });
    for (size_t i = 0; i < decls.size();) {
      size_t j = i;
      while (j < decls.size() && decls[j].frame == decls[i].frame &&
             decls[j].before == decls[i].before) {
        ++j;
      }
      kir::Scope& scope = *frames[size_t(decls[i].frame)].scope;
      std::vector<kir::Stmt*> group;
      for (size_t d = i; d < j; ++d) group.push_back(decls[d].stmt);
      scope.insert(scope.begin() + int64_t(decls[i].before), group.begin(), group.end());
      i = j;
    }
  }
};

}  // namespace

bool hoistIndices(kir::Kernel& kernel, LowerContext& /*ctx*/) {
  Hoister h(kernel);
  h.run();
  return h.changed;
}

}  // namespace loom::lower
