// SPDX-License-Identifier: Apache-2.0
// The transpose scheduler: pointwise fusions whose inputs and outputs disagree on the innermost
// dim, tiled through shared memory so both sides are read and written along their own rows.
// See docs/schedulers.md.
#pragma once

#include <cstdint>
#include <memory>

#include "loom/scheduler/params_base.h"
#include "loom/scheduler/registry.h"

namespace loom::scheduler {

struct TransposeParams final : ParamsOf<TransposeParams> {
  TransposeParams() : ParamsOf(SchedulerType::Transpose) {}

  /// Tile edge along both transposed dims (a power of two; 32 or 64 from the heuristics).
  int64_t tile = 32;
  /// Elements per vector access along each side's own innermost dim (1, 2, 4, 8 or 16); the
  /// block's x extent is tile / vectorize.
  int64_t vectorize = 1;
  /// Threads per block along y (rows of the tile; each thread steps tile / bdimy rows).
  int64_t bdimy = 8;
  /// How many dims each side tiles merged, counted from its innermost outward: the reference's
  /// (inner) and the tile side's (outer). More than one where a side's innermost dim is narrower
  /// than a tile (channels last with W = 7: H and W together).
  int64_t inner_dims = 1;
  int64_t outer_dims = 1;
  /// The (merged) transposed extents the heuristics saw (dump only).
  int64_t inner_extent = 0;
  int64_t outer_extent = 0;

  static constexpr std::string_view kName = "Transpose";
  static constexpr auto fields() {
    return std::tuple{field("tile", &TransposeParams::tile),
                      field("vectorize", &TransposeParams::vectorize),
                      field("bdimy", &TransposeParams::bdimy),
                      field("inner_dims", &TransposeParams::inner_dims),
                      field("outer_dims", &TransposeParams::outer_dims),
                      field("inner_extent", &TransposeParams::inner_extent, FieldRole::Info),
                      field("outer_extent", &TransposeParams::outer_extent, FieldRole::Info)};
  }
  int64_t bdimx() const { return tile / vectorize; }
};

std::unique_ptr<Scheduler> makeTransposeScheduler();

/// The transpose heuristics and schedule, callable without the registry (the fusion must pass
/// the scheduler's checks).
std::unique_ptr<TransposeParams> transposeHeuristics(const ir::Fusion& fusion,
                                                     SchedulerRuntimeInfo& info);
void scheduleTranspose(ir::Fusion& fusion, const TransposeParams& params);

/// Smallest extent of either transposed side the scheduler tiles (after merging the dims outside
/// a narrow innermost one): narrower transposes waste most of a tile and are left to the
/// pointwise scheduler.
inline constexpr int64_t kMinTransposeExtent = 32;
/// A side narrower than this merges the next dim outward into its tile (up to the dims the other
/// side does not hold innermost).
inline constexpr int64_t kWideTransposeTile = 64;

}  // namespace loom::scheduler
