// SPDX-License-Identifier: Apache-2.0
// Pass thread_predicates: single-writer guards for global tensors not spread over a launched
// parallel dim, and guards for parallel loops narrower than the launch.
//
// Launch dims: a kernel launches every thread/block type its loops use, each with the largest
// extent of its loops (the executor takes the max). A parallel loop of a type whose loops do not
// all have the same extent runs on `index < its own extent` only ("padded" loops).
//
// Thread predicates: a tensor whose loop domain has no ID on a launched type P is computed
// redundantly by every thread (block) along P. Local values stay redundant, which is what lets
// every thread read them without a broadcast; a store to global memory is done by index 0 of P
// only. Reduction results reduced over P (loop ID P is a reduction) are left to the predicates
// pass, which guards their writes the same way.
//
// Grid reduction results: only the last block of a grid reduction (its `last` flag,
// LowerContext::gridLast) holds the result, so every op that reads it, directly or through other
// tensors, runs under `last` and, being in one block, is not also guarded by blockIdx.x == 0.
// Such a consumer cannot be spread over BIDx (that needs the result in every block: a grid
// broadcast), nor combine the results of two grid reductions (their last blocks differ); both are
// user errors naming the tensor.
//
//   before: for i0 in TIDx 0 .. 128:          after:  for i0 in TIDx 0 .. 128:
//             tensor T2 = mul(T0, 2.0)                  if (threadIdx.x == 0):    (T2 serial)
//                                                         tensor T2 = mul(T0, 2.0)
#include <map>
#include <set>
#include <unordered_map>

#include "index_compute.h"

namespace loom::lower {

namespace {

// "TIDx" -> "threadIdx.x", "BIDy" -> "blockIdx.y".
std::string parallelIndexName(ir::ParallelType p) {
  std::string name(ir::parallelTypeName(p));
  return std::string(ir::isThreadDim(p) ? "threadIdx." : "blockIdx.") + name.back();
}

void collectParallelLoops(const kir::Scope& scope,
                          std::map<ir::ParallelType, std::set<std::string>>& extents) {
  for (const kir::Stmt* s : scope) {
    if (auto* f = s->dynCast<kir::ForLoop>()) {
      if (f->isParallel()) extents[f->ptype].insert(kir::toString(f->stop));
      collectParallelLoops(f->body, extents);
    } else if (auto* ite = s->dynCast<kir::IfThenElse>()) {
      collectParallelLoops(ite->thenBody, extents);
      collectParallelLoops(ite->elseBody, extents);
    }
  }
}

// For each non-grid-reduction expr reading grid reduction results (transitively), the `last` flag
// of that grid reduction.
std::unordered_map<const ir::Expr*, kir::Var*> gridConsumers(const LowerContext& ctx) {
  std::unordered_map<const ir::TensorView*, kir::Var*> deps(ctx.gridLast.begin(), ctx.gridLast.end());
  std::unordered_map<const ir::Expr*, kir::Var*> consumers;
  for (const ir::Expr* e : ctx.exprs) {
    bool grid_reduction = false;
    for (const ir::Val* out : e->outputs()) {
      grid_reduction |= out->isA<ir::TensorView>() && ctx.gridLast.count(out->as<ir::TensorView>());
    }
    kir::Var* dep = nullptr;
    const ir::TensorView* from = nullptr;
    for (const ir::Val* in : e->inputs()) {
      if (!in->isA<ir::TensorView>()) continue;
      auto it = deps.find(in->as<ir::TensorView>());
      if (it == deps.end()) continue;
      LOOM_CHECK(!grid_reduction, "lowering: ", e->output(0)->toString(),
                 " is a grid reduction of ", in->toString(), ", which depends on another grid "
                 "reduction's result; only that reduction's last block holds it (no grid broadcast)");
      LOOM_CHECK(dep == nullptr || dep == it->second, "lowering: ", e->output(0)->toString(),
                 " reads the results of two grid reductions (", from->toString(), " and ",
                 in->toString(), "); each is held by its own last block only: split the fusion");
      dep = it->second;
      from = in->as<ir::TensorView>();
    }
    if (dep == nullptr || grid_reduction) continue;
    consumers[e] = dep;
    for (const ir::Val* out : e->outputs()) {
      if (out->isA<ir::TensorView>()) deps[out->as<ir::TensorView>()] = dep;
    }
  }
  return consumers;
}

}  // namespace

bool threadPredicates(kir::Kernel& kernel, LowerContext& ctx) {
  std::map<ir::ParallelType, std::set<std::string>> extents;
  collectParallelLoops(kernel.body, extents);
  IndexBuilder b{kernel};
  std::unordered_map<const ir::Expr*, kir::Var*> grid_consumers = gridConsumers(ctx);
  bool changed = false;
  std::vector<kir::ForLoop*> loops;
  forEachWithLoops(kernel.body, loops, [&](kir::Scope& scope, size_t i,
                                           const std::vector<kir::ForLoop*>& stack) {
    auto* op = scope[i]->dynCast<kir::TensorOp>();
    if (op == nullptr) return;
    kir::Value* cond = nullptr;
    auto consumer = grid_consumers.find(op->expr);
    kir::Var* last = consumer == grid_consumers.end() ? nullptr : consumer->second;
    if (last != nullptr) {
      for (ir::IterDomain* id : op->out->loop()) {
        LOOM_CHECK(id->parallelType() != ir::ParallelType::BIDx || id->isBroadcast(), "lowering: ",
                   op->out->toString(), " reads a grid reduction result and is parallelized on "
                   "BIDx (axis ", id->toString(), "); only the reduction's last block holds the "
                   "result (no grid broadcast): keep its consumers off BIDx or split the fusion");
      }
      cond = last;
    }
    for (kir::ForLoop* f : stack) {
      if (f->isParallel() && extents[f->ptype].size() > 1) {
        cond = b.logicalAnd(cond, b.lt(f->index, f->stop));
      }
    }
    auto it = ctx.buffers.find(op->out);
    bool global = it != ctx.buffers.end() && it->second->kind == kir::BufferKind::Param;
    if (global && op->role != kir::TensorOpRole::Accumulate) {
      for (const auto& [ptype, unused] : extents) {
        // The last block of the grid reduction is the one writer along BIDx.
        if (last != nullptr && ptype == ir::ParallelType::BIDx) continue;
        bool spread = false;
        for (ir::IterDomain* id : op->out->loop()) {
          spread |= id->parallelType() == ptype && !id->isBroadcast();
        }
        if (!spread) {
          auto* idx = kernel.create<kir::NamedScalar>(parallelIndexName(ptype));
          cond = b.logicalAnd(cond, b.eq(idx, kernel.constInt(0)));
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
