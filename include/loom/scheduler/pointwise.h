// SPDX-License-Identifier: Apache-2.0
// The pointwise scheduler: fusions without reductions, scheduled as one flat (1-D) or
// broadcast-split (2-D) loop nest over the largest output. See docs/schedulers.md.
#pragma once

#include <cstdint>
#include <memory>

#include "loom/scheduler/params_base.h"
#include "loom/scheduler/registry.h"

namespace loom::scheduler {

struct PointwiseParams final : ParamsOf<PointwiseParams> {
  PointwiseParams() : ParamsOf(SchedulerType::Pointwise) {}

  /// 0: 1-D form (all reference dims flattened). b > 0: 2-D form; reference logical dims [0, b)
  /// merge into the outer dim, [b, rank) into the inner dim.
  int64_t break_point = 0;
  /// Elements per vectorized access of inputs and outputs (1, 2, 4, 8 or 16).
  int64_t vectorize = 1;
  /// Serial (unrolled) iterations per thread.
  int64_t unroll = 1;
  /// Threads per block along x (inner dim) and y (outer dim, 2-D form only).
  int64_t bdimx = 128;
  int64_t bdimy = 1;

  static constexpr std::string_view kName = "Pointwise";
  static constexpr auto fields() {
    return std::tuple{field("break_point", &PointwiseParams::break_point),
                      field("vectorize", &PointwiseParams::vectorize),
                      field("unroll", &PointwiseParams::unroll),
                      field("bdimx", &PointwiseParams::bdimx),
                      field("bdimy", &PointwiseParams::bdimy)};
  }
  std::string summary() const { return break_point == 0 ? "1-D" : "2-D"; }
};

std::unique_ptr<Scheduler> makePointwiseScheduler();

/// The pointwise heuristics and schedule, callable without the registry.
std::unique_ptr<PointwiseParams> pointwiseHeuristics(const ir::Fusion& fusion,
                                                     SchedulerRuntimeInfo& info);
void schedulePointwise(ir::Fusion& fusion, const PointwiseParams& params);

}  // namespace loom::scheduler
