// SPDX-License-Identifier: Apache-2.0
// Pass reductions: a ReductionOp's or WelfordOp's TensorOp becomes accumulator declaration,
// accumulation and result write, with block and grid reductions over parallel reduction IDs.
//
// The outermost loop of a reduction ID (serial or parallel) in the op's enclosing loops is the
// reduction nest R. Before R: `var acc = init` (Welford: the triple avg, m2, n); inside R the
// TensorOp accumulates; after R, in this order:
//  * a block reduction over the TIDx/TIDy/TIDz reduction IDs (an all-reduce: every thread of the
//    group holds the result);
//  * a grid reduction when reduction IDs are on block dims (any of BIDx/BIDy/BIDz): every block
//    leaves its partial in a work buffer (kir::Kernel::gridScratch, allocated by the executor, one
//    per call site) and the last block of each segment (the blocks agreeing on the other block
//    dims) combines them; `last` says which block that is;
//  * the result write(s) `T2 <- acc`, inside `if last` for grid reductions (the predicates pass
//    adds threadIdx == 0 for reduced thread dims of parameters). Welford writes each sibling
//    output that is used or a fusion output.
//
// `last` is declared at the top of the kernel and recorded in LowerContext::gridResults for every
// output of the grid reduction: only the last block holds the result, so thread_predicates guards
// every consumer of it by `last`. Blocks never wait for each other, so a grid reduction inside a
// serial loop would let a fast block overwrite its partial of one iteration (and count itself in
// again) before the last block has read it: each iteration is an "entrance" with its own slice of
// the scratch (GridReduce::entrance), which needs the loops' trip counts to be constants; each
// iteration may finish in a different block, so consumers must sit in the same iteration.
//
// A grid broadcast: when a tensor computed from the result (the result itself included) is
// spread over a block dim the reduction combines (an outer-persistent normalization's
// `x - mean` over the blocks holding x), every block needs the result. The GridReduce is then an
// all-reduce (GridReduce::all: a grid barrier, every block combines the partials itself), the
// kernel is cooperative (kir::Kernel::cooperative), and the result is held everywhere, so it is
// not a gridResults entry; a write of it to global memory is done by block 0 of the reduced dims
// (the predicates pass, LowerContext::gridAllReduced).
//
//   before: for i0 in BIDx 0 .. 8:              after:  for i0 in BIDx 0 .. 8:
//             for i1 in TIDx 0 .. 128:                    var acc2 : f32 = 0
//               tensor T1 = sum(T0)                       for i1 in TIDx 0 .. 128:
//                                                           acc2 += T1 = sum(T0)
//                                                         acc2 = block_sum(acc2, init=0, dims=x)
//                                                         T1 <- acc2 of T1 = sum(T0)
#include <algorithm>
#include <unordered_set>

#include "loom/ir/exprs.h"
#include "loom/lower/kir_walk.h"
#include "loom/lower/lower.h"
#include "index_compute.h"
#include "welford.h"

namespace loom::lower {

namespace {

// A ReductionOp whose output keeps iteration loop IDs inside its reduction loops (an rFactor
// producer [.., S(r), v(i)] of a vectorized outer reduction: one partial per vector lane) cannot use
// one scalar accumulator. When all its reduction loops are serial (no block or grid step), it
// accumulates in its own local buffer instead: the buffer is set to the init value by a copy of
// the inner iteration loops placed before the outermost reduction loop (a WriteResult of a
// variable holding the init), and the op becomes an Accumulate without accumulator variable
// (indexing: out[i] = out[i] op in[i]). The reductions pass leaves it alone (not Compute).
//
//   for i3 in 0 .. S:                    var init4 = 0
//     for i4 in Vectorize 0 .. 4:        for i5 in 0 .. 4:
//       tensor T2 = sum(T1)                T2 <- init4 of T2 = sum(T1)
//                                        for i3 in 0 .. S:
//                                          for i4 in 0 .. 4:
//                                            T2 += T2 = sum(T1)
struct InBufferReductions {
  kir::Kernel& kernel;
  LowerContext& ctx;

