// SPDX-License-Identifier: Apache-2.0
// The scan scheduler: fusions with scans (cumsum, cumprod, cummax, cummin) along one dim and no
// reductions. Each thread runs whole rows in order: the scan dim is the innermost, serial loop;
// every other dim merges into [BIDx, TIDx]. See docs/schedulers.md.
#pragma once

#include <cstdint>
#include <memory>

#include "loom/scheduler/params_base.h"
#include "loom/scheduler/registry.h"

namespace loom::scheduler {

struct ScanParams final : ParamsOf<ScanParams> {
  ScanParams() : ParamsOf(SchedulerType::Scan) {}

  /// Threads per block; each thread scans one row.
  int64_t bdimx = 128;

  static constexpr std::string_view kName = "Scan";
  static constexpr auto fields() { return std::tuple{field("bdimx", &ScanParams::bdimx)}; }
  std::string summary() const { return ""; }
};

std::unique_ptr<Scheduler> makeScanScheduler();

}  // namespace loom::scheduler
