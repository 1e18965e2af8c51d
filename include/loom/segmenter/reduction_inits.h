// SPDX-License-Identifier: Apache-2.0
// Reductions start at their identity: a non-identity init is combined once, after the reduction.
//
// A sum with init c means c + sum(x) (docs/ops.md), a Welford with init (a0, m2_0, n0) means
// those statistics combined with the input's. Kernels reduce in parallel: every thread (and
// every block of a grid reduction, every rFactor partial) starts its partial at the init, so a
// non-identity init would be counted once per partial. The automatic path therefore rewrites
//
//   out = sum(x, init=c)                ->  s = sum(x, init=0);  out' = s + c
//   out = prod(x, init=c)               ->  p = prod(x, init=1); out' = p * c
//   a, m2, n = welford(..., init=I)     ->  welford(..., init=(0, 0, 0)), then Chan's combine
//                                           of I with the result (a count of 0 keeps I)
//
// and the consumers and fusion outputs read out'. max and min need nothing: starting every
// partial at the init is harmless for them (ReductionOp/WelfordOp::hasIdentityInit). rFactor
// starts its partials at the identity; hand-scheduled kernels are checked instead:
// transform::validateSchedule rejects a non-identity init on a reduction over a parallel dim.
#pragma once

#include <cstdint>

#include "loom/ir/exprs.h"
#include "loom/ir/fusion.h"

namespace loom::segmenter {

/// Rewrites every sum, prod and Welford with a non-identity init as above; returns how many.
int64_t separateReductionInits(ir::Fusion& fusion);

}  // namespace loom::segmenter