  bool applies(const kir::TensorOp* op) const {
    if (!op->expr->isA<ir::ReductionOp>() || op->out->isFusionOutput()) return false;
    bool in_reduction = false, inner_iteration = false;
    for (ir::IterDomain* id : op->out->loop()) {
      ir::ParallelType p = ctx.loopParallelType(id);
      if (id->isReduction()) {
        if (ir::isThreadOrBlockDim(p)) return false;  // block/grid steps need the accumulator
        in_reduction = true;
      } else if (in_reduction && !id->isBroadcast()) {
        // A thread dim inside the serial reduction loops is fine: each thread keeps its own
        // partials (the inner-outer-persistent scheduler's [BIDx, S(r), pb, TIDx, v]: a thread's
        // columns summed over the block's rows). A block dim there would need the blocks'
        // partials in one buffer.
        if (ir::isBlockDim(p)) return false;
        inner_iteration = true;
      }
    }
    return inner_iteration;
  }

  // Rewrites `op`, enclosed by `loops`; returns the statements to insert before loop `first`.
  void rewrite(kir::TensorOp* op, const std::vector<kir::ForLoop*>& loops, size_t first,
               std::vector<kir::Stmt*>& init) {
    const auto* red = op->expr->as<ir::ReductionOp>();
    kir::Var* value = kernel.newVar(op->out->dtype(), "init");
    init.push_back(kernel.create<kir::DeclareVar>(value, ctx.lowerScalar(kernel, red->init())));
    kir::Scope* scope = &init;
    for (size_t k = first; k < loops.size(); ++k) {
      kir::ForLoop* l = loops[k];
      bool iteration = false;
      for (ir::IterDomain* id : op->out->loop()) {
        iteration |= !id->isReduction() && ctx.loopGroup(id) == ctx.loopGroup(l->id);
      }
      if (!iteration) continue;
      auto* copy = kernel.create<kir::ForLoop>(kernel.newVar(kIndexType, "i"), l->start, l->stop,
                                               l->ptype == ir::ParallelType::Vectorize
                                                   ? ir::ParallelType::Serial
                                                   : l->ptype,
                                               l->id);
      copy->sharedBy = l->sharedBy;
      scope->push_back(copy);
      scope = &copy->body;
    }
    auto* write = kernel.create<kir::TensorOp>(op->expr, op->out, kir::TensorOpRole::WriteResult);
    write->acc = value;
    scope->push_back(write);
    op->role = kir::TensorOpRole::Accumulate;
  }

  // Returns true when something was rewritten under `scope`.
  bool visit(kir::Scope& scope) {
    bool changed = false;
    std::vector<kir::ForLoop*> loops;
    kir::forEachWithLoops(scope, loops, [&](kir::Scope& stmts, size_t i,
                                       const std::vector<kir::ForLoop*>& around) {
      auto* op = stmts[i]->dynCast<kir::TensorOp>();
      if (op == nullptr || op->role != kir::TensorOpRole::Compute || !applies(op)) return;
      size_t first = around.size();
      for (size_t k = 0; k < around.size() && first == around.size(); ++k) {
        for (ir::IterDomain* id : op->out->loop()) {
          if (id->isReduction() && ctx.loopGroup(id) == ctx.loopGroup(around[k]->id)) first = k;
        }
      }
      LOOM_ASSERT(first < around.size(), "no reduction loop around ", op->out->toString());
      std::vector<kir::Stmt*> init;
      rewrite(op, around, first, init);
      kir::Scope& parent = first == 0 ? pending_root : around[first - 1]->body;
      pending.push_back({&parent, around[first], std::move(init)});
      changed = true;
    });
    return changed;
  }

  // Insertions are done after the walk so that scopes being walked do not shift.
  struct Insertion {
    kir::Scope* scope;
    kir::ForLoop* before;
    std::vector<kir::Stmt*> stmts;
  };
  std::vector<Insertion> pending;
  kir::Scope pending_root;  // placeholder for the kernel body (replaced in run)

  bool run() {
    bool changed = visit(kernel.body);
    for (Insertion& ins : pending) {
      kir::Scope& scope = ins.scope == &pending_root ? kernel.body : *ins.scope;
      auto it = std::find(scope.begin(), scope.end(), ins.before);
      LOOM_ASSERT(it != scope.end(), "reduction loop not found in its parent scope");
      scope.insert(it, ins.stmts.begin(), ins.stmts.end());
    }
    return changed;
  }
};

struct ReductionLowering {
  kir::Kernel& kernel;
  LowerContext& ctx;
  bool changed = false;
  int64_t grid_sites = 0;

