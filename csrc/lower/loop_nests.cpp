// SPDX-License-Identifier: Apache-2.0
// Pass loop_nests: ForLoops from loop domains and compute-at positions, one TensorOp per expr.
//
// Loop IDs are grouped first: a producer's loop ID k (k < its compute-at position) is the same
// loop as each consumer's loop ID k (inlining guarantees they map). Then exprs are placed in
// order: an expr re-enters the open loops whose groups match its output's leading loop IDs and
// opens new loops for the rest. Because Fusion::exprs() puts a producer right before the consumer
// it is inlined into, the shared loops are still open when the consumer comes.
//
//   before: (empty kernel)        after:  for i0 in BIDx 0 .. ceil_div(T0.size[0], 128):
//                                           for i1 in TIDx 0 .. 128:
//                                             tensor T2 = add(T0, T1)
#include <algorithm>

#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "loom/eval/expression_evaluator.h"
#include "loom/ir/exprs.h"
#include "loom/lower/lower.h"
#include "loom/transform/id_graph.h"

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
void checkVectorized(const ir::TensorView* tv, size_t k) {
  ir::IterDomain* id = tv->axis(int64_t(k));
  LOOM_CHECK(k + 1 == tv->loop().size(), "lowering: ", tv->toString(), " axis ", k,
             " is vectorized but is not the innermost loop ID (", tv->loop().size() - 1, ")");
  eval::ExpressionEvaluator ee;
  auto value = ee.evaluate(id->extent());
  LOOM_CHECK(value && std::holds_alternative<int64_t>(*value), "lowering: ", tv->toString(),
             " axis ", k, " is vectorized with the symbolic extent ", id->extent()->toString(),
             "; a vector width must be a constant (split by it)");
}

