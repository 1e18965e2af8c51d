// SPDX-License-Identifier: Apache-2.0
// Pass loop_nests: ForLoops from the loop graph, one TensorOp per expr placed where its inputs
// are live.
//
// The loop graph (transform/loop_graph.h) says which loop IDs are one loop (through the ID
// graphs, not by position), what each loop runs over (its promoted ID) and how loops nest: each
// expr runs in the loops of its output's loop path. This pass makes one ForLoop per loop group
// that some expr runs in, nested as the graph says, and orders the children of every scope
// (loops and TensorOps) topologically: a child comes after every child whose subtree produces a
// tensor its own subtree reads, ties broken by the fusion's expr order. So an intermediate read
// by two consumers in one loop, producers in loops of their own, and unrelated groups of outputs
// all land where their inputs are live, whatever order Fusion::exprs() lists them in.
//
//   before: (empty kernel)        after:  for i0 in BIDx 0 .. ceil_div(T0.size[0], 128):
//                                           for i1 in TIDx 0 .. 128:
//                                             tensor T2 = add(T0, T1)
#include <algorithm>
#include <map>
#include <queue>
#include <set>
#include <unordered_map>

#include "loom/eval/expression_evaluator.h"
#include "loom/ir/exprs.h"
#include "loom/lower/kir_walk.h"
#include "loom/lower/lower.h"

namespace loom::lower {

namespace {

void addLaunchDim(kir::Kernel& kernel, ir::ParallelType ptype, const ir::Scalar* extent) {
  for (kir::LaunchDim& d : kernel.launch) {
    if (d.ptype == ptype) {
      d.extents.push_back(extent);
      return;
    }
  }
  kernel.launch.push_back({ptype, {extent}});
}

// A vectorized loop ID is the innermost one of its tensor, with a constant extent (the vector
// width); the byte size rule is checked by the vectorize pass, which knows the copied buffers.
void checkVectorized(const ir::TensorView* tv, const LowerContext& ctx) {
  for (size_t k = 0; k < tv->loop().size(); ++k) {
    ir::IterDomain* id = tv->axis(int64_t(k));
    if (ctx.loopParallelType(id) != ir::ParallelType::Vectorize ||
        ctx.loopGraph().isTrivial(ctx.loopGroup(id))) {
      continue;
    }
    LOOM_CHECK(k + 1 == tv->loop().size(), "lowering: ", tv->toString(), " axis ", k,
               " is vectorized but is not the innermost loop ID (", tv->loop().size() - 1, ")");
    eval::ExpressionEvaluator ee;
    auto value = ee.evaluate(ctx.loopRepresentative(id)->extent());
    LOOM_CHECK(value && std::holds_alternative<int64_t>(*value), "lowering: ", tv->toString(),
               " axis ", k, " is vectorized with the symbolic extent ", id->extent()->toString(),
               "; a vector width must be a constant (split by it)");
  }
}

// The loop tree: one node per non-trivial loop group some expr runs in, the kernel body as the
// root. A node's children are loop nodes and exprs (indices into ctx.exprs) in emission order.
struct LoopTree {
  struct Child {
    bool is_loop;
    int64_t id;  ///< group (loop) or expr index
  };
  struct Node {
    int64_t group = -1;
    std::vector<Child> children;
    int64_t first_expr = -1;  ///< smallest expr index in the subtree: the tie-break
    std::vector<int64_t> exprs;  ///< every expr in the subtree
  };
  std::map<int64_t, Node> nodes;  ///< group -> node; -1 is the kernel body
};

class LoopNestBuilder {
 public:
  LoopNestBuilder(kir::Kernel& kernel, LowerContext& ctx) : kernel_(kernel), ctx_(ctx) {}

  void run() {
    const transform::LoopGraph& lg = ctx_.loopGraph();
    tree_.nodes[-1];
    for (size_t i = 0; i < ctx_.exprs.size(); ++i) {
      const auto* out = ctx_.exprs[i]->output(0)->as<ir::TensorView>();
      checkVectorized(out, ctx_);
      std::vector<int64_t> path = lg.loopPath(out);
      int64_t parent = -1;
      for (int64_t g : path) {
        LoopTree::Node& node = tree_.nodes[g];
        if (node.group < 0) {
          node.group = g;
          tree_.nodes[parent].children.push_back({true, g});
        }
        parent = g;
      }
      tree_.nodes[parent].children.push_back({false, int64_t(i)});
      for (const ir::Val* v : ctx_.exprs[i]->outputs()) producer_[v] = int64_t(i);
    }
    collectSubtree(-1);
    order(-1);
    emit(-1, kernel_.body);
  }

