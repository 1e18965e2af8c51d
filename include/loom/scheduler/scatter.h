// SPDX-License-Identifier: Apache-2.0
// The scatter scheduler: a kernel of one scatter_add. Large scatters (index extent along the
// scatter dim at least kMinAtomicScatterExtent, dtype f32, f64, i32, i64, f16 or bf16) copy self
// into out over a resident grid, wait at a grid barrier and add src with atomics, walking index
// once; small ones (and other dtypes) let each out element search the index along the dim,
// deterministically. See docs/schedulers.md and docs/ops.md ("Indexing").
#pragma once

#include <cstdint>
#include <memory>

#include "loom/scheduler/params_base.h"
#include "loom/scheduler/registry.h"

namespace loom::ir {
class ScatterOp;
}

namespace loom::scheduler {

/// Below this index extent along the scatter dim, searching the index per out element costs
/// less than a grid barrier and atomics, and gives the same sums on every run.
inline constexpr int64_t kMinAtomicScatterExtent = 16;

struct ScatterParams final : ParamsOf<ScatterParams> {
  ScatterParams() : ParamsOf(SchedulerType::Scatter) {}

  /// Threads per block.
  int64_t bdimx = 128;
  /// Blocks of the atomic kernel's grid (all resident: it waits at a grid barrier); unused by
  /// the search.
  int64_t blocks = 1;
  /// Atomic adds (ir::ScatterOp::atomic) rather than the per-element search.
  bool atomic = false;

  static constexpr std::string_view kName = "Scatter";
  static constexpr auto fields() {
    return std::tuple{field("bdimx", &ScatterParams::bdimx),
                      field("blocks", &ScatterParams::blocks),
                      field("atomic", &ScatterParams::atomic)};
  }
  std::string summary() const { return ""; }
};

/// Whether atomics can add into `sc`'s dtype (f32, f64, i32, i64, f16, bf16).
bool atomicScatterDtype(const ir::ScatterOp* sc);

std::unique_ptr<Scheduler> makeScatterScheduler();

}  // namespace loom::scheduler
