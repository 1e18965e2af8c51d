// SPDX-License-Identifier: Apache-2.0
// Pass memory_reads: every intermediate's memory type against the parallel types that write and
// read it. Nothing is emitted; a schedule whose reads the kernel cannot order is a UserError
// naming the tensor, its consumer and the loop, raised before any kernel text exists.
//
// Who sees a written element, and what orders the write before the read:
//   local   the thread that wrote it (registers), program order. Every thread/block-parallel loop
//           of the producer that its consumer does not share must run over the same index space
//           on the same parallel type in the consumer.
//   shared  the threads of the writing block; the syncs pass places the block barriers. Every
//           block-parallel loop of the producer must be shared or matched by the consumer.
//   global  every thread of every block, but a kernel has no grid-wide barrier: only the block
//           that wrote an element may read it. As for shared, plus: a producer with no loop on a
//           block dim P the kernel launches (a broadcast loop ID on P does not count) is written
//           by the blocks with P index 0 only (the thread_predicates guard), so it may not be
//           read by any block along P; unless P is reduced by a grid reduction the tensor is
//           computed from: then it and its readers run in the last block of that reduction only.
//           Nor may it be inlined into block-parallel loops over a larger space than its own (a
//           merged broadcast resolved by the consumer): its writes are masked to the iterations
//           that map onto its elements, which other blocks read.
// A global tensor read only by later kernels (outputs, segment boundaries) has no consumer here.
//
//   T1 : f32 global [i0{8, BIDx}, i1{128, TIDx}]       T2 = sum over i0 of T1 in every block:
//   T2 : f32 global [r2{8}, i3{128, TIDx}]             block 0 would read rows blocks 1-7 have
//                                                     not written yet -> UserError
#include <algorithm>
#include <set>
#include <unordered_map>

#include "loom/lower/lower.h"

