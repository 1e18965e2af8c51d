// SPDX-License-Identifier: Apache-2.0
// Pass sorts: an ArgsortOp's or TopKOp's TensorOp leaves the loop of its sort dim, so that the
// indexing pass makes it one call that sorts the whole row (kir::SortRow, runtime sort.cuh).
//
// The sort loop is the loop of the output's sort ID (ArgsortOp::sortId / TopKOp::sortId), which
// must be a loop ID of its own (not split or merged), serial, the innermost loop around the op,
// and hold the op alone: a producer computed in it would give the sort one element at a time, a
// consumer in it would see the row before it is sorted. The loop goes; the TensorOp takes its
// place. A sort along a broadcast ID (no loop) sorts rows of one element where it stands.
//
//   before: for i0 in BIDx 0 .. 4:           after:  for i0 in BIDx 0 .. 4:
//             for i1 in 0 .. 100:                       tensor T1 = argsort(T0)
//               tensor T1 = argsort(T0)
//   indexing: T1[(i0 * 100) : step 1] = argsort_row(T0[(i0 * T0.stride[0]) : step T0.stride[1]],
//             n=T0.size[1], descending=false)
//
// A block-wide sort (the op's blockRow() > 0, the sort scheduler's choice for rows that fit in
// shared memory) has its sort ID split by the block's threads, the inner piece on TIDx: the op
// takes the place of the outer (serial) loop and the TIDx loop inside it, so that every thread
// of the block makes the one row call (runtime sort.cuh, argsortRowBlock / topkRowBlock), and the
// kernel reserves blockRow() keys and indices in its shared tensors.
//
//   before: for i0 in BIDx 0 .. 4:           after:  for i0 in BIDx 0 .. 4:
//             for i1 in 0 .. ceilDiv(100, 64):          tensor T1 = argsort(T0)
//               for i2 in TIDx 0 .. 64:
//                 tensor T1 = argsort(T0)
#include "sorts.h"

#include <algorithm>

#include "loom/ir/exprs.h"
#include "loom/ir/transforms.h"
#include "loom/lower/kir_walk.h"
#include "loom/lower/lower.h"
#include "row_loop.h"

