// SPDX-License-Identifier: Apache-2.0
// Pass allocations: local and shared buffers for intermediates, placed inside their compute-at
// loop.
//
// A tensor inlined at position p is computed and consumed inside the loops of its loop IDs
// [0, p), so its buffer is declared in that scope (LowerContext::scopes, from the loop graph;
// p = 0: the kernel body) before the first statement computing it, and holds
// one element per iteration of its loop IDs [p, n) that each thread runs itself: reduction,
// broadcast and thread/block IDs are left out. Sizes must be constants (registers). A shared
// tensor (MemoryType::Shared) also allocates its thread-parallel IDs, inside the compute-at
// position too (one element per thread of the block), and gets a 16-byte aligned byte offset after the previous shared tensors; the kernel
// places them after the block-reduction scratch (Kernel::sharedTensorBytes).
//
//   before: for i0 in BIDx 0 .. 8:          after:  for i0 in BIDx 0 .. 8:
//             for i1 in 0 .. 4:                       alloc T1 : f32 local[4]
//               tensor T1 = exp(T0)                   for i1 in 0 .. 4:
//             for i2 in 0 .. 4: ...                     tensor T1 = exp(T0)
//
// Whether the threads that read a buffer are the ones that wrote it was checked before (pass
// memory_reads).
#include <algorithm>
#include <unordered_set>

#include "loom/eval/expression_evaluator.h"
#include "loom/lower/lower.h"

namespace loom::lower {

namespace {

struct Allocator {
  kir::Kernel& kernel;
  LowerContext& ctx;
  std::unordered_set<const ir::TensorView*> done;
  bool changed = false;

  static void collectOuts(const kir::Stmt* s, std::vector<const ir::TensorView*>& outs) {
    if (auto* op = s->dynCast<kir::TensorOp>()) {
      outs.push_back(op->out);
    } else if (auto* f = s->dynCast<kir::ForLoop>()) {
      for (const kir::Stmt* c : f->body) collectOuts(c, outs);
    } else if (auto* i = s->dynCast<kir::IfThenElse>()) {
      for (const kir::Stmt* c : i->thenBody) collectOuts(c, outs);
      for (const kir::Stmt* c : i->elseBody) collectOuts(c, outs);
    }
  }

  kir::Buffer* makeLocal(const ir::TensorView* tv) {
    kir::Buffer* b = kernel.createBuffer();
    b->tv = tv;
    b->name = tv->toString();
    b->dtype = tv->dtype();
    bool shared = tv->memoryType() == ir::MemoryType::Shared;
    b->kind = shared ? kir::BufferKind::Shared : kir::BufferKind::Local;
    int64_t size = 1;
    // A shared buffer holds the elements of every thread of the block, so its thread IDs are
    // allocated too, inside the compute-at position as well (each thread of the loop is there at
    // once: leaving them out gave every thread one shared element); blocks have their own shared
    // memory.
    for (int64_t k = shared ? 0 : tv->computeAtPosition(); k < tv->nDims(); ++k) {
      ir::IterDomain* id = tv->axis(k);
      ir::ParallelType p = id->parallelType();
      const bool inlined = k < tv->computeAtPosition();
      bool allocated = shared ? (inlined ? ir::isThreadDim(p) : !ir::isBlockDim(p))
                              : !ir::isThreadOrBlockDim(p);
      if (id->isReduction() || id->isBroadcast() || !allocated) continue;
      // Constant folding of split extents (ceilDiv(200, 128)) without any runtime binding.
      eval::ExpressionEvaluator ee;
      auto value = ee.evaluate(id->extent());
      std::optional<int64_t> extent;
      if (value && std::holds_alternative<int64_t>(*value)) extent = std::get<int64_t>(*value);
      LOOM_CHECK(extent.has_value(), "lowering: ", shared ? "shared" : "local", " tensor ",
                 tv->toString(), " axis ", k, " has the symbolic extent ", id->extent()->toString(),
                 "; inline it further (computeAt) or parallelize that axis so that its local "
                 "buffer has a constant size");
      size *= *extent;
      b->allocIds.push_back(id);
    }
    b->size = kernel.constInt(size);
    if (shared) {  // 16-byte aligned slots, one per shared tensor (no reuse across lifetimes)
      b->smemOffset = kernel.sharedTensorBytes;
      int64_t bytes = size * int64_t(dataTypeSize(b->dtype));
      kernel.sharedTensorBytes += (bytes + 15) / 16 * 16;
    }
    ctx.buffers[tv] = b;
    return b;
  }

  void visit(kir::Scope& scope, const kir::ForLoop* enclosing) {
    for (size_t i = 0; i < scope.size(); ++i) {
      std::vector<const ir::TensorView*> outs;
      collectOuts(scope[i], outs);
      for (const ir::TensorView* tv : outs) {
        if (done.count(tv) || ctx.buffers.count(tv)) continue;  // params have buffers
        if (!ctx.isScopeOf(tv, enclosing)) continue;
        done.insert(tv);
        scope.insert(scope.begin() + int64_t(i), kernel.create<kir::Allocate>(makeLocal(tv)));
        ++i;
        changed = true;
      }
      if (auto* f = scope[i]->dynCast<kir::ForLoop>()) visit(f->body, f);
    }
  }
};

}  // namespace

bool allocations(kir::Kernel& kernel, LowerContext& ctx) {
  Allocator a{kernel, ctx, {}};
  a.visit(kernel.body, nullptr);
  for (const ir::Expr* e : ctx.exprs) {
    auto* tv = e->output(0)->as<ir::TensorView>();
    LOOM_ASSERT(ctx.buffers.count(tv), "no allocation scope found for ", tv->toString());
  }
  return a.changed;
}

}  // namespace loom::lower
