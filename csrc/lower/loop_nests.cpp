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
    while (!group.empty()) {
      std::optional<size_t> best;
      for (size_t i : group) {
        bool ready = true;
        for (ir::Val* in : exprs[i]->inputs()) {
          auto it = producer.find(in);
          ready &= it == producer.end() || !group.count(it->second);
        }
        if (ready && (!best || ca(i) < ca(*best))) best = i;
      }
      LOOM_ASSERT(best.has_value(), "cycle among inlined exprs");
      order.push_back(exprs[*best]);
      placed[*best] = true;
      group.erase(*best);
    }
  };
  for (size_t i = 0; i < exprs.size(); ++i) {
    if (ca(i) > 0 && consumed.count(exprs[i]->output(0))) {
      deferred[i] = true;
    } else {
      place(i);
    }
  }
  for (size_t i = 0; i < exprs.size(); ++i) {
    if (!placed[i]) place(i);
  }
  return order;
}

}  // namespace

bool loopNests(kir::Kernel& kernel, LowerContext& ctx) {
  const transform::IdGraph permissive(ctx.fusion, transform::IdMappingMode::Permissive);
  // Group loops shared through compute-at positions, and sibling outputs' loops.
  for (const ir::Expr* e : ctx.exprs) {
    LOOM_CHECK(!e->isA<ir::ReshapeOp>(), "lowering: ",
               e->opName(), " (", e->output(0)->toString(),
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
  return !kernel.body.empty();
}

}  // namespace loom::lower
