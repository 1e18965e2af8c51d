// SPDX-License-Identifier: Apache-2.0
// Welford to two-pass translation: when a persistent scheduler holds the whole row anyway, a
// mean by sum followed by a sum of squared deviations is cheaper than Welford's running update.
//
//   before:  avg, m2, n = welford(x, axes)                  (one WelfordOp, raw input)
//   after:   s   = sum(x, axes)
//            avg = s / N                                     (avg's reduction IDs cleared)
//            d   = x - broadcast(avg)
//            m2  = sum(d * d, axes)                          (still a reduction)
//            n   = N                                         (n's reduction IDs cleared)
//
// N is the product of the reduced IDs' logical (global) extents. avg, m2 and n keep their
// identity, so their consumers and the fusion outputs are untouched. avg and n go through
// transform::clearReductionIterDomains, which keeps a DID split of their loop and allocation
// domains; the tensors the translation creates get the sharding of the tensors they derive from
// by replay, so a sharded var_mean stays sharded (the founding case).
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "loom/ir/exprs.h"
#include "loom/ir/fusion.h"
#include "loom/scheduler/device_info.h"
#include "loom/eval/argument.h"

namespace loom::segmenter {

/// True when `w` can be translated: a raw input (m2 = 0, n = 1) that is a TensorView, the init
/// (0, 0, 0) (separateReductionInits), and outputs without a root domain (not rFactored).
bool isTranslatableWelford(const ir::WelfordOp* w);

/// True when the fusion holds at least one translatable WelfordOp.
bool hasTranslatableWelford(const ir::Fusion& fusion);

/// Rewrites one WelfordOp as above. UserError when it is not translatable.
void translateWelford(ir::Fusion& fusion, ir::WelfordOp* w);

/// Rewrites every translatable WelfordOp of the fusion; returns how many.
int64_t translateWelfordInFusion(ir::Fusion& fusion);

/// nvFuser's TranslateApplicableWelford: translates the fusion's Welfords only when the
/// inner-persistent scheduler accepts the translated fusion for `args` (checked on a copy).
/// Returns true when it translated; otherwise the fusion is untouched and *why (when non-null)
/// says why (no translatable Welford, or the persistent scheduler's reason).
bool translateApplicableWelford(ir::Fusion& fusion, std::span<const eval::Argument> args,
                                const scheduler::DeviceInfo& device = {},
                                std::string* why = nullptr);

}  // namespace loom::segmenter