namespace loom::lower {

namespace {

// Block dims the kernel runs more than one block on: those of any loop ID of a tensor it touches.
std::set<ir::ParallelType> launchedBlockDims(const LowerContext& ctx) {
  std::set<ir::ParallelType> dims;
  auto add = [&](const ir::TensorView* tv) {
    for (const ir::IterDomain* id : tv->loop()) {
      if (!ir::isBlockDim(id->parallelType())) continue;
      auto extent = id->extent()->constInt();
      if (!extent.has_value() || *extent > 1) dims.insert(id->parallelType());
    }
  };
  for (const ir::Expr* e : ctx.exprs) {
    for (ir::Val* v : e->inputs()) {
      if (auto* tv = v->dynCast<ir::TensorView>()) add(tv);
    }
    for (ir::Val* v : e->outputs()) add(v->as<ir::TensorView>());
  }
  return dims;
}

// Per tensor, the block dims some grid reduction it is computed from (in this kernel, itself
// included) reduces over: such a tensor is computed in that reduction's last block only, and so
// is every reader of it (thread_predicates guards them all by `last`).
std::unordered_map<const ir::TensorView*, std::set<ir::ParallelType>> gridReducedDims(
    const LowerContext& ctx) {
  std::unordered_map<const ir::TensorView*, std::set<ir::ParallelType>> dims;
  for (const ir::Expr* e : ctx.exprs) {
    std::set<ir::ParallelType> d;
    for (ir::Val* v : e->inputs()) {
      auto* in = v->dynCast<ir::TensorView>();
      if (in == nullptr) continue;
      auto it = dims.find(in);
      if (it != dims.end()) d.insert(it->second.begin(), it->second.end());
    }
    for (ir::Val* v : e->outputs()) {
      auto* out = v->as<ir::TensorView>();
      std::set<ir::ParallelType> mine = d;
      for (const ir::IterDomain* id : out->loop()) {
        if (id->isReduction() && ir::isBlockDim(id->parallelType())) {
          mine.insert(id->parallelType());
        }
      }
      dims[out] = std::move(mine);
    }
  }
  return dims;
}

// True when `tv` is spread over `p` as thread_predicates counts it: a broadcast loop ID on `p`
// does not spread it, so its global writes are left to the blocks with index 0 on `p`.
bool spreadOver(const LowerContext& ctx, const ir::TensorView* tv, ir::ParallelType p) {
  const auto& loop = tv->loop();
  return std::any_of(loop.begin(), loop.end(), [&ctx, p](const ir::IterDomain* id) {
    return ctx.loopParallelType(id) == p && !id->isBroadcast();
  });
}

void checkRead(const LowerContext& ctx, const std::set<ir::ParallelType>& launched,
               const std::set<ir::ParallelType>& grid_reduced, const ir::TensorView* tv,
               const ir::TensorView* consumer) {
  const transform::LoopGraph& lg = ctx.loopGraph();
  switch (tv->memoryType()) {
    case ir::MemoryType::Local: {
      const ir::IterDomain* id = lg.registersReadAcrossThreads(tv, consumer);
      if (id == nullptr) return;
      std::string_view p = ir::parallelTypeName(id->parallelType());
      LOOM_THROW("lowering: local tensor ", tv->toString(),
                 " is held in the registers of the threads of its loop ", id->toString(), " (",
                 p, "), which its consumer ", consumer->toString(),
                 " neither shares nor runs over the same index space on ", p,
                 ": other threads would read those registers. Inline it into its consumer past "
                 "that axis, parallelize both alike, or give it shared or global memory");
    }
    case ir::MemoryType::Shared: {
      const ir::IterDomain* id = lg.readAcrossBlocks(tv, consumer);
      if (id == nullptr) return;
      std::string_view p = ir::parallelTypeName(id->parallelType());
      LOOM_THROW("lowering: shared tensor ", tv->toString(),
                 " is held in the shared memory of the blocks of its loop ", id->toString(), " (",
                 p, "), which its consumer ", consumer->toString(),
                 " neither shares nor runs over the same index space on ", p,
                 ": other blocks would read that memory. Parallelize both alike or give it "
                 "global memory in a kernel of its own");
    }
    case ir::MemoryType::Global: {
      // Inlined into block-parallel loops over a larger space than its own (a broadcast merged
      // into them and resolved by the consumer), it is written only by the iterations that map
      // onto its elements, which need not be the reading blocks.
      for (const ir::IterDomain* id : tv->loop()) {
        const ir::ParallelType p = ctx.loopParallelType(id);
        if (!ir::isBlockDim(p) || lg.isExactlyPromoted(id)) continue;
        LOOM_THROW("lowering: global tensor ", tv->toString(), " runs in the loop of ",
                   lg.promoted(id)->toString(), " (", ir::parallelTypeName(p),
                   "), a larger space than its own axis ", id->toString(),
                   ": only the blocks whose iterations map onto its elements write them, and ",
                   consumer->toString(), " reads them in the same kernel from other blocks (a "
                   "kernel has no grid-wide barrier). Keep it local or shared, or compute them "
                   "in separate kernels");
      }
      if (const ir::IterDomain* id = lg.readAcrossBlocks(tv, consumer)) {
        std::string_view p = ir::parallelTypeName(id->parallelType());
        LOOM_THROW("lowering: global tensor ", tv->toString(),
                   " is written by the blocks of its loop ", id->toString(), " (", p,
                   ") and read in the same kernel by ", consumer->toString(),
                   ", which neither shares that loop nor runs over the same index space on ", p,
                   ": blocks would read elements other blocks write, and a kernel has no "
                   "grid-wide barrier. Parallelize both alike, or compute them in separate "
                   "kernels");
      }
      for (ir::ParallelType p : launched) {
        if (spreadOver(ctx, tv, p) || grid_reduced.count(p)) continue;
        LOOM_THROW("lowering: global tensor ", tv->toString(), " is not spread over ",
                   ir::parallelTypeName(p), " (no loop ID of it but a broadcast is on ",
                   ir::parallelTypeName(p),
                   "), which the kernel launches, so only the blocks with index 0 on it write "
                   "it; ", consumer->toString(), " reads it in the same kernel, where other "
                   "blocks would read it before it is written (a kernel has no grid-wide "
                   "barrier). Parallelize it on ",
                   ir::parallelTypeName(p), " too, or compute them in separate kernels");
      }
      return;
    }
  }
}

}  // namespace

bool memoryReads(kir::Kernel& /*kernel*/, LowerContext& ctx) {
  const std::set<ir::ParallelType> launched = launchedBlockDims(ctx);
  const auto grid_reduced = gridReducedDims(ctx);
  for (const ir::Expr* e : ctx.exprs) {
    for (ir::Val* out : e->outputs()) {
      const auto* tv = out->as<ir::TensorView>();
      const std::set<ir::ParallelType>& reduced = grid_reduced.at(tv);
      for (const ir::Expr* use : tv->uses()) {
        if (std::find(ctx.exprs.begin(), ctx.exprs.end(), use) == ctx.exprs.end()) continue;
        for (ir::Val* read_by : use->outputs()) {
          if (auto* consumer = read_by->dynCast<ir::TensorView>()) {
            checkRead(ctx, launched, reduced, tv, consumer);
          }
        }
      }
    }
  }
  return false;
}

}  // namespace loom::lower