  static bool isReduction(const ir::Expr* e) {
    return e->isA<ir::ReductionOp>() || e->isA<ir::WelfordOp>();
  }

  // A local buffer for a used Welford sibling that is not a parameter, declared at the top of its
  // compute-at loop like the allocations pass does (which only sees output 0 of each expr).
  kir::Buffer* makeSiblingBuffer(const ir::TensorView* sib) {
    kir::Buffer* b = kernel.createBuffer();
    b->tv = sib;
    b->name = sib->toString();
    b->dtype = sib->dtype();
    b->kind = kir::BufferKind::Local;
    int64_t size = 1;
    for (int64_t k = sib->computeAtPosition(); k < sib->nDims(); ++k) {
      ir::IterDomain* id = sib->axis(k);
      if (id->isReduction() || id->isBroadcast() ||
          ir::isThreadOrBlockDim(ctx.loopParallelType(id))) {
        continue;
      }
      auto* c = ctx.lowerScalar(kernel, id->extent())->dynCast<kir::Const>();
      LOOM_CHECK(c && c->asInt(), "lowering: local Welford output ", sib->toString(), " axis ", k,
                 " has a symbolic extent; inline it further (computeAt) or parallelize that axis");
      size *= *c->asInt();
      b->allocIds.push_back(id);
    }
    b->size = kernel.constInt(size);
    ctx.buffers[sib] = b;
    return b;
  }
  // Declares `sib`'s buffer at the top of its compute-at loop's body (the kernel body at 0).
  bool allocateSibling(kir::Scope& body, const ir::TensorView* sib) {
    auto scope = ctx.scopes.find(sib);
    if (scope == ctx.scopes.end()) return false;
    kir::Scope* target = scope->second == nullptr ? &body : nullptr;
    kir::forEachStmt(body, [&](const kir::Stmt* s) {
      if (s == scope->second) target = &scope->second->body;
    });
    if (target == nullptr) return false;
    target->insert(target->begin(), kernel.create<kir::Allocate>(makeSiblingBuffer(sib)));
    return true;
  }

  // How many times one grid-reduction call site is reached per launch: the product of the
  // constant trip counts of the serial loops around it, times the extents (ir Scalars the
  // executor evaluates at launch, kir::Kernel::GridScratch) of the others.
  struct Entrances {
    int64_t constant = 1;
    std::vector<const ir::Scalar*> symbolic;
  };

  // An all-reduce's second buffer is the two gridSync words (once per launch).
  int64_t addGridScratch(const std::string& ctype, int64_t bytes, const Entrances& entrances,
                         bool all) {
    int64_t site = grid_sites++;
    kernel.gridScratch.push_back({"gw" + std::to_string(site), ctype, bytes, false,
                                  entrances.constant, false, entrances.symbolic});
    if (all) {
      kernel.gridScratch.push_back({"gs" + std::to_string(site), "unsigned", 8, true, 1, true});
    } else {
      kernel.gridScratch.push_back({"gs" + std::to_string(site), "unsigned", 4, true,
                                    entrances.constant, false, entrances.symbolic});
    }
    return site;
  }

  std::vector<kir::Stmt*> top{};  // `last` declarations, inserted at the kernel's top at the end

  // True when a tensor computed from `out` (or `out` itself) has a non-broadcast loop ID on one
  // of `dims`, the block dims a grid reduction of `out` combines: a grid broadcast.
  bool gridBroadcast(const ir::TensorView* out, const std::vector<ir::ParallelType>& dims) const {
    std::unordered_set<const ir::TensorView*> reached{out};
    auto spread = [&](const ir::TensorView* tv) {
      for (ir::IterDomain* id : tv->loop()) {
        if (id->isBroadcast() || id->isReduction()) continue;
        if (std::find(dims.begin(), dims.end(), id->parallelType()) != dims.end()) return true;
      }
      return false;
    };
    for (const ir::Expr* e : ctx.exprs) {
      bool reads = false;
      for (const ir::Val* in : e->inputs()) {
        reads |= in->isA<ir::TensorView>() && reached.count(in->as<ir::TensorView>()) != 0;
      }
      if (!reads) continue;
      for (const ir::Val* o : e->outputs()) {
        if (!o->isA<ir::TensorView>()) continue;
        if (spread(o->as<ir::TensorView>())) return true;
        reached.insert(o->as<ir::TensorView>());
      }
    }
    return false;
  }

