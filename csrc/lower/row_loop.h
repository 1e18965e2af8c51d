// SPDX-License-Identifier: Apache-2.0
// The loop of a row op's row ID (a scan's or a sort's): one serial, innermost loop of its own.
#pragma once

#include <algorithm>
#include <vector>

#include "loom/ir/exprs.h"
#include "loom/lower/lower.h"
#include "loom/support/error.h"

namespace loom::lower {

/// How the errors of rowLoopOf name the op's row and say why it must be one thread's loop.
struct RowLoopWording {
  const char* ownLoopRule;  ///< after "which the schedule split or merged; "
  const char* serialRule;   ///< after "which is parallelized on <type>; "
  const char* loopName;     ///< "scan" in "inside its scan loop"
  const char* idName;       ///< "the scan ID" in "...; the scan ID must be the innermost loop"
};

/// The loop of `id` around `op`, which must be a loop ID of op's output, serial and innermost;
/// a UserError in `wording`'s terms otherwise. `id` is not a broadcast.
inline kir::ForLoop* rowLoopOf(const LowerContext& ctx, const kir::TensorOp* op, ir::IterDomain* id,
                               const std::vector<kir::ForLoop*>& around,
                               const RowLoopWording& wording) {
  const ir::Expr* e = op->expr;
  const auto& loop_ids = op->out->loop();
  LOOM_CHECK(std::find(loop_ids.begin(), loop_ids.end(), id) != loop_ids.end(), "lowering: the ",
             e->opName(), " of ", op->out->toString(), " runs along ", id->toString(),
             ", which the schedule split or merged; ", wording.ownLoopRule);
  auto it = std::find_if(around.begin(), around.end(), [&](const kir::ForLoop* f) {
    return ctx.loopGroup(f->id) == ctx.loopGroup(id);
  });
  LOOM_ASSERT(it != around.end(), "no loop of the ", wording.loopName, " ID ", id->toString(),
              " around ", op->out->toString());
  kir::ForLoop* loop = *it;
  LOOM_CHECK(loop->ptype == ir::ParallelType::Serial, "lowering: the ", e->opName(), " of ",
             op->out->toString(), " runs along ", id->toString(), ", which is parallelized on ",
             ir::parallelTypeName(loop->ptype), "; ", wording.serialRule);
  LOOM_CHECK(it + 1 == around.end(), "lowering: the ", e->opName(), " of ", op->out->toString(),
             " has the loop of ", (*(it + 1))->id->toString(), " inside its ", wording.loopName,
             " loop (", id->toString(), "); ", wording.idName,
             " must be the innermost loop of the op");
  return loop;
}

}  // namespace loom::lower