 private:
  // The nodes below `root` (itself included), each after its ancestors: a pre-order without
  // recursion, so that a loop nest tens of thousands deep needs no stack.
  std::vector<int64_t> preOrder(int64_t root) const {
    std::vector<int64_t> out;
    std::vector<int64_t> work{root};
    while (!work.empty()) {
      int64_t id = work.back();
      work.pop_back();
      out.push_back(id);
      for (const LoopTree::Child& c : tree_.nodes.at(id).children) {
        if (c.is_loop) work.push_back(c.id);
      }
    }
    return out;
  }

  void collectSubtree(int64_t root) {
    // Children before parents: the reverse of a pre-order.
    std::vector<int64_t> nodes = preOrder(root);
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      LoopTree::Node& node = tree_.nodes.at(*it);
      for (const LoopTree::Child& c : node.children) {
        if (c.is_loop) {
          const auto& sub = tree_.nodes.at(c.id).exprs;
          node.exprs.insert(node.exprs.end(), sub.begin(), sub.end());
        } else {
          node.exprs.push_back(c.id);
        }
      }
      node.first_expr =
          node.exprs.empty() ? 0 : *std::min_element(node.exprs.begin(), node.exprs.end());
    }
  }

  // Orders the children of every node topologically (Kahn's algorithm, smallest first expr
  // first among the ready ones).
  void order(int64_t root) {
    for (int64_t id : preOrder(root)) orderChildren(tree_.nodes.at(id));
  }

  void orderChildren(LoopTree::Node& node) {
    const size_t n = node.children.size();
    std::unordered_map<int64_t, size_t> child_of;  // expr -> child position
    for (size_t c = 0; c < n; ++c) {
      const LoopTree::Child& ch = node.children[c];
      if (ch.is_loop) {
        for (int64_t e : tree_.nodes.at(ch.id).exprs) child_of[e] = c;
      } else {
        child_of[ch.id] = c;
      }
    }
    std::vector<std::set<size_t>> succs(n);
    std::vector<size_t> waiting(n, 0);  // predecessors not placed yet
    for (auto [e, c] : child_of) {
      for (const ir::Val* in : ctx_.exprs[size_t(e)]->inputs()) {
        auto p = producer_.find(in);
        if (p == producer_.end()) continue;
        auto pc = child_of.find(p->second);
        if (pc != child_of.end() && pc->second != c && succs[pc->second].insert(c).second) {
          ++waiting[c];
        }
      }
    }
    auto first = [&](size_t c) {
      const LoopTree::Child& ch = node.children[c];
      return ch.is_loop ? tree_.nodes.at(ch.id).first_expr : ch.id;
    };
    // Ready children by their first expr, smallest on top.
    auto later = [&](size_t a, size_t b) { return first(a) > first(b); };
    std::priority_queue<size_t, std::vector<size_t>, decltype(later)> ready(later);
    for (size_t c = 0; c < n; ++c) {
      if (waiting[c] == 0) ready.push(c);
    }
    std::vector<LoopTree::Child> sorted;
    std::vector<bool> done(n, false);
    while (!ready.empty()) {
      const size_t best = ready.top();
      ready.pop();
      done[best] = true;
      sorted.push_back(node.children[best]);
      for (size_t s : succs[best]) {
        if (--waiting[s] == 0) ready.push(s);
      }
    }
    if (sorted.size() < n) {
      // A cycle: some loop would have to run both before and after another statement.
      std::string names;
      for (size_t c = 0; c < n; ++c) {
        if (done[c]) continue;
        const LoopTree::Child& ch = node.children[c];
        names += (names.empty() ? "" : ", ") +
                 (ch.is_loop ? "the loop of " + ctx_.loopGraph().promoted(ch.id)->toString()
                             : ctx_.exprs[size_t(ch.id)]->output(0)->toString());
      }
      LOOM_THROW("lowering: cannot order ", names, ": each needs a value another one computes "
                 "later; a loop shared through inlining would have to run twice (inline fewer "
                 "loop IDs)");
    }
    node.children = std::move(sorted);
  }

  // The ForLoops and TensorOps of the tree, node by node with an explicit stack.
  void emit(int64_t root, kir::Scope& root_scope) {
    struct Frame {
      int64_t node;
      kir::Scope* scope;
      size_t next = 0;
    };
    std::vector<Frame> stack{{root, &root_scope}};
    while (!stack.empty()) {
      Frame& f = stack.back();
      const auto& children = tree_.nodes.at(f.node).children;
      if (f.next == children.size()) {
        stack.pop_back();
        continue;
      }
      const LoopTree::Child c = children[f.next++];
      kir::Scope& scope = *f.scope;
      if (!c.is_loop) {
        emitExpr(c.id, scope);
        continue;
      }
      kir::ForLoop* loop = emitLoop(c.id, scope);
      stack.push_back({c.id, &loop->body});
    }
  }

