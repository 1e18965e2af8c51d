// SPDX-License-Identifier: Apache-2.0
// Pass reductions: a ReductionOp's TensorOp becomes accumulator declaration, accumulation and
// result write, with a BlockReduce when reduction IDs are bound to threads.
//
// The outermost loop of a reduction ID (serial or thread-parallel) in the op's enclosing loops is
// the reduction nest R. Before R: `var acc = init`; inside R the TensorOp accumulates; after R:
// `acc = block_sum(acc, dims=x)` when a reduction ID is TIDx/TIDy/TIDz (an all-reduce, so every
// thread holds the result), then the result write `T2 <- acc`.
//
//   before: for i0 in BIDx 0 .. 8:              after:  for i0 in BIDx 0 .. 8:
//             for i1 in TIDx 0 .. 128:                    var acc2 : f32 = 0
//               tensor T1 = sum(T0)                       for i1 in TIDx 0 .. 128:
//                                                           acc2 += T1 = sum(T0)
//                                                         acc2 = block_sum(acc2, init=0, dims=x)
//                                                         T1 <- acc2 of T1 = sum(T0)
#include "loom/ir/exprs.h"
#include "loom/lower/lower.h"

namespace loom::lower {

namespace {

struct ReductionLowering {
  kir::Kernel& kernel;
  LowerContext& ctx;
  bool changed = false;

  // Reduction TensorOps under `s` (not yet lowered) that have a reduction loop ID in `loop`'s group.
  void collect(kir::Stmt* s, const kir::ForLoop* loop, std::vector<kir::TensorOp*>& found) {
    if (auto* op = s->dynCast<kir::TensorOp>()) {
      if (op->role != kir::TensorOpRole::Compute || !op->expr->isA<ir::ReductionOp>()) return;
      for (ir::IterDomain* id : op->out->loop()) {
        if (id->isReduction() && ctx.loopGroup(id) == ctx.loopGroup(loop->id)) {
          found.push_back(op);
          return;
        }
      }
    } else if (auto* f = s->dynCast<kir::ForLoop>()) {
      for (kir::Stmt* c : f->body) collect(c, loop, found);
    }
  }

  void visit(kir::Scope& scope) {
    for (size_t i = 0; i < scope.size(); ++i) {
      auto* loop = scope[i]->dynCast<kir::ForLoop>();
      if (loop == nullptr) continue;
      std::vector<kir::TensorOp*> found;
      collect(loop, loop, found);
      std::vector<kir::Stmt*> before;
      std::vector<kir::Stmt*> after;
      for (kir::TensorOp* op : found) {
        const auto* red = op->expr->as<ir::ReductionOp>();
        kir::Var* acc = kernel.newVar(op->out->dtype(), "acc");
        kir::Value* init = ctx.lowerScalar(kernel, red->init());
        before.push_back(kernel.create<kir::DeclareVar>(acc, init));
        op->role = kir::TensorOpRole::Accumulate;
        op->acc = acc;
        bool x = false, y = false, z = false;
        for (ir::IterDomain* id : op->out->loop()) {
          if (!id->isReduction()) continue;
          x |= id->parallelType() == ir::ParallelType::TIDx;
          y |= id->parallelType() == ir::ParallelType::TIDy;
          z |= id->parallelType() == ir::ParallelType::TIDz;
          LOOM_CHECK(!ir::isBlockDim(id->parallelType()), "lowering: ", op->out->toString(),
                     " reduces over ", ir::parallelTypeName(id->parallelType()),
                     "; grid reductions are not supported yet");
        }
        if (x || y || z) {
          after.push_back(kernel.create<kir::BlockReduce>(red->opType(), acc, init, x, y, z));
          kernel.blockReduceTypes.push_back(op->out->dtype());
        }
        auto* write = kernel.create<kir::TensorOp>(op->expr, op->out, kir::TensorOpRole::WriteResult);
        write->acc = acc;
        after.push_back(write);
      }
      if (!found.empty()) {
        changed = true;
        scope.insert(scope.begin() + int64_t(i) + 1, after.begin(), after.end());
        scope.insert(scope.begin() + int64_t(i), before.begin(), before.end());
        i += before.size();
        loop = scope[i]->as<kir::ForLoop>();
      }
      visit(loop->body);
    }
  }
};

}  // namespace

bool reductions(kir::Kernel& kernel, LowerContext& ctx) {
  ReductionLowering r{kernel, ctx};
  r.visit(kernel.body);
  return r.changed;
}

}  // namespace loom::lower