namespace loom::lower {

namespace {

ir::IterDomain* sortIdOf(const ir::Expr* e) {
  if (const auto* a = e->dynCast<ir::ArgsortOp>()) return a->sortId();
  return e->as<ir::TopKOp>()->sortId();
}

struct Move {
  kir::Scope* scope;  ///< holds the loop
  kir::ForLoop* loop;
  kir::TensorOp* op;
};

// The loops of a block-wide sort: the sort ID split into [serial, TIDx], the two innermost loops
// around the op, holding it alone. Returns the outer one; a UserError names what differs.
kir::ForLoop* blockRowLoop(const LowerContext& ctx, const kir::TensorOp* op, ir::IterDomain* sid,
                           const std::vector<kir::ForLoop*>& around) {
  const ir::Expr* e = op->expr;
  const ir::Split* split = nullptr;
  for (ir::IterDomain* id : op->out->loop()) {
    const ir::Expr* def = id->definition();
    if (def != nullptr && def->isA<ir::Split>() && def->as<ir::Split>()->in() == sid) {
      split = def->as<ir::Split>();
    }
  }
  const bool shaped = split != nullptr && split->inner()->parallelType() == ir::ParallelType::TIDx &&
                      split->outer()->parallelType() == ir::ParallelType::Serial &&
                      around.size() >= 2 &&
                      ctx.loopGroup(around[around.size() - 2]->id) == ctx.loopGroup(split->outer()) &&
                      ctx.loopGroup(around.back()->id) == ctx.loopGroup(split->inner());
  LOOM_CHECK(shaped, "lowering: the block-wide ", e->opName(), " of ", op->out->toString(),
             " needs its sort ID ", sid->toString(),
             " split into a serial loop and a TIDx loop, the two innermost loops of the op: the "
             "threads of a block sort the row together");
  kir::ForLoop* outer = around[around.size() - 2];
  LOOM_CHECK(outer->body.size() == 1 && outer->body.front() == around.back() &&
                 around.back()->body.size() == 1 && around.back()->body.front() == op,
             "lowering: the ", e->opName(), " of ", op->out->toString(),
             " shares the loops of its sort dim with other ops; a sort reads and writes whole "
             "rows, so its producers and consumers may not be inlined into them");
  return outer;
}

// Bytes of one key of a block-wide sort in shared memory: runtime sort.cuh's sortKey type (16-bit
// floats compare as float).
int64_t sortKeyBytes(DataType dt) {
  return isReducedPrecision(dt) ? 4 : int64_t(dataTypeSize(dt));
}

}  // namespace

bool sorts(kir::Kernel& kernel, LowerContext& ctx) {
  std::vector<Move> moves;
  const std::unordered_map<const kir::ForLoop*, kir::Scope*> parent_of =
      kir::loopParents(kernel.body);
  std::vector<kir::ForLoop*> loops;
  kir::forEachWithLoops(
      kernel.body, loops,
      [&](kir::Scope& stmts, size_t i, const std::vector<kir::ForLoop*>& around) {
        auto* op = stmts[i]->dynCast<kir::TensorOp>();
        if (op == nullptr || !ir::isSortExpr(op->expr)) return;
        const ir::Expr* e = op->expr;
        ir::IterDomain* sid = sortIdOf(e);
        if (sid->isBroadcast()) return;
        if (ir::sortBlockRow(e) > 0) {
          kir::ForLoop* outer = blockRowLoop(ctx, op, sid, around);
          moves.push_back({parent_of.at(outer), outer, op});
          return;
        }
        kir::ForLoop* loop = rowLoopOf(
            ctx, op, sid, around,
            {"a sort's dim must stay a loop ID of its own (serial, innermost): one thread sorts "
             "the whole row",
             "one thread sorts a whole row: keep that ID serial", "sort", "the sort dim"});
        LOOM_CHECK(loop->body.size() == 1 && loop->body.front() == op, "lowering: the ",
                   e->opName(), " of ", op->out->toString(), " shares the loop of its sort dim ",
                   sid->toString(),
                   " with other ops; a sort reads and writes whole rows, so its producers and "
                   "consumers may not be inlined into that loop");
        moves.push_back({parent_of.at(loop), loop, op});
      });
  // Replacements after the walk, so that the scopes being walked do not change under it.
  for (const Move& m : moves) {
    auto at = std::find(m.scope->begin(), m.scope->end(), m.loop);
    LOOM_ASSERT(at != m.scope->end(), "sort loop not found in its parent scope");
    *at = m.op;
  }
  return !moves.empty();
}

kir::Stmt* lowerSortRow(kir::Kernel& kernel, LowerContext& ctx, const kir::TensorOp* op,
                        const std::vector<kir::ForLoop*>& loops) {
  const ir::Expr* e = op->expr;
  const auto dim = size_t(ir::sortDim(e));
  const IndexMap idx = consumerIndices(kernel, ctx, op->out, loops);
  const std::vector<ir::IterDomain*> out_ids = ir::TensorDomain::noReductions(op->out->logical());
  auto row = [&](const ir::TensorView* tv, const char* role) {
    const kir::Buffer* buf = ctx.buffers.at(tv);
    LOOM_CHECK(buf->kind == kir::BufferKind::Param, "lowering: the ", e->opName(), " of ",
               op->out->toString(), " ", role, " ", tv->toString(), " in ",
               kir::bufferKindName(buf->kind),
               " memory; a sort reads and writes whole rows in global memory (make it a fusion "
               "input or output of the kernel, or a global tensor)");
    const std::vector<ir::IterDomain*> ids = ir::TensorDomain::noReductions(tv->logical());
    IndexMap at;
    for (size_t d = 0; d < ids.size(); ++d) {
      if (d == dim || ids[d]->isBroadcast()) {
        at[ids[d]] = kernel.constInt(0);
        continue;
      }
      auto found = idx.find(out_ids.at(d));
      LOOM_ASSERT(found != idx.end(), "no index for ", out_ids[d]->toString(), " of ",
                  op->out->toString());
      at[ids[d]] = found->second;
    }
    kir::SortRow::Row r;
    r.buffer = buf;
    r.base = bufferOffset(kernel, ctx, tv, at);
    r.stride = ids[dim]->isBroadcast()
                   ? static_cast<kir::Value*>(kernel.constInt(0))
                   : kernel.create<kir::TensorSize>(buf, int64_t(dim), /*stride=*/true);
    return r;
  };
  const auto* in = e->input(0)->as<ir::TensorView>();
  kir::SortRow::Row in_row = row(in, "reads its input");
  kir::Value* n = kernel.create<kir::TensorSize>(in_row.buffer, int64_t(dim), /*stride=*/false);
  kir::SortRow* s = nullptr;
  if (const auto* tk = e->dynCast<ir::TopKOp>()) {
    kir::SortRow::Row values = row(tk->values(), "writes its values to");
    kir::SortRow::Row indices = row(tk->indices(), "writes its indices to");
    kir::Value* k = kernel.create<kir::TensorSize>(values.buffer, int64_t(dim), /*stride=*/false);
    s = kernel.create<kir::SortRow>(e, in_row, values, indices, n, k, tk->largest());
  } else {
    const auto* as = e->as<ir::ArgsortOp>();
    s = kernel.create<kir::SortRow>(e, in_row, kir::SortRow::Row{}, row(as->out(), "writes to"),
                                    n, n, as->descending());
  }
  if (const int64_t capacity = ir::sortBlockRow(e); capacity > 0) {
    // Keys, then int indices, in the kernel's shared tensors (16-byte aligned pieces).
    s->blockRow = capacity;
    s->smemOffset = kernel.sharedTensorBytes;
    const int64_t keys = (capacity * sortKeyBytes(in->dtype()) + 15) / 16 * 16;
    kernel.sharedTensorBytes += keys + (capacity * 4 + 15) / 16 * 16;
  }
  return s;
}

}  // namespace loom::lower
