// SPDX-License-Identifier: Apache-2.0
// Pass allocations: local and shared buffers for intermediates, placed inside their compute-at
// loop.
//
// A tensor inlined at position p is computed and consumed inside the loops of its loop IDs
// [0, p), so its buffer is declared in that scope (LowerContext::scopes, from the loop graph;
// p = 0: the kernel body) before the first statement computing it, and holds
// one element per iteration of its loop IDs [p, n) that each thread runs itself: reduction,
// broadcast and thread/block IDs are left out. Sizes must be constants (registers). A shared
// tensor (MemoryType::Shared) also allocates its thread-parallel IDs (one element per thread of
// the block) and gets a 16-byte aligned byte offset after the previous shared tensors; the kernel
// places them after the block-reduction scratch (Kernel::sharedTensorBytes).
//
//   before: for i0 in BIDx 0 .. 8:          after:  for i0 in BIDx 0 .. 8:
//             for i1 in 0 .. 4:                       alloc T1 : f32 local[4]
//               tensor T1 = exp(T0)                   for i1 in 0 .. 4:
//             for i2 in 0 .. 4: ...                     tensor T1 = exp(T0)
//
// A local buffer lives in the registers of the thread that computes it, so every reader of an
// element must be that thread: each thread/block-parallel loop of the tensor that its consumer
// does not share must run over the same index space (exactly mapped) on the same parallel type
// in the consumer (a block reduction over it qualifies). Anything else is a cross-thread read of
// registers, refused here rather than computed wrong.
#include <algorithm>
#include <unordered_set>

#include "loom/eval/expression_evaluator.h"
#include "loom/lower/lower.h"

namespace loom::lower {

namespace {

// The IDs without a definition that `id` is made of.
std::vector<const ir::IterDomain*> leaves(const ir::IterDomain* id) {
  std::vector<const ir::IterDomain*> out;
  std::vector<const ir::IterDomain*> work{id};
  while (!work.empty()) {
    const ir::IterDomain* x = work.back();
    work.pop_back();
    if (x->definition() == nullptr) {
      if (std::find(out.begin(), out.end(), x) == out.end()) out.push_back(x);
      continue;
    }
    for (ir::Val* in : x->definition()->inputs()) work.push_back(in->as<ir::IterDomain>());
  }
  return out;
}

// True when loop IDs `a` and `b` give every iteration the same element: exactly mapped, or
// mapped only through broadcasts that stand for size-1 dims on the other side too (a broadcast
// against the reduction of a broadcast). A broadcast resolved to a real dim on the other side
// changes what a merge with it iterates, so it does not qualify.
bool sameIndexSpace(const transform::LoopGraph& lg, const ir::IterDomain* a,
                    const ir::IterDomain* b) {
  if (lg.exact().areMapped(a, b)) return true;
  if (!lg.permissive().areMapped(a, b)) return false;
  auto sizeOne = [](const ir::IterDomain* x) {
    if (x->isBroadcast()) return !x->hasExpandedExtent();
    auto c = x->extent()->constInt();
    return c.has_value() && *c == 1;
  };
  std::vector<const ir::IterDomain*> la = leaves(a);
  std::vector<const ir::IterDomain*> lb = leaves(b);
  for (const ir::IterDomain* x : la) {
    for (const ir::IterDomain* y : lb) {
      if (lg.permissive().areMapped(x, y) && sizeOne(x) != sizeOne(y)) return false;
    }
  }
  return true;
}

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

  // See the file comment: `tv`'s elements in registers are read only by the threads that wrote
  // them.
  void checkRegisterReads(const ir::TensorView* tv) {
    const transform::LoopGraph& lg = ctx.loopGraph();
    for (const ir::Expr* use : tv->uses()) {
      if (std::find(ctx.exprs.begin(), ctx.exprs.end(), use) == ctx.exprs.end()) continue;
      auto* consumer = use->output(0)->dynCast<ir::TensorView>();
      if (consumer == nullptr) continue;
      std::vector<int64_t> path = lg.loopPath(consumer);
      for (int64_t k = tv->computeAtPosition(); k < tv->nDims(); ++k) {
        ir::IterDomain* id = tv->axis(k);
        ir::ParallelType p = id->parallelType();
        if (!ir::isThreadOrBlockDim(p) || id->isBroadcast() || id->isReduction() ||
            lg.isTrivial(lg.group(id))) {
          continue;
        }
        if (std::find(path.begin(), path.end(), lg.group(id)) != path.end()) continue;
        bool same_threads = false;
        for (ir::IterDomain* cid : consumer->loop()) {
          if (cid->parallelType() == p && sameIndexSpace(lg, id, cid)) same_threads = true;
        }
        LOOM_CHECK(same_threads, "lowering: local tensor ", tv->toString(),
                   " is held in the registers of the threads of its loop ", id->toString(), " (",
                   ir::parallelTypeName(p), "), which its consumer ", consumer->toString(),
                   " neither shares nor runs over the same index space on ",
                   ir::parallelTypeName(p),
                   ": other threads would read those registers. Inline it into its consumer past "
                   "that axis, parallelize both alike, or give it shared or global memory");
      }
    }
  }

  kir::Buffer* makeLocal(const ir::TensorView* tv) {
    kir::Buffer* b = kernel.createBuffer();
    b->tv = tv;
    b->name = tv->toString();
    b->dtype = tv->dtype();
    bool shared = tv->memoryType() == ir::MemoryType::Shared;
    if (!shared) checkRegisterReads(tv);
    b->kind = shared ? kir::BufferKind::Shared : kir::BufferKind::Local;
    int64_t size = 1;
    for (int64_t k = tv->computeAtPosition(); k < tv->nDims(); ++k) {
      ir::IterDomain* id = tv->axis(k);
      // A shared buffer holds the elements of every thread of the block, so its thread IDs are
      // allocated too; blocks have their own shared memory.
      ir::ParallelType p = id->parallelType();
      bool allocated = shared ? !ir::isBlockDim(p) : !ir::isThreadOrBlockDim(p);
      if (id->isReduction() || id->isBroadcast() || !allocated) continue;
      // Constant folding of split extents (ceilDiv(200, 128)) without any runtime binding.
      eval::ExpressionEvaluator ee;
      auto value = ee.evaluate(id->extent());
      std::optional<int64_t> extent;
      if (value && std::holds_alternative<int64_t>(*value)) extent = std::get<int64_t>(*value);
      LOOM_CHECK(extent.has_value(), "lowering: ", shared ? "shared" : "local", " tensor ",
                 tv->toString(), " axis ", k,
                 " has the symbolic extent ", id->extent()->toString(),
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
