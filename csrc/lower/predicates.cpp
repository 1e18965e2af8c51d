// SPDX-License-Identifier: Apache-2.0
// Pass predicates: out-of-range guards for non-divisible splits and single-thread result writes.
//
// A TensorOp runs only where each of its output's logical indices that comes out of a split or
// merge is below its extent (the remainder iterations of ceilDiv loops are masked). An
// accumulation also checks its reduction indices, so masked iterations leave the accumulator at
// its init value, which is what threads without data contribute to a block reduction. A result
// write of a block reduction to a parameter is done by the thread whose reduced thread indices
// are 0 (the all-reduce gives every thread the value; one store is enough), and for a grid
// all-reduce (LowerContext::gridAllReduced) by block 0 of its reduced block dims.
//
//   before: tensor T1 = exp(T0)          after:  if ((i0 * 128) + i1) < T0.size[0]:
//                                                  tensor T1 = exp(T0)
#include <unordered_set>

#include "index_compute.h"

namespace loom::lower {

bool predicates(kir::Kernel& kernel, LowerContext& ctx) {
  bool changed = false;
  std::vector<kir::ForLoop*> loops;
  IndexBuilder b{kernel};
  kir::forEachWithLoops(kernel.body, loops, [&](kir::Scope& scope, size_t i,
                                           const std::vector<kir::ForLoop*>& stack) {
    auto* op = scope[i]->dynCast<kir::TensorOp>();
    if (op == nullptr) return;
    // A block-wide sort (pass sorts) is called by every thread of the block, and bounds its row
    // itself; its rows are whole BIDx loops (the sort scheduler does not split them).
    if (ir::isSortExpr(op->expr) && ir::sortBlockRow(op->expr) > 0) return;
    IndexMap idx = consumerIndices(kernel, ctx, op->out, stack);
    kir::Value* cond = inRangePredicate(kernel, ctx, op->out, idx,
                                        op->role == kir::TensorOpRole::Accumulate);
    if (op->role == kir::TensorOpRole::WriteResult &&
        ctx.buffers.at(op->out)->kind == kir::BufferKind::Param) {
      for (ir::IterDomain* id : op->out->loop()) {
        if (id->isReduction() && ir::isThreadDim(ctx.loopParallelType(id))) {
          std::string axis(ir::parallelTypeName(ctx.loopParallelType(id)));  // "TIDx" -> x
          auto* tid = kernel.create<kir::NamedScalar>(std::string("threadIdx.") + axis.back());
          cond = b.logicalAnd(cond, b.eq(tid, kernel.constInt(0)));
        }
      }
      // A grid all-reduce's result is in every block: block 0 of the reduced dims stores it.
      if (auto all = ctx.gridAllReduced.find(op->out); all != ctx.gridAllReduced.end()) {
        for (ir::ParallelType p : all->second) {
          auto* bid = kernel.create<kir::NamedScalar>(parallelIndexName(p));
          cond = b.logicalAnd(cond, b.eq(bid, kernel.constInt(0)));
        }
      }
    }
    if (op->role != kir::TensorOpRole::Accumulate &&
        ctx.buffers.at(op->out)->kind == kir::BufferKind::Param && isPromoted(ctx, op->out)) {
      // An output whose loops run over a larger tensor's space (a [8] result in the loops of a
      // [4, s, 8] one) is written once: at index 0 of the dims it does not have. Its producers
      // may be computed only there (a broadcast of them is checked to be below 1).
      // "Its dims": the exact sets of its root and logical IDs and, through definitions (a
      // reshape's splits and merges, in any tensor of the set), the sets they come from.
      const transform::IdGraph& exact = ctx.loopGraph().exact();
      std::unordered_set<int64_t> mine;
      std::vector<ir::IterDomain*> work = op->out->domain()->maybeRoot();
      work.insert(work.end(), op->out->logical().begin(), op->out->logical().end());
      while (!work.empty()) {
        ir::IterDomain* id = work.back();
        work.pop_back();
        if (!mine.insert(exact.setOf(id)).second) continue;
        for (ir::IterDomain* m : exact.disjointSet(id)) {
          if (m->definition() == nullptr) continue;
          for (ir::Val* in : m->definition()->inputs()) work.push_back(in->as<ir::IterDomain>());
        }
      }
      for (const ir::TensorView* ref : promotionOf(ctx, op->out).refs) {
        for (ir::IterDomain* id : resizedRoot(ref)) {
          if (id->isReduction() || !idx.count(id)) continue;
          // A broadcast of the larger tensor with an index from a merge (padding iterations
          // past its flattened space) counts like a dim it does not have.
          auto* c = idx.at(id)->dynCast<kir::Const>();
          if (c != nullptr && c->asInt() == 0) continue;
          if (id->isBroadcast() || mine.count(exact.setOf(id)) == 0) {
            cond = b.logicalAnd(cond, b.eq(idx.at(id), kernel.constInt(0)));
          }
        }
      }
    }
    if (cond == nullptr) return;
    auto* ite = kernel.create<kir::IfThenElse>(cond);
    ite->thenBody.push_back(op);
    scope[i] = ite;
    changed = true;
  });
  return changed;
}

}  // namespace loom::lower
