// SPDX-License-Identifier: Apache-2.0
// Recomputation: a producer held in registers whose consumer runs in other threads gets a copy
// computed in the consumer's own loops.
//
// Inlining cannot always put a producer in the loops of all its consumers: iota(4) broadcast to
// a [4, 1, 1] output and, cast, to a [s, 4, t] one must run in both loop nests, whose thread
// loops iterate different spaces; a fusion output's broadcast axis never shares a loop over a
// real dim. Left so, the producer's registers would be read by threads that did not write them
// (lowering refuses that). Each such consumer instead reads a copy of the producer's expr, with
// the same inputs, scheduled like the consumer and inlined into it; the copy's own producers are
// re-inlined for it and recomputed in turn where they now have the same problem, up to fusion
// inputs (global memory, readable by any thread).
//
//   before: T1 = iota(); T2 = broadcast(T1)          after: T1 = iota(); T2 = broadcast(T1)
//           out0 = set(T2)  [4, 1, 1]                       out0 = set(T2)
//           out1 = add(cast(T2), x)  [s, 4, t]              T1' = iota(); T2' = broadcast(T1')
//                                                           out1 = add(cast(T2'), x)
//
// Reductions and Welford outputs, and tensors with a root-to-logical transform (reshape, slice,
// pad), are not recomputed: their readers keep the error.
#pragma once

#include <cstdint>
#include <span>

#include "loom/ir/fusion.h"
#include "loom/transform/inlining.h"

namespace loom::transform {

/// Recomputes every local producer read across threads by a consumer (see above), after the
/// fusion's compute-at positions are set. Returns the number of copies made.
int64_t recomputeAcrossThreads(ir::Fusion& fusion, InlineOptions options = {});

/// Before scheduling: gives `use` its own copy of the exprs that compute `tv` from `leaves`
/// (every expr on a path from a leaf to `tv`, each copied once, with fresh unscheduled outputs
/// shaped and sharded like the originals) and makes `use` read the copy of `tv`, which is
/// returned. The leaves are read as they are. A normalization scheduler uses it to drop a
/// persistent buffer it can recompute from the rows it keeps anyway (softmax's exp(x - max) from
/// x). Every expr on the way must have one output and be pointwise (checked: an InternalError
/// otherwise), and every path from `tv` back must reach a leaf.
ir::TensorView* recomputeChain(ir::TensorView* tv, ir::Expr* use,
                               std::span<ir::TensorView* const> leaves);

}  // namespace loom::transform
