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
  int serialLoops = 0;                ///< serial loop bodies from the kernel body to here
};

// A place that holds a value: a statement field, with the scope it is evaluated in.
struct Slot {
  kir::Value** value;
  int frame;
  size_t stmt;  ///< position of the statement in its frame's scope
};

// Every walk below is iterative, and costs O(1) per node and frame apart from the map lookups: a
// loop nest or an index tens of thousands deep (a chain of splits) is as legal as a shallow one.
struct Hoister {
  explicit Hoister(kir::Kernel& k) : kernel(k) {}
  kir::Kernel& kernel;
  std::vector<Frame> frames;
  std::vector<std::vector<int>> up;  ///< up[j][f]: the 2^j-th ancestor of frame f (or -1)
  std::vector<Slot> slots;
  /// Loop index -> the bodies it defines, in program order: a loop unswitch copied shares its
  /// index with the original (the copy is first), so an index may define two frames.
  std::unordered_map<const kir::Var*, std::vector<int>> varFrames;
  std::vector<int> tin, tout;  ///< pre/post times of a walk of the frame tree (ancestor tests)

  // ---- Structural keys: equal keys mean equal index expressions -------------------------------
  std::map<std::tuple<int, int64_t, int64_t, int64_t, const void*>, int> keyOf;
  std::unordered_map<const kir::Value*, int> keyMemo;
  std::map<std::string, int> names;
  struct KeyInfo {
    bool unsafe = false;  ///< divides by a value that may be 0
    /// The loop index whose loop is innermost among those the expression uses (null: none). All
    /// of them enclose each use, so the use's home is that loop's body; nesting is the same in
    /// an unswitched copy, so the copy's depths rank them.
    const kir::Var* homeVar = nullptr;
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

  static const kir::BinaryExpr* indexBinary(const kir::Value* v) {
    auto* b = v->dynCast<kir::BinaryExpr>();
    return b != nullptr && b->dtype() == kIndexType && isIndexOp(b->op) ? b : nullptr;
  }

  static bool isComparison(ir::BinaryOpType op) {
    using Op = ir::BinaryOpType;
    return op == Op::Lt || op == Op::Le || op == Op::Gt || op == Op::Ge || op == Op::Eq ||
           op == Op::Ne;
  }

  // The other index math of peeled rows (peel_rows.cpp): a row's shift (Misalignment of its
  // start) and its rotation `where(q < s, row, 0)`, with the comparison inside it. Comparisons
  // get keys (so the where does) but are never named themselves: named values are indices.
  static bool isIndexNode(const kir::Value* v) {
    if (indexBinary(v) != nullptr || v->isA<kir::Misalignment>()) return true;
    if (auto* t = v->dynCast<kir::TernaryExpr>()) {
      return t->dtype() == kIndexType && t->op == ir::TernaryOpType::Where;
    }
    auto* b = v->dynCast<kir::BinaryExpr>();
    return b != nullptr && b->dtype() == DataType::Bool && isComparison(b->op);
  }

  int intern(std::tuple<int, int64_t, int64_t, int64_t, const void*> t, KeyInfo ki) {
    auto [it, fresh] = keyOf.emplace(t, int(info.size()));
    if (fresh) info.push_back(ki);
    return it->second;
  }

  int rank(const kir::Var* v) const {
    return v == nullptr ? -1 : frames[size_t(varFrames.at(v).front())].depth;
  }
  const kir::Var* deeper(const kir::Var* a, const kir::Var* b) const {
    return rank(a) >= rank(b) ? a : b;
  }
  bool isAncestor(int a, int f) const {  // a == f counts
    return tin[size_t(a)] <= tin[size_t(f)] && tout[size_t(f)] <= tout[size_t(a)];
  }
  // The frame an expression of key k used at `use` lives in: the body of its innermost loop
  // around `use` (the kernel body when it uses no loop index); -1 when that loop does not
  // enclose `use` (cannot happen in a well-formed kernel).
  int homeOf(int k, int use) const {
    const kir::Var* v = info[size_t(k)].homeVar;
    if (v == nullptr) return 0;
    for (int f : varFrames.at(v)) {
      if (isAncestor(f, use)) return f;
    }
    return -1;
  }

