// SPDX-License-Identifier: Apache-2.0
// The reduction scheduler: one ReductionOp or WelfordOp with pointwise ops around it, reducing
// either the innermost dims (inner reduction) or outer dims (outer reduction). See
// docs/schedulers.md.
#pragma once

#include <cstdint>
#include <memory>

#include "loom/scheduler/params_base.h"
#include "loom/scheduler/registry.h"

namespace loom::scheduler {

struct ReductionParams final : ParamsOf<ReductionParams> {
  ReductionParams() : ParamsOf(SchedulerType::Reduction) {}

  /// True: the reduced dims are the innermost (inner reduction); false: outer reduction.
  bool inner = true;
  /// Elements per vectorized input load: along the reduction (inner) or the iteration (outer).
  int64_t vectorize = 1;
  /// Threads along x: the reduction (inner) or the iteration dim (outer).
  int64_t bdimx = 128;
  /// Threads along y: rows per block (inner) or reduction threads (outer).
  int64_t bdimy = 1;
  /// Blocks cooperating on one reduction (grid reduction), always on BIDx; the rows (inner) or
  /// column blocks (outer) then go on BIDy. 1: none.
  int64_t grid_reduction = 1;
  /// Serial reduction steps per unrolled group (ParallelType::Unroll): that many independent
  /// (vector) loads in flight per thread. 1: a plain serial loop.
  int64_t unroll = 1;
  /// Inner reductions whose rows may start at any address (an odd width, a view at an odd
  /// offset) still take `vectorize`-wide accesses, each row peeled
  /// (lower::LowerOptions::peelVectorRows). Inner only.
  bool peel = false;

  bool peelVectorRows() const override { return peel; }

  static constexpr std::string_view kName = "Reduction";
  static constexpr auto fields() {
    return std::tuple{field("inner", &ReductionParams::inner, FieldRole::Summary),
                      field("vectorize", &ReductionParams::vectorize),
                      field("bdimx", &ReductionParams::bdimx),
                      field("bdimy", &ReductionParams::bdimy),
                      field("grid_reduction", &ReductionParams::grid_reduction),
                      field("unroll", &ReductionParams::unroll),
                      field("peel", &ReductionParams::peel)};
  }
  std::string summary() const { return inner ? "inner" : "outer"; }
};

std::unique_ptr<Scheduler> makeReductionScheduler();

/// True when the innermost non-broadcast logical ID of `reduction_tv` is a Reduction (an inner
/// reduction; a reduction over every dim counts as inner).
bool isInnerReduction(const ir::TensorView* reduction_tv);

/// The reduction heuristics and schedule, callable without the registry.
std::unique_ptr<ReductionParams> reductionHeuristics(const ir::Fusion& fusion,
                                                     SchedulerRuntimeInfo& info);
void scheduleReduction(ir::Fusion& fusion, const ReductionParams& params);

}  // namespace loom::scheduler