  // The serial loops around a grid reduction of `out`: each iteration reaches the call site once
  // (an "entrance" with its own slice of the scratch). Returns the loops (but those of one
  // iteration) and sets `entrances`.
  std::vector<const kir::ForLoop*> entranceLoops(const ir::TensorView* out,
                                                 const std::vector<kir::ForLoop*>& enclosing,
                                                 Entrances& entrances) {
    std::vector<const kir::ForLoop*> loops;
    entrances = {};
    for (const kir::ForLoop* f : enclosing) {
      if (f->isParallel()) continue;
      auto* start = f->start->dynCast<kir::Const>();
      LOOM_ASSERT(start != nullptr && start->asInt() == 0, "lowering: the serial loop of ",
                  f->id->toString(), " around the grid reduction of ", out->toString(),
                  " does not start at 0");
      auto* stop = f->stop->dynCast<kir::Const>();
      if (stop == nullptr || !stop->asInt().has_value()) {
        entrances.symbolic.push_back(f->id->extent());  // the loop's stop (loop_nests.cpp)
      } else if (*stop->asInt() == 1) {
        continue;
      } else {
        entrances.constant *= *stop->asInt();
      }
      loops.push_back(f);
    }
    return loops;
  }

  // The linear iteration number of `loops` (outermost first): ((i0 * n1) + i1) * n2 + i2 ...
  kir::Value* entranceIndex(const std::vector<const kir::ForLoop*>& loops) {
    IndexBuilder b{kernel};
    kir::Value* e = nullptr;
    for (const kir::ForLoop* f : loops) e = e == nullptr ? f->index : b.add(b.mul(e, f->stop), f->index);
    return e;
  }