  // The key of `v` alone, its operands' keys known (-1: not an index expression).
  int keyOfNode(const kir::Value* v) {
    switch (v->kind()) {
      case kir::NodeKind::Const: {
        auto c = v->as<kir::Const>()->asInt();
        return c && v->dtype() == kIndexType ? intern({0, *c, 0, 0, nullptr}, {}) : -1;
      }
      case kir::NodeKind::Var: {
        auto* var = v->as<kir::Var>();
        return varFrames.count(var) == 0 ? -1 : intern({1, 0, 0, 0, v}, {false, var});
      }
      case kir::NodeKind::NamedScalar: {
        auto [it, fresh] = names.emplace(v->as<kir::NamedScalar>()->name, int(names.size()));
        return intern({2, it->second, 0, 0, nullptr}, {});
      }
      case kir::NodeKind::TensorSize: {
        auto* t = v->as<kir::TensorSize>();
        return intern({3, t->dim, t->isStride ? 1 : 0, 0, t->buffer}, {});
      }
      case kir::NodeKind::BinaryExpr: {
        if (!isIndexNode(v)) return -1;
        auto* b = v->as<kir::BinaryExpr>();
        int l = keyMemo.at(b->lhs);
        int r = keyMemo.at(b->rhs);
        if (l < 0 || r < 0) return -1;
        if (b->dtype() == DataType::Bool) {  // a comparison: operands' info, another key space
          KeyInfo ki;
          ki.unsafe = info[size_t(l)].unsafe || info[size_t(r)].unsafe;
          ki.homeVar = deeper(info[size_t(l)].homeVar, info[size_t(r)].homeVar);
          return intern({7, int64_t(b->op), l, r, nullptr}, ki);
        }
        KeyInfo ki;
        ki.unsafe = info[size_t(l)].unsafe || info[size_t(r)].unsafe;
        if (b->op == ir::BinaryOpType::Div || b->op == ir::BinaryOpType::Mod ||
            b->op == ir::BinaryOpType::CeilDiv) {
          auto* c = b->rhs->dynCast<kir::Const>();
          ki.unsafe = ki.unsafe || c == nullptr || c->asInt().value_or(0) == 0;
        }
        ki.homeVar = deeper(info[size_t(l)].homeVar, info[size_t(r)].homeVar);
        return intern({4, int64_t(b->op), l, r, nullptr}, ki);
      }
      case kir::NodeKind::Misalignment: {
        auto* m = v->as<kir::Misalignment>();
        int i = keyMemo.at(m->index);
        if (i < 0) return -1;
        return intern({5, m->width, i, 0, m->buffer}, info[size_t(i)]);
      }
      case kir::NodeKind::TernaryExpr: {
        if (!isIndexNode(v)) return -1;
        auto* t = v->as<kir::TernaryExpr>();
        int a = keyMemo.at(t->a), b = keyMemo.at(t->b), c = keyMemo.at(t->c);
        if (a < 0 || b < 0 || c < 0) return -1;
        KeyInfo ki;
        ki.unsafe = info[size_t(a)].unsafe || info[size_t(b)].unsafe || info[size_t(c)].unsafe;
        ki.homeVar = deeper(info[size_t(a)].homeVar,
                            deeper(info[size_t(b)].homeVar, info[size_t(c)].homeVar));
        return intern({6, a, b, c, nullptr}, ki);
      }
      default: return -1;
    }
  }

  // The key of `v` when it is an index expression (leaves included), else -1. Post-order over
  // the operands not seen yet, with an explicit stack.
  int key(const kir::Value* root) {
    if (auto it = keyMemo.find(root); it != keyMemo.end()) return it->second;
    std::vector<std::pair<const kir::Value*, bool>> stack{{root, false}};
    while (!stack.empty()) {
      auto [v, expanded] = stack.back();
      if (keyMemo.count(v) != 0) {
        stack.pop_back();
        continue;
      }
      if (isIndexNode(v) && !expanded) {
        stack.back().second = true;
        std::vector<kir::Value*> ops = children(const_cast<kir::Value*>(v));
        for (auto it = ops.rbegin(); it != ops.rend(); ++it) stack.push_back({*it, false});
        continue;
      }
      stack.pop_back();
      keyMemo[v] = keyOfNode(v);
    }
    return keyMemo.at(root);
  }

  // Index values only (a comparison has a key but is a Bool).
  static bool hoistable(const kir::Value* v) {
    return v->dtype() == kIndexType &&
           (v->isA<kir::BinaryExpr>() || v->isA<kir::TernaryExpr>() || v->isA<kir::Misalignment>());
  }

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
    f.serialLoops = (parent < 0 ? 0 : frames[size_t(parent)].serialLoops) + (serial ? 1 : 0);
    frames.push_back(f);
    const int id = int(frames.size()) - 1;
    if (defines != nullptr) varFrames[defines].push_back(id);
    return id;
  }

