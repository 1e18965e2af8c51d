// SPDX-License-Identifier: Apache-2.0
// Pass thread_predicates: single-writer guards for global tensors not spread over a launched
// parallel dim, and guards for parallel loops narrower than the launch.
//
// Launch dims: a kernel launches every thread/block type its loops use, each with the largest
// extent of its loops (the executor takes the max). A parallel loop of a type whose loops do not
// all have the same extent runs on `index < its own extent` only ("padded" loops).
//
// Thread predicates: a tensor whose loop domain has no ID on a launched type P is computed
// redundantly by every thread (block) along P. An ID's type is its loop's: a serial ID inlined
// into a consumer's loop on P runs on P (LowerContext::loopParallelType). A bulk copy's
// store to global memory is not guarded along the threads: its bulk loop gives each element to one
// thread of the block. Local values stay
// redundant, which is what lets every thread read them without a broadcast; a store to global
// memory is done by index 0 of P only. Reduction results reduced over P (loop ID P is a reduction)
// are left to the predicates pass, which guards their writes the same way.
//
// Grid reduction results: only the last block of a grid reduction (its `last` flag,
// LowerContext::gridResults) holds the result, so every op that reads it, directly or through
// other tensors, runs under `last` and, being in one block, is not also guarded by blockIdx == 0
// along the reduced block dims. A consumer spread over a reduced block dim made the reduction a
// grid all-reduce (reductions pass: every block holds that result). A consumer cannot combine the
// results of two grid reductions (their last blocks differ), nor, for a grid reduction inside
// serial loops (one finishing block per iteration), sit outside those loops; both are user errors
// naming the tensor.
//
//   before: for i0 in TIDx 0 .. 128:          after:  for i0 in TIDx 0 .. 128:
//             tensor T2 = mul(T0, 2.0)                  if (threadIdx.x == 0):    (T2 serial)
//                                                         tensor T2 = mul(T0, 2.0)
#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "index_compute.h"

namespace loom::lower {

namespace {

void collectParallelLoops(const kir::Scope& scope,
                          std::map<ir::ParallelType, std::set<std::string>>& extents) {
  kir::forEachStmt(scope, [&](const kir::Stmt* s) {
    auto* f = s->dynCast<kir::ForLoop>();
    if (f != nullptr && f->isParallel()) extents[f->ptype].insert(kir::toString(f->stop));
  });
}

// For each non-grid-reduction expr reading grid reduction results (transitively), the result it
// depends on, and the tensor it reads it from.
struct GridDependency {
  const LowerContext::GridResult* result = nullptr;
  const ir::TensorView* from = nullptr;
};
std::unordered_map<const ir::Expr*, GridDependency> gridConsumers(const LowerContext& ctx) {
  std::unordered_map<const ir::TensorView*, GridDependency> deps;
  for (const auto& [tv, result] : ctx.gridResults) deps[tv] = {&result, tv};
  std::unordered_map<const ir::Expr*, GridDependency> consumers;
  for (const ir::Expr* e : ctx.exprs) {
    bool grid_reduction = false;
    for (const ir::Val* out : e->outputs()) {
      grid_reduction |= out->isA<ir::TensorView>() && ctx.gridResults.count(out->as<ir::TensorView>());
    }
    GridDependency dep;
    for (const ir::Val* in : e->inputs()) {
      if (!in->isA<ir::TensorView>()) continue;
      auto it = deps.find(in->as<ir::TensorView>());
      if (it == deps.end()) continue;
      LOOM_CHECK(!grid_reduction, "lowering: ", e->output(0)->toString(),
                 " is a grid reduction of ", in->toString(), ", which depends on another grid "
                 "reduction's result; only that reduction's last block holds it (no grid broadcast)");
      LOOM_CHECK(dep.result == nullptr || dep.result->last == it->second.result->last, "lowering: ",
                 e->output(0)->toString(), " reads the results of two grid reductions (",
                 dep.from->toString(), " and ", in->toString(), "); each is held by its own last "
                 "block only: split the fusion");
      dep = {it->second.result, in->as<ir::TensorView>()};
    }
    if (dep.result == nullptr || grid_reduction) continue;
    consumers[e] = dep;
    for (const ir::Val* out : e->outputs()) {
      if (out->isA<ir::TensorView>()) deps[out->as<ir::TensorView>()] = dep;
    }
  }
  return consumers;
}

bool contains(const std::vector<ir::ParallelType>& v, ir::ParallelType p) {
  return std::find(v.begin(), v.end(), p) != v.end();
}

}  // namespace

bool threadPredicates(kir::Kernel& kernel, LowerContext& ctx) {
  std::map<ir::ParallelType, std::set<std::string>> extents;
  collectParallelLoops(kernel.body, extents);
  IndexBuilder b{kernel};
  std::unordered_map<const ir::Expr*, GridDependency> grid_consumers = gridConsumers(ctx);
  bool changed = false;
  std::vector<kir::ForLoop*> loops;
  kir::forEachWithLoops(kernel.body, loops, [&](kir::Scope& scope, size_t i,
                                           const std::vector<kir::ForLoop*>& stack) {
    auto* op = scope[i]->dynCast<kir::TensorOp>();
    if (op == nullptr) return;
    kir::Value* cond = nullptr;
    auto consumer = grid_consumers.find(op->expr);
    const LowerContext::GridResult* grid =
        consumer == grid_consumers.end() ? nullptr : consumer->second.result;
    if (grid != nullptr) {
      // A consumer spread over a reduced block dim made the reduction an all-reduce (a grid
      // broadcast, the reductions pass), whose results are not gridResults.
      for (ir::IterDomain* id : op->out->loop()) {
        LOOM_ASSERT(!contains(grid->dims, id->parallelType()) || id->isBroadcast() ||
                        id->isReduction(),
                    op->out->toString(), " reads a last-block grid reduction result and is spread "
                    "over ", ir::parallelTypeName(id->parallelType()), ", a dim it combines");
      }
      for (const kir::ForLoop* f : grid->serialLoops) {
        LOOM_CHECK(std::find(stack.begin(), stack.end(), f) != stack.end(), "lowering: ",
                   op->out->toString(), " reads the grid reduction result ",
                   consumer->second.from->toString(), " outside the serial loop of ",
                   f->id->toString(), " around that reduction; each iteration finishes in its own "
                   "last block: inline ", op->out->toString(), " into that loop (computeAt) or "
                   "split the fusion");
      }
      cond = grid->last;
    }
    for (kir::ForLoop* f : stack) {
      if (f->isParallel() && extents[f->ptype].size() > 1) {
        cond = b.logicalAnd(cond, b.lt(f->index, f->stop));
      }
    }
    auto it = ctx.buffers.find(op->out);
    bool global = it != ctx.buffers.end() && it->second->kind == kir::BufferKind::Param;
    // A bulk loop shares its iterations among every thread of the block (one writer each).
    const bool bulk = std::any_of(stack.begin(), stack.end(), [](const kir::ForLoop* f) {
      return f->ptype == ir::ParallelType::Bulk;
    });
    if (global && op->role != kir::TensorOpRole::Accumulate) {
      for (const auto& [ptype, unused] : extents) {
        // The last block of the grid reduction is the one writer along its reduced block dims.
        if (grid != nullptr && contains(grid->dims, ptype)) continue;
        if (bulk && ir::isThreadDim(ptype)) continue;
        bool spread = false;
        for (ir::IterDomain* id : op->out->loop()) {
          spread |= ctx.loopParallelType(id) == ptype && !id->isBroadcast();
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