  void lower(kir::TensorOp* op, const std::vector<kir::ForLoop*>& enclosing,
             std::vector<kir::Stmt*>& before, std::vector<kir::Stmt*>& after) {
    bool x = false, y = false, z = false;
    bool bx = false, by = false, bz = false;
    std::vector<ir::ParallelType> grid_dims;
    for (ir::IterDomain* id : op->out->loop()) {
      if (!id->isReduction()) continue;
      ir::ParallelType p = ctx.loopParallelType(id);
      x |= p == ir::ParallelType::TIDx;
      y |= p == ir::ParallelType::TIDy;
      z |= p == ir::ParallelType::TIDz;
      bx |= p == ir::ParallelType::BIDx;
      by |= p == ir::ParallelType::BIDy;
      bz |= p == ir::ParallelType::BIDz;
      if (ir::isBlockDim(p)) grid_dims.push_back(p);
    }
    const bool grid = bx || by || bz;
    kir::Var* last = nullptr;
    Entrances entrances;
    kir::Value* entrance = nullptr;
    bool all = false;
    if (grid) {
      std::vector<const kir::ForLoop*> loops = entranceLoops(op->out, enclosing, entrances);
      entrance = entranceIndex(loops);
      last = kernel.newVar(DataType::Bool, "last");
      top.push_back(kernel.create<kir::DeclareVar>(last, kernel.constBool(false)));
      for (size_t k = 0; k < op->expr->outputs().size(); ++k) {
        all |= gridBroadcast(op->expr->output(k)->as<ir::TensorView>(), grid_dims);
      }
      for (size_t k = 0; k < op->expr->outputs().size(); ++k) {
        auto* tv = op->expr->output(k)->as<ir::TensorView>();
        if (all) {
          ctx.gridAllReduced[tv] = grid_dims;
        } else {
          ctx.gridResults[tv] = {last, grid_dims, loops};
        }
      }
      kernel.cooperative |= all;
    }
    // A GridReduce over this op's reduced block dims, for its entrance.
    auto gridReduce = [&](ir::ReductionOpType type, kir::Var* acc, kir::Value* init,
                          const std::string& ctype, int64_t bytes) {
      auto* g = kernel.create<kir::GridReduce>(type, acc, init, last,
                                               addGridScratch(ctype, bytes, entrances, all));
      g->all = all;
      g->x = bx;
      g->y = by;
      g->z = bz;
      g->entrance = entrance;
      return g;
    };
    std::vector<std::pair<const ir::TensorView*, kir::Var*>> results;
    if (op->expr->isA<ir::WelfordOp>()) {
      const auto* w = op->expr->as<ir::WelfordOp>();
      kir::Var* avg = kernel.newVar(w->outAvg()->dtype(), "avg");
      kir::Var* m2 = kernel.newVar(w->outM2()->dtype(), "m2_");
      kir::Var* n = kernel.newVar(w->outN()->dtype(), "n");
      before.push_back(kernel.create<kir::DeclareVar>(avg, ctx.lowerScalar(kernel, w->initAvg())));
      before.push_back(kernel.create<kir::DeclareVar>(m2, ctx.lowerScalar(kernel, w->initM2())));
      before.push_back(kernel.create<kir::DeclareVar>(n, ctx.lowerScalar(kernel, w->initN())));
      op->acc = avg;
      op->m2 = m2;
      op->n = n;
      int64_t bytes = welfordBytes(avg->dtype(), n->dtype());
      if (x || y || z) {
        auto* b = kernel.create<kir::Welford>(kir::WelfordMode::Block, avg, m2, n);
        b->x = x;
        b->y = y;
        b->z = z;
        after.push_back(b);
        kernel.blockReduceTypes.push_back(avg->dtype());
        kernel.blockReduceBytes = std::max(kernel.blockReduceBytes, bytes);
      }
      if (grid) {
        std::string ctype = "loom::Welford<" + scratchCType(avg->dtype()) + ", " +
                            scratchCType(n->dtype()) + ">";
        kir::GridReduce* g = gridReduce(ir::ReductionOpType::Sum, nullptr, nullptr, ctype, bytes);
        g->welford[0] = avg;
        g->welford[1] = m2;
        g->welford[2] = n;
        after.push_back(g);
      }
      kir::Var* vars[3] = {avg, m2, n};
      for (int k = 0; k < 3; ++k) {
        auto* tv = op->expr->output(size_t(k))->as<ir::TensorView>();
        if (!tv->isFusionOutput() && tv->uses().empty()) continue;
        results.push_back({tv, vars[k]});
      }
    } else {
      const auto* red = op->expr->as<ir::ReductionOp>();
      // 16-bit results accumulate in f32: block and grid scratch hold f32 partials, max/min stay
      // exact and sums lose nothing to 16-bit rounding between steps.
      kir::Var* acc = kernel.newVar(accumulatorType(op->out->dtype()), "acc");
      kir::Value* init = ctx.lowerScalar(kernel, red->init());
      before.push_back(kernel.create<kir::DeclareVar>(acc, init));
      op->acc = acc;
      if (x || y || z) {
        after.push_back(kernel.create<kir::BlockReduce>(red->opType(), acc, init, x, y, z));
        kernel.blockReduceTypes.push_back(acc->dtype());
      }
      if (grid) {
        DataType dt = acc->dtype();
        after.push_back(gridReduce(red->opType(), acc, init, scratchCType(dt),
                                   int64_t(dataTypeSize(dt))));
      }
      results.push_back({op->out, acc});
    }
    op->role = kir::TensorOpRole::Accumulate;
    kir::Scope writes;
    for (auto [tv, var] : results) {
      LOOM_ASSERT(ctx.buffers.count(tv), "no buffer for Welford output ", tv->toString());
      auto* write = kernel.create<kir::TensorOp>(op->expr, tv, kir::TensorOpRole::WriteResult);
      write->acc = var;
      writes.push_back(write);
    }
    if (grid && !all) {
      // Only the block that finished the grid reduction holds the result.
      auto* ite = kernel.create<kir::IfThenElse>(last);
      ite->thenBody = std::move(writes);
      after.push_back(ite);
    } else {
      after.insert(after.end(), writes.begin(), writes.end());
    }
  }