  // Every scope and value slot in program order (a pre-order walk with an explicit stack).
  void collect() {
    std::vector<std::pair<int, size_t>> stack{{addFrame(&kernel.body, -1, 0, nullptr, false, false), 0}};
    while (!stack.empty()) {
      const int frame = stack.back().first;
      const size_t i = stack.back().second++;
      kir::Scope& scope = *frames[size_t(frame)].scope;
      if (i >= scope.size()) {
        stack.pop_back();
        continue;
      }
      kir::Stmt* s = scope[i];
      auto slot = [&](kir::Value*& v) {
        if (v != nullptr) slots.push_back({&v, frame, i});
      };
      switch (s->kind()) {
        case kir::NodeKind::ForLoop: {
          auto* f = s->as<kir::ForLoop>();
          slot(f->start);
          slot(f->stop);
          bool parallel = f->isParallel();
          stack.push_back({addFrame(&f->body, frame, i, f->index, !parallel, !parallel), 0});
          break;
        }
        case kir::NodeKind::IfThenElse: {
          auto* ite = s->as<kir::IfThenElse>();
          slot(ite->cond);
          // The then-branch is walked first, then the else-branch.
          const int else_frame = addFrame(&ite->elseBody, frame, i, nullptr, true, false);
          stack.push_back({else_frame, 0});
          stack.push_back({addFrame(&ite->thenBody, frame, i, nullptr, true, false), 0});
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
        case kir::NodeKind::SortRow:
          for (kir::Value** v : s->as<kir::SortRow>()->valueSlots()) slot(*v);
          break;
        default: break;  // Allocate sizes stay constants; syncs and comments hold no values
      }
    }
    // Pre/post times of the frame tree, for ancestor tests (iterative: the tree may be deep).
    std::vector<std::vector<int>> children(frames.size());
    for (size_t f = 1; f < frames.size(); ++f) children[size_t(frames[f].parent)].push_back(int(f));
    tin.assign(frames.size(), 0);
    tout.assign(frames.size(), 0);
    int clock = 0;
    std::vector<std::pair<int, size_t>> walk{{0, 0}};
    tin[0] = clock++;
    while (!walk.empty()) {
      auto& [f, next] = walk.back();
      if (next < children[size_t(f)].size()) {
        int c = children[size_t(f)][next++];
        tin[size_t(c)] = clock++;
        walk.push_back({c, 0});
        continue;
      }
      tout[size_t(f)] = clock++;
      walk.pop_back();
    }
    // Ancestor tables for positionIn: up[j][f] is the 2^j-th ancestor of f.
    up.assign(1, std::vector<int>(frames.size()));
    for (size_t f = 0; f < frames.size(); ++f) up[0][f] = frames[f].parent;
    for (size_t j = 1; (size_t(1) << j) < frames.size(); ++j) {
      up.emplace_back(frames.size());
      for (size_t f = 0; f < frames.size(); ++f) {
        const int mid = up[j - 1][f];
        up[j][f] = mid < 0 ? -1 : up[j - 1][size_t(mid)];
      }
    }
  }

  // The ancestor of frame f at depth d (<= f's depth).
  int ancestorAt(int f, int d) const {
    int steps = frames[size_t(f)].depth - d;
    for (size_t j = 0; steps > 0; ++j, steps >>= 1) {
      if (steps & 1) f = up[j][size_t(f)];
    }
    return f;
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
      case kir::NodeKind::Call: return v->as<kir::Call>()->args;
      case kir::NodeKind::Misalignment: return {v->as<kir::Misalignment>()->index};
      default: return {};
    }
  }

  void markEvaluated(kir::Value* root, int frame) {
    std::unordered_set<const kir::Value*> seen;  // a shared operand is marked once
    std::vector<kir::Value*> work{root};
    while (!work.empty()) {
      kir::Value* v = work.back();
      work.pop_back();
      if (!seen.insert(v).second) continue;
      int k = key(v);
      if (k >= 0 && hoistable(v)) evaluated.insert({frame, k});
      std::vector<kir::Value*> c = children(v);
      for (size_t i = 0; i < c.size(); ++i) {
        if (!conditionalChild(v, int(i))) work.push_back(c[i]);
      }
    }
  }

  // The frame an occurrence of index expression `v` (key k) at `use` goes to, or -1 when it must
  // stay where it is. `conditional`: the occurrence is evaluated only under a condition of its
  // statement's value.
  int target(int use, int k, bool conditional) const {
    const KeyInfo& ki = info[size_t(k)];
    // The home: the deepest frame around `use` that defines one of the loop indices.
    const int home = homeOf(k, use);
    if (home < 0) return -1;  // not in scope (cannot happen in a well-formed kernel)
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
    return frames[size_t(use)].serialLoops > frames[size_t(to)].serialLoops;
  }