// The order exprs are placed in: an expr inlined into a consumer (compute-at position > 0) is
// deferred and placed right before that consumer, together with its own deferred producers,
// shallowest compute-at position first (Kahn's order with that priority), so that no other
// expr's loop falls between an inlined producer and the loops it shares with its consumer.
std::vector<const ir::Expr*> placementOrder(const std::vector<const ir::Expr*>& exprs) {
  std::unordered_map<const ir::Val*, size_t> producer;
  std::unordered_set<const ir::Val*> consumed;
  for (size_t i = 0; i < exprs.size(); ++i) {
    for (ir::Val* out : exprs[i]->outputs()) producer[out] = i;
    for (ir::Val* in : exprs[i]->inputs()) consumed.insert(in);
  }
  auto ca = [&](size_t i) { return exprs[i]->output(0)->as<ir::TensorView>()->computeAtPosition(); };
  std::vector<bool> deferred(exprs.size(), false), placed(exprs.size(), false);
  std::vector<const ir::Expr*> order;
  auto place = [&](size_t root) {
    std::set<size_t> group{root};  // root and its deferred, unplaced ancestors
    std::vector<size_t> work{root};
    while (!work.empty()) {
      size_t i = work.back();
      work.pop_back();
      for (ir::Val* in : exprs[i]->inputs()) {
        auto it = producer.find(in);
        if (it != producer.end() && deferred[it->second] && !placed[it->second] &&
            group.insert(it->second).second) {
          work.push_back(it->second);
        }
      }
    }
    // Longest producer path from each member to the root: among ready exprs of equal compute-at
    // position the farthest goes first, so a direct producer of the root (x - mean in layer_norm)
    // is not placed, in a loop of its own, before a long chain the root also reads (the rstd
    // chain through a second reduction) and closed again before the root opens its loops.
    std::unordered_map<size_t, size_t> dist{{root, 0}};
    for (size_t round = 0; round < group.size(); ++round) {
      for (size_t i : group) {
        auto d = dist.find(i);
        if (d == dist.end()) continue;
        for (ir::Val* in : exprs[i]->inputs()) {
          auto it = producer.find(in);
          if (it == producer.end() || !group.count(it->second)) continue;
          size_t& pd = dist[it->second];
          pd = std::max(pd, d->second + 1);
        }
      }
    }
    while (!group.empty()) {
      std::optional<size_t> best;
      for (size_t i : group) {
        bool ready = true;
        for (ir::Val* in : exprs[i]->inputs()) {
          auto it = producer.find(in);
          ready &= it == producer.end() || !group.count(it->second);
        }
        if (!ready) continue;
        if (!best || ca(i) < ca(*best) || (ca(i) == ca(*best) && dist[i] > dist[*best])) best = i;
      }
      LOOM_ASSERT(best.has_value(), "cycle among inlined exprs");
      order.push_back(exprs[*best]);
      placed[*best] = true;
      group.erase(*best);
    }
  };
  // Producers that share no loop (compute-at 0) and whose whole producer cone is inlined into
  // them (a chain from fusion inputs only: a weight's cache and its cast to f32) go first: placed
  // in the middle, their own loop nest would close loops that earlier exprs opened for consumers
  // still to come (a normalization's weight between the row statistics, which a forked output
  // placed early, and the normalized output).
  auto cone_inlined = [&](size_t root) {
    std::vector<size_t> work{root};
    std::unordered_set<size_t> seen{root};
    while (!work.empty()) {
      size_t i = work.back();
      work.pop_back();
      for (ir::Val* in : exprs[i]->inputs()) {
        auto it = producer.find(in);
        if (it == producer.end()) continue;
        if (ca(it->second) == 0) return false;
        if (seen.insert(it->second).second) work.push_back(it->second);
      }
    }
    return true;
  };
  for (size_t i = 0; i < exprs.size(); ++i) {
    deferred[i] = ca(i) > 0 && consumed.count(exprs[i]->output(0)) != 0;
  }
  for (size_t i = 0; i < exprs.size(); ++i) {
    if (ca(i) == 0 && consumed.count(exprs[i]->output(0)) && cone_inlined(i)) place(i);
  }
  for (size_t i = 0; i < exprs.size(); ++i) {
    if (!placed[i] && !deferred[i]) place(i);
  }
  for (size_t i = 0; i < exprs.size(); ++i) {
    if (!placed[i]) place(i);
  }
  return order;
}

// A ReductionOp whose output keeps iteration loop IDs inside its reduction loops (an rFactor
// producer [.., S(r), v(i)] of a vectorized outer reduction: one partial per vector lane) cannot use
// one scalar accumulator. When all its reduction loops are serial (no block or grid step), it
// accumulates in its own local buffer instead: the buffer is set to the init value by a copy of
// the inner iteration loops placed before the outermost reduction loop (a WriteResult of a
// variable holding the init), and the op becomes an Accumulate without accumulator variable
// (indexing: out[i] = out[i] op in[i]). The reductions pass leaves it alone (not Compute).
//
//   for i3 in 0 .. S:                    var init4 = 0
//     for i4 in Vectorize 0 .. 4:        for i5 in 0 .. 4:
//       tensor T2 = sum(T1)                T2 <- init4 of T2 = sum(T1)
//                                        for i3 in 0 .. S:
//                                          for i4 in 0 .. 4:
//                                            T2 += T2 = sum(T1)
struct InBufferReductions {
  kir::Kernel& kernel;
  LowerContext& ctx;

  bool applies(const kir::TensorOp* op) const {
    if (!op->expr->isA<ir::ReductionOp>() || op->out->isFusionOutput()) return false;
    bool in_reduction = false, inner_iteration = false;
    for (ir::IterDomain* id : op->out->loop()) {
      ir::ParallelType p = ctx.loopParallelType(id);
      if (id->isReduction()) {
        if (ir::isThreadOrBlockDim(p)) return false;  // block/grid steps need the accumulator
        in_reduction = true;
      } else if (in_reduction && !id->isBroadcast()) {
        if (ir::isThreadOrBlockDim(p)) return false;
        inner_iteration = true;
      }
    }
    return inner_iteration;
  }