  // Each reduction op is lowered at the outermost loop around it whose group is one of its
  // reduction loop IDs': its accumulator declared before that loop, its block/grid steps and
  // writes after it. Loops are taken outermost first (a pre-order), their ops in program order.
  void visit(kir::Scope& body) {
    struct Site {
      kir::ForLoop* loop;
      kir::Scope* parent;
      std::vector<kir::ForLoop*> enclosing;  ///< the loops around `loop`
      std::vector<kir::TensorOp*> ops;
    };
    std::vector<Site> sites;
    std::unordered_map<const kir::ForLoop*, size_t> site_of;
    std::unordered_map<const kir::ForLoop*, size_t> preorder;  ///< loop -> its pre-order number
    // The scope holding each loop.
    const std::unordered_map<const kir::ForLoop*, kir::Scope*> parent_of =
        kir::loopParents(body);
    // Pre-order numbers of the loops: sites are lowered outermost first.
    size_t next_loop = 0;
    kir::forEachStmt(body, [&](const kir::Stmt* s) {
      if (auto* f = s->dynCast<kir::ForLoop>()) preorder[f] = next_loop++;
    });
    std::vector<kir::ForLoop*> loops;
    kir::forEachWithLoops(body, loops, [&](kir::Scope& stmts, size_t i,
                                      const std::vector<kir::ForLoop*>& around) {
      auto* op = stmts[i]->dynCast<kir::TensorOp>();
      if (op == nullptr || op->role != kir::TensorOpRole::Compute || !isReduction(op->expr)) return;
      for (size_t k = 0; k < around.size(); ++k) {
        bool reduces = false;
        for (ir::IterDomain* id : op->out->loop()) {
          reduces |= id->isReduction() && ctx.loopGroup(id) == ctx.loopGroup(around[k]->id);
        }
        if (!reduces) continue;
        auto [it, fresh] = site_of.emplace(around[k], sites.size());
        if (fresh) {
          sites.push_back({around[k], parent_of.at(around[k]),
                           std::vector<kir::ForLoop*>(around.begin(), around.begin() + int64_t(k)),
                           {}});
        }
        sites[it->second].ops.push_back(op);
        return;
      }
    });
    std::stable_sort(sites.begin(), sites.end(), [&](const Site& a, const Site& b) {
      return preorder.at(a.loop) < preorder.at(b.loop);
    });
    for (Site& site : sites) {
      std::vector<kir::Stmt*> before;
      std::vector<kir::Stmt*> after;
      for (kir::TensorOp* op : site.ops) lower(op, site.enclosing, before, after);
      kir::Scope& scope = *site.parent;
      auto at = std::find(scope.begin(), scope.end(), site.loop);
      LOOM_ASSERT(at != scope.end(), "reduction loop not found in its parent scope");
      const int64_t pos = at - scope.begin();
      scope.insert(scope.begin() + pos + 1, after.begin(), after.end());
      scope.insert(scope.begin() + pos, before.begin(), before.end());
      changed = true;
    }
  }
};

}  // namespace

bool reductions(kir::Kernel& kernel, LowerContext& ctx) {
  ReductionLowering r{kernel, ctx};
  // Local buffers of used Welford siblings first (the allocations pass placed output 0's only),
  // so that later insertions do not move statements under the visit below.
  for (const ir::Expr* e : ctx.exprs) {
    if (!e->isA<ir::WelfordOp>()) continue;
    for (size_t k = 1; k < 3; ++k) {
      auto* tv = e->output(k)->as<ir::TensorView>();
      if (ctx.buffers.count(tv) || (!tv->isFusionOutput() && tv->uses().empty())) continue;
      r.allocateSibling(kernel.body, tv);
    }
  }
  // Vectorized outer reductions accumulate in their own buffer first (they are not Compute
  // afterwards, so the visit below leaves them alone).
  InBufferReductions in_buffer{kernel, ctx, {}, {}};
  r.changed |= in_buffer.run();
  r.visit(kernel.body);
  kernel.body.insert(kernel.body.begin(), r.top.begin(), r.top.end());
  return r.changed;
}

}  // namespace loom::lower