  // ---- Counting, then rewriting --------------------------------------------------------------
  std::map<std::pair<int, int>, int> count;

  void countUses(kir::Value* root, int root_use) {
    struct Task {
      kir::Value* v;
      int use;
      bool conditional;
    };
    std::vector<Task> work{{root, root_use, false}};
    while (!work.empty()) {
      Task t = work.back();
      work.pop_back();
      int k = key(t.v);
      if (k >= 0 && hoistable(t.v)) {
        int to = target(t.use, k, t.conditional);
        if (to >= 0) {
          // An expression named once is evaluated once: its operands count once, in its home.
          if (++count[{to, k}] == 1) {
            for (kir::Value* c : children(t.v)) work.push_back({c, to, false});
          }
          continue;
        }
      }
      std::vector<kir::Value*> c = children(t.v);
      for (size_t i = 0; i < c.size(); ++i) {
        work.push_back({c[i], t.use, t.conditional || conditionalChild(t.v, int(i))});
      }
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
    if (to == use) return stmt;
    return frames[size_t(ancestorAt(use, frames[size_t(to)].depth + 1))].indexInParent;
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
      case kir::NodeKind::Call:
        return kernel.create<kir::Call>(v->dtype(), v->as<kir::Call>()->fn, c);
      case kir::NodeKind::Misalignment: {
        auto* m = v->as<kir::Misalignment>();
        return kernel.create<kir::Misalignment>(m->buffer, c[0], m->width);
      }
      default: LOOM_UNREACHABLE("a value without children has none to replace");
    }
  }

  // `root` with its hoisted subexpressions replaced by named index variables. Post-order with an
  // explicit stack; a node decides when it is entered (its earlier siblings done) whether it is
  // named, and names itself after its operands, so that declarations come operands first.
  kir::Value* rewrite(kir::Value* root, int root_use, size_t root_stmt) {
    struct Node {
      kir::Value* v;
      int use;
      size_t stmt;
      bool conditional;
      int to = -1;  ///< >= 0: named in this frame once its operands are rewritten
      int key = -1;
      std::vector<kir::Value*> kids;
      std::vector<kir::Value*> done;
    };
    std::vector<Node> stack;
    kir::Value* result = nullptr;
    auto enter = [&](kir::Value* v, int use, size_t stmt, bool conditional) {
      int k = key(v);
      if (k >= 0 && hoistable(v)) {
        int to = target(use, k, conditional);
        if (to >= 0 && (count[{to, k}] >= 2 || leavesALoop(use, to))) {
          if (auto it = named.find({to, k}); it != named.end()) return static_cast<kir::Value*>(it->second);
          size_t at = positionIn(to, use, stmt);
          stack.push_back({v, to, at, false, to, k, children(v), {}});
          return static_cast<kir::Value*>(nullptr);
        }
      }
      std::vector<kir::Value*> kids = children(v);
      if (kids.empty()) return v;
      stack.push_back({v, use, stmt, conditional, -1, k, std::move(kids), {}});
      return static_cast<kir::Value*>(nullptr);
    };
    auto deliver = [&](kir::Value* r) {
      if (stack.empty()) {
        result = r;
      } else {
        stack.back().done.push_back(r);
      }
    };
    if (kir::Value* r = enter(root, root_use, root_stmt, false)) deliver(r);
    while (!stack.empty()) {
      Node& n = stack.back();
      const size_t i = n.done.size();
      if (i < n.kids.size()) {
        const bool cond = n.to < 0 && (n.conditional || conditionalChild(n.v, int(i)));
        if (kir::Value* r = enter(n.kids[i], n.use, n.stmt, cond)) stack.back().done.push_back(r);
        continue;
      }
      Node finished = std::move(n);
      stack.pop_back();
      kir::Value* out = rebuild(finished.v, finished.done);
      if (finished.to >= 0) {
        kir::Var* var = kernel.newVar(kIndexType, "i");
        decls.push_back({finished.to, finished.stmt, kernel.create<kir::DeclareVar>(var, out, true)});
        named[{finished.to, finished.key}] = var;
        changed = true;
        out = var;
      }
      deliver(out);
    }
    return result;
  }

  void run() {
    collect();
    for (const Slot& s : slots) markEvaluated(*s.value, s.frame);
    for (const Slot& s : slots) countUses(*s.value, s.frame);
    for (const Slot& s : slots) *s.value = rewrite(*s.value, s.frame, s.stmt);
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
