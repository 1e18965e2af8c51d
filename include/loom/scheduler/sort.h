// SPDX-License-Identifier: Apache-2.0
// The sort scheduler: a kernel of one argsort or topk, one thread per row (the sort dim is the
// innermost, serial loop, which lowering turns into one row call; every other dim merges into
// [BIDx, TIDx]). The input is a fusion input of the segment; producers and consumers of the sort
// run in kernels of their own. See docs/schedulers.md.
#pragma once

#include <cstdint>
#include <memory>

#include "loom/scheduler/params_base.h"
#include "loom/scheduler/registry.h"

namespace loom::scheduler {

struct SortParams final : ParamsOf<SortParams> {
  SortParams() : ParamsOf(SchedulerType::Sort) {}

  /// Threads per block; each thread sorts one row.
  int64_t bdimx = 128;

  static constexpr std::string_view kName = "Sort";
  static constexpr auto fields() { return std::tuple{field("bdimx", &SortParams::bdimx)}; }
  std::string summary() const { return ""; }
};

std::unique_ptr<Scheduler> makeSortScheduler();

}  // namespace loom::scheduler