  void emitExpr(int64_t index, kir::Scope& scope) {
    const transform::LoopGraph& lg = ctx_.loopGraph();
    const ir::Expr* e = ctx_.exprs[size_t(index)];
    auto* out = e->output(0)->as<ir::TensorView>();
    scope.push_back(kernel_.create<kir::TensorOp>(e, out, kir::TensorOpRole::Compute));
    for (ir::Val* v : e->outputs()) {
      auto* tv = v->as<ir::TensorView>();
      int64_t g = lg.scope(tv);
      auto it = loops_.find(g);
      ctx_.scopes[tv] = it == loops_.end() ? loops_.at(lg.scope(out)) : it->second;
    }
  }

  kir::ForLoop* emitLoop(int64_t group, kir::Scope& scope) {
    const transform::LoopGraph& lg = ctx_.loopGraph();
    ir::IterDomain* rep = lg.promoted(group);
    ir::ParallelType ptype = lg.parallelType(group);
    // Vectorize/Unroll/Unswitch loops are serial loops that later passes and codegen rewrite; a
    // Bulk loop is shared among the block's threads (shareInnermostBulkLoops); other non-launch
    // types (DID) are serial here.
    if (!ir::isThreadOrBlockDim(ptype) && ptype != ir::ParallelType::Vectorize &&
        ptype != ir::ParallelType::Unroll && ptype != ir::ParallelType::Unswitch &&
        ptype != ir::ParallelType::Bulk) {
      ptype = ir::ParallelType::Serial;
    }
    auto* loop = kernel_.create<kir::ForLoop>(kernel_.newVar(kIndexType, "i"), kernel_.constInt(0),
                                              ctx_.lowerScalar(kernel_, rep->extent()), ptype, rep);
    if (loop->isParallel()) addLaunchDim(kernel_, ptype, rep->extent());
    loops_[group] = loop;
    scope.push_back(loop);
    return loop;
  }

  kir::Kernel& kernel_;
  LowerContext& ctx_;
  LoopTree tree_;
  std::unordered_map<const ir::Val*, int64_t> producer_;
  std::unordered_map<int64_t, kir::ForLoop*> loops_{{-1, nullptr}};
};

// A bulk copy's box (its Bulk loops) is copied by the threads of the block that its other loops
// leave free: the innermost Bulk loop of a nest strides over the launched thread types no loop
// around or inside it is parallelized on (ForLoop::sharedBy; codegen: start + the thread's index
// over them, step their thread count), so consecutive threads copy consecutive elements; the
// Bulk loops around it, and one no free thread type can share, run on each thread as serial
// loops. (The tensor memory accelerator's one-thread copy is not emitted yet.)
void shareInnermostBulkLoops(kir::Kernel& kernel) {
  std::vector<ir::ParallelType> launched;
  for (ir::ParallelType p :
       {ir::ParallelType::TIDx, ir::ParallelType::TIDy, ir::ParallelType::TIDz}) {
    if (std::any_of(kernel.launch.begin(), kernel.launch.end(),
                    [p](const kir::LaunchDim& d) { return d.ptype == p; })) {
      launched.push_back(p);
    }
  }
  // Per innermost Bulk loop, the types of the loops around and inside it (over every statement
  // it holds); Bulk loops with a Bulk loop inside become serial.
  std::map<kir::ForLoop*, std::set<ir::ParallelType>> bound;
  std::set<kir::ForLoop*> outer_bulk;
  std::vector<kir::ForLoop*> loops;
  kir::forEachWithLoops(
      kernel.body, loops, [&](kir::Scope&, size_t, const std::vector<kir::ForLoop*>& stack) {
        auto inner = std::find_if(stack.rbegin(), stack.rend(), [](const kir::ForLoop* f) {
          return f->ptype == ir::ParallelType::Bulk;
        });
        if (inner == stack.rend()) return;
        std::set<ir::ParallelType>& types = bound[*inner];
        for (kir::ForLoop* f : stack) {
          if (f == *inner) continue;
          if (f->ptype == ir::ParallelType::Bulk) outer_bulk.insert(f);
          types.insert(f->ptype);
        }
      });
  for (kir::ForLoop* f : outer_bulk) f->ptype = ir::ParallelType::Serial;
  for (auto& [f, types] : bound) {
    if (outer_bulk.count(f)) continue;
    for (ir::ParallelType p : launched) {
      if (!types.count(p)) f->sharedBy.push_back(p);
    }
    if (f->sharedBy.empty()) f->ptype = ir::ParallelType::Serial;
  }
}

}  // namespace

bool loopNests(kir::Kernel& kernel, LowerContext& ctx) {
  ctx.buildLoopGraph();
  LoopNestBuilder(kernel, ctx).run();
  shareInnermostBulkLoops(kernel);
  return !kernel.body.empty();
}

}  // namespace loom::lower
