// SPDX-License-Identifier: Apache-2.0
// Pass scans: a ScanOp's TensorOp becomes a running accumulator along its scan loop.
//
// The scan loop is the loop of the output's scan ID (ScanOp::scanId), which must be a loop ID of
// its own (not split or merged), serial, and the innermost loop around the op: then one thread
// visits the row's elements in order and one accumulator holds the prefix. Before the scan loop
// `var acc = identity` (the op's identity in the accumulator type: f32 for 16-bit outputs); in
// its place the TensorOp accumulates (acc = acc op in[i], like a reduction's Accumulate) and a
// WriteResult stores the prefix (out[i] = acc). A scan along a broadcast ID (no loop) is one
// element: the accumulator is declared right before the op.
//
//   before: for i0 in BIDx 0 .. 4:           after:  for i0 in BIDx 0 .. 4:
//             for i1 in 0 .. 100:                       var acc2 : f32 = 0
//               tensor T1 = cumsum(T0)                  for i1 in 0 .. 100:
//                                                         acc2 += T1 = cumsum(T0)
//                                                         T1 <- acc2 of T1 = cumsum(T0)
#include <algorithm>
#include <unordered_map>

#include "loom/ir/exprs.h"
#include "loom/lower/kir_walk.h"
#include "loom/lower/lower.h"
#include "row_loop.h"
#include "welford.h"

namespace loom::lower {

namespace {

// The identity of `op` as a constant of the accumulator type.
kir::Value* identity(kir::Kernel& kernel, ir::ReductionOpType op, DataType dt) {
  ir::ScalarValue v = ir::reductionIdentity(op, dt);
  if (isFloatingType(dt)) {
    if (const int64_t* i = std::get_if<int64_t>(&v)) v = double(*i);
  } else if (isBooleanType(dt)) {
    if (const int64_t* i = std::get_if<int64_t>(&v)) v = *i != 0;
  }
  return kernel.create<kir::Const>(dt, v);
}

struct Pending {
  kir::Scope* op_scope;  ///< the write goes right after the op
  kir::Scope* scope;
  kir::Stmt* anchor;  ///< the accumulator is declared before it
  kir::Stmt* decl;
  kir::TensorOp* op;
  kir::TensorOp* write;
};

}  // namespace

bool scans(kir::Kernel& kernel, LowerContext& ctx) {
  std::vector<Pending> pending;
  // The scope holding each loop, to declare accumulators in front of the scan loop.
  const std::unordered_map<const kir::ForLoop*, kir::Scope*> parent_of =
      kir::loopParents(kernel.body);
  std::vector<kir::ForLoop*> loops;
  kir::forEachWithLoops(
      kernel.body, loops,
      [&](kir::Scope& stmts, size_t i, const std::vector<kir::ForLoop*>& around) {
        auto* op = stmts[i]->dynCast<kir::TensorOp>();
        if (op == nullptr || op->role != kir::TensorOpRole::Compute ||
            !op->expr->isA<ir::ScanOp>()) {
          return;
        }
        const auto* scan = op->expr->as<ir::ScanOp>();
        ir::IterDomain* sid = scan->scanId();
        kir::Scope* scope = &stmts;
        kir::Stmt* anchor = op;
        if (!sid->isBroadcast()) {
          kir::ForLoop* loop =
              rowLoopOf(ctx, op, sid, around,
                        {"a scan ID must stay a loop ID of its own (serial, innermost)",
                         "a scan runs its row in order in one thread: keep that ID serial", "scan",
                         "the scan ID"});
          scope = parent_of.at(loop);
          anchor = loop;
        }
        kir::Var* acc = kernel.newVar(accumulatorType(op->out->dtype()), "acc");
        auto* decl =
            kernel.create<kir::DeclareVar>(acc, identity(kernel, scan->opType(), acc->dtype()));
        op->role = kir::TensorOpRole::Accumulate;
        op->acc = acc;
        auto* write =
            kernel.create<kir::TensorOp>(op->expr, op->out, kir::TensorOpRole::WriteResult);
        write->acc = acc;
        pending.push_back({&stmts, scope, anchor, decl, op, write});
      });
  // Insertions after the walk, so that the scopes being walked do not shift under it.
  for (const Pending& p : pending) {
    p.op_scope->insert(std::find(p.op_scope->begin(), p.op_scope->end(), p.op) + 1, p.write);
    auto at = std::find(p.scope->begin(), p.scope->end(), p.anchor);
    LOOM_ASSERT(at != p.scope->end(), "scan loop not found in its parent scope");
    p.scope->insert(at, p.decl);
  }
  return !pending.empty();
}

}  // namespace loom::lower
