// SPDX-License-Identifier: Apache-2.0
// The outer-persistent scheduler: a reduction over outer dims whose result is broadcast back and
// used with the same data in the same fusion (x - x.mean(0), batch-norm forward and backward),
// in one cooperative kernel that keeps the reduced data on chip across the grid. See
// docs/schedulers.md, "Outer-persistent scheduler".
//
// Reference loop (the first reduction tensor, loop [iter..., red...] merged into [I, R]):
//   kept dim innermost (NHWC, x - x.mean(0)):
//     [BIDx{I / bdimx}, TIDx{bdimx}, r BIDy{grid}, r TIDy{bdimy}, r{persistent_batch} (Unroll)]
//   a reduced dim innermost (NCHW: C between reduced dims):
//     [BIDx{I}, r BIDy{grid}, r{persistent_batch} (Unroll), r TIDx{bdimx}]
// Each thread holds its persistent_batch elements of every held buffer in registers; the serial
// pieces are rFactored, the block reduction runs over the thread dims and a grid all-reduce over
// BIDy (a grid barrier: lowering makes the kernel cooperative), after which every block computes
// the broadcast consumers from the data it kept. The run-time check rejects, with the reason, a
// shape whose grid could not be resident at once (registers, threads per SM), so the segmenter
// splits it (a reduction kernel, then a pointwise one): never a deadlock.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "loom/scheduler/params_base.h"
#include "loom/scheduler/registry.h"

namespace loom::scheduler {

struct OuterPersistentParams final : ParamsOf<OuterPersistentParams> {
  OuterPersistentParams() : ParamsOf(SchedulerType::OuterPersistent) {}
  /// A reduced dim is innermost (NCHW): columns on BIDx alone, the reduction's threads on TIDx.
  bool inner_reduced = false;
  /// Threads along TIDx (columns, or the reduction in the inner_reduced form).
  int64_t bdimx = 32;
  /// Threads along TIDy over the reduction (1 in the inner_reduced form).
  int64_t bdimy = 8;
  /// Reduced elements a thread holds (the unrolled register batch).
  int64_t persistent_batch = 1;
  // Informational (derived from the sizes).
  int64_t columns = 0;          ///< kept elements (channels)
  int64_t reduced = 0;          ///< reduced elements per column
  int64_t grid = 0;             ///< blocks along BIDy (the grid all-reduce's members)
  int64_t blocks = 0;           ///< blocks of the launch, all resident at once
  int64_t resident_blocks = 0;  ///< what the device holds of this plan's blocks at once

  static constexpr std::string_view kName = "OuterPersistent";
  static constexpr auto fields() {
    using P = OuterPersistentParams;
    return std::tuple{field("inner_reduced", &P::inner_reduced),
                      field("bdimx", &P::bdimx),
                      field("bdimy", &P::bdimy),
                      field("persistent_batch", &P::persistent_batch),
                      field("columns", &P::columns, FieldRole::Info),
                      field("reduced", &P::reduced, FieldRole::Info),
                      field("grid", &P::grid, FieldRole::Info),
                      field("blocks", &P::blocks, FieldRole::Info),
                      field("resident_blocks", &P::resident_blocks, FieldRole::Info)};
  }
};

std::unique_ptr<Scheduler> makeOuterPersistentScheduler();

/// Blocks of `threads` threads, each holding `registers` 32-bit registers, that `device` keeps
/// resident at once (threads per SM and registers per SM, times the SM count): the bound a
/// cooperative launch's grid must stay within.
int64_t residentBlocks(const DeviceInfo& device, int64_t threads, int64_t registers);

/// The pieces callable without the registry (tests).
bool outerPersistentCompileTimeCheck(const ir::Fusion& fusion, std::string* why);
bool outerPersistentRunTimeCheck(const ir::Fusion& fusion, SchedulerRuntimeInfo& info,
                                 std::string* why);
/// Null when no plan's grid can be resident (the run-time check's rejection).
std::unique_ptr<OuterPersistentParams> outerPersistentHeuristics(const ir::Fusion& fusion,
                                                                 SchedulerRuntimeInfo& info,
                                                                 std::string* why = nullptr);
void scheduleOuterPersistent(ir::Fusion& fusion, const OuterPersistentParams& params);

}  // namespace loom::scheduler
