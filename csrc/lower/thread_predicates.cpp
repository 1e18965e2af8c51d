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
//   before: for i0 in TIDx 0 .. 128:          after:  for i0 in TIDx 0 .. 128:
//             tensor T2 = mul(T0, 2.0)                  if (threadIdx.x == 0):    (T2 serial)
//                                                         tensor T2 = mul(T0, 2.0)
#include <map>
#include <set>

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

}  // namespace

bool threadPredicates(kir::Kernel& kernel, LowerContext& ctx) {
  std::map<ir::ParallelType, std::set<std::string>> extents;
  collectParallelLoops(kernel.body, extents);
  IndexBuilder b{kernel};
  bool changed = false;
  std::vector<kir::ForLoop*> loops;
  forEachWithLoops(kernel.body, loops, [&](kir::Scope& scope, size_t i,
                                           const std::vector<kir::ForLoop*>& stack) {
    auto* op = scope[i]->dynCast<kir::TensorOp>();
    if (op == nullptr) return;
    kir::Value* cond = nullptr;
    for (kir::ForLoop* f : stack) {
      if (f->isParallel() && extents[f->ptype].size() > 1) {
        cond = b.logicalAnd(cond, b.lt(f->index, f->stop));
      }
    }
    auto it = ctx.buffers.find(op->out);
    bool global = it != ctx.buffers.end() && it->second->kind == kir::BufferKind::Param;
    if (global && op->role != kir::TensorOpRole::Accumulate) {
      for (const auto& [ptype, unused] : extents) {
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
