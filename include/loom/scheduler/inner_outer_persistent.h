// SPDX-License-Identifier: Apache-2.0
// The inner-outer-persistent scheduler: layer_norm and rms_norm backward in one kernel. See
// docs/schedulers.md, "Inner-outer-persistent scheduler".
//
// The fusion reduces the same [rows, row] data twice: along each row (the inner reductions:
// grad input's mean(g) and mean(g * x_hat)) and along the rows (the outer reductions: grad
// weight's and grad bias's per-column sums). Reference loop (the first inner reduction):
//   [BIDx{rows / rows_per_block}, rows_per_block (serial),
//    r{persistent_batch} (Unroll), r TIDx{threads}, r{vector}]
// Each block walks its rows one after the other; a row's input rows stay on chip (registers, or
// shared memory) through its block reductions and the grad input write, exactly as in the
// inner-persistent scheduler. The outer reductions are rFactored over the serial row loop: each
// thread accumulates its columns (the same batch x vector elements of every row) in registers
// across the block's rows, and a grid reduction over BIDx (the last block to finish writes the
// result) combines the blocks' partials.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "loom/scheduler/params_base.h"
#include "loom/scheduler/registry.h"

namespace loom::scheduler {

struct InnerOuterPersistentParams final : ParamsOf<InnerOuterPersistentParams> {
  InnerOuterPersistentParams() : ParamsOf(SchedulerType::InnerOuterPersistent) {}

  /// Elements per vectorized access along the row.
  int64_t vectorize = 1;
  /// Serial (unrolled) chunks of the row per thread.
  int64_t persistent_batch = 1;
  /// Rows each block walks serially; the grid is ceil(rows / rows_per_block) blocks, and each
  /// thread's outer-reduction partials accumulate over these rows.
  int64_t rows_per_block = 1;
  /// The held input rows in shared memory instead of registers (rows too wide for registers);
  /// the outer partials stay in registers.
  bool shared_memory = false;

  // Informational (derived from the sizes; not part of the schedule).
  int64_t row_size = 0;              ///< elements reduced per row (the inner reductions)
  int64_t rows = 0;                  ///< rows (the outer reductions' extent)
  int64_t threads_per_row = 0;       ///< TIDx extent
  int64_t blocks = 0;                ///< BIDx extent
  int64_t registers_per_thread = 0;  ///< the plan's estimate (row data, partials, overhead)

  static constexpr std::string_view kName = "InnerOuterPersistent";
  static constexpr auto fields() {
    using P = InnerOuterPersistentParams;
    return std::tuple{field("vectorize", &P::vectorize),
                      field("persistent_batch", &P::persistent_batch),
                      field("rows_per_block", &P::rows_per_block),
                      field("shared_memory", &P::shared_memory),
                      field("row_size", &P::row_size, FieldRole::Info),
                      field("rows", &P::rows, FieldRole::Info),
                      field("threads_per_row", &P::threads_per_row, FieldRole::Info),
                      field("blocks", &P::blocks, FieldRole::Info),
                      field("registers_per_thread", &P::registers_per_thread, FieldRole::Info)};
  }
};

std::unique_ptr<Scheduler> makeInnerOuterPersistentScheduler();

/// The fusion's reductions split by direction: `inner` reduce the innermost dims (the same ones
/// each), `outer` the leading dims that the inner ones keep.
struct InnerOuterReductions {
  std::vector<ir::TensorView*> inner;
  std::vector<ir::TensorView*> outer;
};
/// The split, or nullopt-like empty lists with the reason in *why when a reduction fits neither.
InnerOuterReductions classifyInnerOuter(const ir::Fusion& fusion, std::string* why);

bool innerOuterPersistentCompileTimeCheck(const ir::Fusion& fusion, std::string* why);
bool innerOuterPersistentRunTimeCheck(const ir::Fusion& fusion, SchedulerRuntimeInfo& info,
                                      std::string* why);
std::unique_ptr<InnerOuterPersistentParams> innerOuterPersistentHeuristics(
    const ir::Fusion& fusion, SchedulerRuntimeInfo& info);
void scheduleInnerOuterPersistent(ir::Fusion& fusion, const InnerOuterPersistentParams& params);

}  // namespace loom::scheduler
