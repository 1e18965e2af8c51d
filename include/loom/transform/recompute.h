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

#include "loom/ir/fusion.h"
#include "loom/transform/inlining.h"

namespace loom::transform {

/// Recomputes every local producer read across threads by a consumer (see above), after the
/// fusion's compute-at positions are set. Returns the number of copies made.
int64_t recomputeAcrossThreads(ir::Fusion& fusion, InlineOptions options = {});

}  // namespace loom::transform
