// SPDX-License-Identifier: Apache-2.0
// The pointwise scheduler: fusions without reductions, scheduled as one flat (1-D) or
// broadcast-split (2-D) loop nest over the largest output. See docs/schedulers.md.
#pragma once

#include <cstdint>
#include <memory>

#include "loom/scheduler/registry.h"

namespace loom::scheduler {

struct PointwiseParams final : HeuristicParams {
  PointwiseParams() : HeuristicParams(SchedulerType::Pointwise) {}

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

  std::string toString() const override;
  size_t hash() const override;
  bool sameAs(const HeuristicParams& other) const override;
  std::unique_ptr<HeuristicParams> clone() const override;
  bool setField(std::string_view name, int64_t value) override;
};

std::unique_ptr<Scheduler> makePointwiseScheduler();

/// The pointwise heuristics and schedule, callable without the registry.
std::unique_ptr<PointwiseParams> pointwiseHeuristics(const ir::Fusion& fusion,
                                                     SchedulerRuntimeInfo& info);
void schedulePointwise(ir::Fusion& fusion, const PointwiseParams& params);

}  // namespace loom::scheduler