  // Rewrites `op`, enclosed by `loops`; returns the statements to insert before loop `first`.
  void rewrite(kir::TensorOp* op, const std::vector<kir::ForLoop*>& loops, size_t first,
               std::vector<kir::Stmt*>& init) {
    const auto* red = op->expr->as<ir::ReductionOp>();
    kir::Var* value = kernel.newVar(op->out->dtype(), "init");
    init.push_back(kernel.create<kir::DeclareVar>(value, ctx.lowerScalar(kernel, red->init())));
    kir::Scope* scope = &init;
    for (size_t k = first; k < loops.size(); ++k) {
      kir::ForLoop* l = loops[k];
      bool iteration = false;
      for (ir::IterDomain* id : op->out->loop()) {
        iteration |= !id->isReduction() && ctx.loopGroup(id) == ctx.loopGroup(l->id);
      }
      if (!iteration) continue;
      auto* copy = kernel.create<kir::ForLoop>(kernel.newVar(kIndexType, "i"), l->start, l->stop,
                                               l->ptype == ir::ParallelType::Vectorize
                                                   ? ir::ParallelType::Serial
                                                   : l->ptype,
                                               l->id);
      scope->push_back(copy);
      scope = &copy->body;
    }
    auto* write = kernel.create<kir::TensorOp>(op->expr, op->out, kir::TensorOpRole::WriteResult);
    write->acc = value;
    scope->push_back(write);
    op->role = kir::TensorOpRole::Accumulate;
  }

  // Returns true when something was rewritten under `scope`.
  bool visit(kir::Scope& scope, std::vector<kir::ForLoop*>& loops) {
    bool changed = false;
    for (size_t i = 0; i < scope.size(); ++i) {
      if (auto* f = scope[i]->dynCast<kir::ForLoop>()) {
        loops.push_back(f);
        changed |= visit(f->body, loops);
        loops.pop_back();
        continue;
      }
      auto* op = scope[i]->dynCast<kir::TensorOp>();
      if (op == nullptr || op->role != kir::TensorOpRole::Compute || !applies(op)) continue;
      size_t first = loops.size();
      for (size_t k = 0; k < loops.size() && first == loops.size(); ++k) {
        for (ir::IterDomain* id : op->out->loop()) {
          if (id->isReduction() && ctx.loopGroup(id) == ctx.loopGroup(loops[k]->id)) first = k;
        }
      }
      LOOM_ASSERT(first < loops.size(), "no reduction loop around ", op->out->toString());
      std::vector<kir::Stmt*> init;
      rewrite(op, loops, first, init);
      kir::Scope& parent = first == 0 ? pending_root : loops[first - 1]->body;
      pending.push_back({&parent, loops[first], std::move(init)});
      changed = true;
    }
    return changed;
  }

  // Insertions are done after the walk so that scopes being walked do not shift.
  struct Insertion {
    kir::Scope* scope;
    kir::ForLoop* before;
    std::vector<kir::Stmt*> stmts;
  };
  std::vector<Insertion> pending;
  kir::Scope pending_root;  // placeholder for the kernel body (replaced in run)

  bool run() {
    std::vector<kir::ForLoop*> loops;
    bool changed = visit(kernel.body, loops);
    for (Insertion& ins : pending) {
      kir::Scope& scope = ins.scope == &pending_root ? kernel.body : *ins.scope;
      auto it = std::find(scope.begin(), scope.end(), ins.before);
      LOOM_ASSERT(it != scope.end(), "reduction loop not found in its parent scope");
      scope.insert(it, ins.stmts.begin(), ins.stmts.end());
    }
    return changed;
  }
};

}  // namespace

