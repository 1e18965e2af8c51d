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
#include "loom/ir/exprs.h"
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

}  // namespace

bool loopNests(kir::Kernel& kernel, LowerContext& ctx) {
  // Group loops shared through compute-at positions, and sibling outputs' loops.
  for (const ir::Expr* e : ctx.exprs) {
    LOOM_CHECK(!e->isA<ir::WelfordOp>() && !e->isA<ir::ReshapeOp>(), "lowering: ",
               e->opName(), " (", e->output(0)->toString(),
               ") is not supported by the kernel executor yet");
    for (ir::Val* out : e->outputs()) {
      auto* c = out->as<ir::TensorView>();
      for (ir::IterDomain* id : c->loop()) ctx.loopGroup(id);
      for (ir::Val* in : e->inputs()) {
        auto* p = in->dynCast<ir::TensorView>();
        if (p == nullptr) continue;
        for (int64_t k = 0; k < p->computeAtPosition(); ++k) {
          ctx.uniteLoops(p->axis(k), c->axis(k));
        }
      }
    }
  }

  std::vector<kir::ForLoop*> open;
  for (const ir::Expr* e : ctx.exprs) {
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
      // Vectorize, Unroll and Unswitch are plain serial loops until their passes exist.
      if (!ir::isThreadOrBlockDim(ptype)) ptype = ir::ParallelType::Serial;
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