bool loopNests(kir::Kernel& kernel, LowerContext& ctx) {
  const transform::IdGraph permissive(ctx.fusion, transform::IdMappingMode::Permissive);
  // Group loops shared through compute-at positions, and sibling outputs' loops.
  for (const ir::Expr* e : ctx.exprs) {
    LOOM_CHECK(!e->isA<ir::ReshapeOp>() && !e->isA<ir::SliceOp>() && !e->isA<ir::PadOp>() &&
                   !e->isA<ir::CatOp>() && !e->isA<ir::FullOp>() && !e->isA<ir::IotaOp>(),
               "lowering: ", e->opName(), " (", e->output(0)->toString(),
               ") is not supported by the kernel executor yet");
    for (ir::Val* out : e->outputs()) {
      auto* c = out->as<ir::TensorView>();
      for (ir::IterDomain* id : c->loop()) ctx.loopGroup(id);
      // Siblings (Welford's avg, m2, n) are written in the loops of output 0.
      auto* first = e->output(0)->as<ir::TensorView>();
      for (int64_t k = 0; k < std::min(c->nDims(), first->nDims()); ++k) {
        ctx.uniteLoops(first->axis(k), c->axis(k));
      }
      for (ir::Val* in : e->inputs()) {
        auto* p = in->dynCast<ir::TensorView>();
        if (p == nullptr) continue;
        for (int64_t k = 0; k < p->computeAtPosition(); ++k) {
          // Loops are shared by position; a schedule that inlines across consumer broadcast
          // loop IDs (legal in the transform layer) would pair the wrong loops here.
          LOOM_CHECK(k < c->nDims() && permissive.areMapped(p->axis(k), c->axis(k)),
                     "lowering: ", p->toString(), " is inlined into ", c->toString(),
                     " at position ", p->computeAtPosition(), " but its loop axis ", k,
                     " does not line up with the consumer's axis ", k,
                     "; inline with transform::InlineOptions{.positional_only = true}");
          ctx.uniteLoops(p->axis(k), c->axis(k));
        }
      }
    }
  }

  std::vector<kir::ForLoop*> open;
  for (const ir::Expr* e : placementOrder(ctx.exprs)) {
    auto* out = e->output(0)->as<ir::TensorView>();
    const auto& ids = out->loop();
    size_t shared = 0;
    while (shared < open.size() && shared < ids.size() &&
           ctx.loopGroup(open[shared]->id) == ctx.loopGroup(ids[shared])) {
      ++shared;
    }
    open.resize(shared);
    for (size_t k = shared; k < ids.size(); ++k) {
      ir::IterDomain* rep = ctx.loopRepresentative(ids[k]);
      ir::ParallelType ptype = ctx.loopParallelType(ids[k]);
      // Vectorize/Unroll/Unswitch loops are serial loops that later passes and codegen rewrite;
      // other non-launch types (DID) are serial here.
      if (!ir::isThreadOrBlockDim(ptype) && ptype != ir::ParallelType::Vectorize &&
          ptype != ir::ParallelType::Unroll && ptype != ir::ParallelType::Unswitch) {
        ptype = ir::ParallelType::Serial;
      }
      if (ptype == ir::ParallelType::Vectorize) checkVectorized(out, k);
      auto* loop = kernel.create<kir::ForLoop>(kernel.newVar(kIndexType, "i"),
                                               kernel.constInt(0),
                                               ctx.lowerScalar(kernel, rep->extent()), ptype, rep);
      if (loop->isParallel()) addLaunchDim(kernel, ptype, rep->extent());
      (open.empty() ? kernel.body : open.back()->body).push_back(loop);
      open.push_back(loop);
    }
    auto* op = kernel.create<kir::TensorOp>(e, out, kir::TensorOpRole::Compute);
    (open.empty() ? kernel.body : open.back()->body).push_back(op);
  }
  InBufferReductions pass{kernel, ctx, {}, {}};
  pass.run();
  return !kernel.body.empty();
}

}  // namespace loom::lower
