// SPDX-License-Identifier: Apache-2.0
// The inner-persistent normalization scheduler: softmax, log_softmax, layer_norm, rms_norm and
// var_mean over the innermost dims. Each row is loaded once and stays on chip (the persistent
// buffers) while its statistics are reduced and then reused. See docs/schedulers.md.
//
// Reference loop (the first reduction tensor), DID IDs outermost and untouched:
//   [DID..., BIDx{rows / rows_per_block}, TIDy{rows_per_block},
//    r{persistent_batch} (serial), r TIDx{threads}, r{vector}]
// The serial pieces are rFactored, so each thread first reduces its own batch x vector elements
// and a block reduction over TIDx finishes the row. Inputs are cached (vectorized loads); the
// caches and the intermediates needed after a reduction are the persistent buffers, in registers,
// or in shared memory when registers do not suffice. Buffers recomputable from input rows are
// projected (BufferPlan below). Rows that fit neither are read again from global memory by each
// pass (reload_rows) when every held row is a fusion input, and otherwise rejected by the
// run-time check, with the reason, so the segmenter falls back.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "loom/scheduler/params_base.h"
#include "loom/scheduler/registry.h"

namespace loom::scheduler {

struct InnerPersistentParams final : ParamsOf<InnerPersistentParams> {
  InnerPersistentParams() : ParamsOf(SchedulerType::InnerPersistent) {}

  /// Elements per vectorized input load (innermost piece of the row).
  int64_t vectorize = 1;
  /// Serial (unrolled) chunks of the row per thread: the register-resident batch.
  int64_t persistent_batch = 1;
  /// Rows per block, on TIDy.
  int64_t rows_per_block = 1;
  /// Persistent buffers in shared memory instead of registers.
  bool shared_memory = false;
  /// Rows wider than registers and shared memory hold: nothing persists; each pass over the row
  /// (each reduction, then the outputs) reads the input rows from global memory again (the L2
  /// catches part of it), in one kernel, with the batch loop serial instead of unrolled. Only
  /// when every held row is a fusion input.
  bool reload_rows = false;
  /// Rows that may start at any address (a width prime to the vector, a view at an odd offset)
  /// still take `vectorize`-wide accesses: each row is peeled (a head element by element up to
  /// the first aligned vector, aligned vectors, a tail; lower::LowerOptions::peelVectorRows).
  bool peel = false;

  bool peelVectorRows() const override { return peel; }

  // Informational (derived from the sizes; not part of the schedule).
  int64_t row_size = 0;           ///< elements reduced per row
  int64_t rows = 0;               ///< rows (iteration elements, DID pieces excluded)
  int64_t threads_per_row = 0;    ///< TIDx extent: ceilDiv(ceilDiv(row, vectorize), batch)
  int64_t buffer_bytes_per_row = 0;  ///< persistent buffer bytes of one row

  static constexpr std::string_view kName = "InnerPersistent";
  static constexpr auto fields() {
    using P = InnerPersistentParams;
    return std::tuple{field("vectorize", &P::vectorize),
                      field("persistent_batch", &P::persistent_batch),
                      field("rows_per_block", &P::rows_per_block),
                      field("shared_memory", &P::shared_memory),
                      field("reload_rows", &P::reload_rows),
                      field("peel", &P::peel),
                      field("row_size", &P::row_size, FieldRole::Info),
                      field("rows", &P::rows, FieldRole::Info),
                      field("threads_per_row", &P::threads_per_row, FieldRole::Info),
                      field("buffer_bytes_per_row", &P::buffer_bytes_per_row, FieldRole::Info)};
  }
};

std::unique_ptr<Scheduler> makeInnerPersistentScheduler();

/// The persistent buffers of a fusion: tensors holding whole rows that are read both by (the
/// path to) a reduction and by something that needs a reduction's result. Fusion inputs appear
/// as themselves (the scheduler caches them).
std::vector<ir::TensorView*> persistentBuffers(const ir::Fusion& fusion);

/// The fusion input a persistent buffer is a cheap projection of, or nullptr: `tv = cast(in)` of a
/// fusion input to a type at least as wide, tv not an output. The scheduler then keeps `in`'s
/// register cache persistent (bf16 stays bf16: half the registers) and recomputes the cast at each
/// use; the heuristic counts `in`'s item size for it.
ir::TensorView* projectableCastInput(const ir::TensorView* tv);

/// What the scheduler keeps on chip for the persistent buffers. A buffer computed by pointwise
/// exprs from fusion inputs (that hold rows) and row statistics (broadcasts of reduction results,
/// row-invariant tensors) is projected: each of its uses recomputes it from those leaves, and
/// only the input rows are held. softmax's exp(x - max) is recomputed from x, so a row holds x
/// alone; a bf16 input's widening cast is recomputed from the bf16 row. A buffer is projected
/// only when the input rows it adds to the held set take no more bytes than the buffer itself (a
/// narrowing cast stays as it is).
struct BufferPlan {
  struct Projection {
    ir::TensorView* buffer;
    std::vector<ir::TensorView*> leaves;  ///< where the recomputation starts (read as they are)
  };
  std::vector<ir::TensorView*> held;    ///< rows kept on chip: fusion inputs or buffers
  std::vector<Projection> projected;    ///< buffers recomputed at each use
  /// Bytes of one row element over every held row.
  int64_t bytesPerElement() const;
};
BufferPlan planPersistentBuffers(const ir::Fusion& fusion);
/// Same, for the rows `ref` (a reduction over the innermost dims) reduces: the inner-outer
/// scheduler's fusions also reduce the leading dims, so their first reduction may not be it.
BufferPlan planPersistentBuffers(const ir::Fusion& fusion, const ir::TensorView* ref);

// Steps of the inner-persistent schedule that the inner-outer-persistent scheduler shares.
/// Every use but the first of each projected buffer gets its own copy of the buffer's pointwise
/// chain from its leaves (transform::recomputeChain).
void projectPersistentBuffers(const BufferPlan& plan);
/// `broadcast(cast(w))` of a fusion input w becomes `cast(broadcast(w))`, so a row-invariant
/// register copy keeps w's (narrower) type.
void castInputsAfterBroadcast(ir::Fusion& fusion);
/// The fusion's computed tensors split into elementwise ones and row statistics (a reduction
/// result broadcast back along the row, or math on one) of rows reduced at logical positions
/// `reduced` of rank `row_rank`, whose loop IDs left of `row_pos` select the row. Every row
/// statistic's loop becomes the row IDs and the broadcast IDs themselves, so that every thread
/// of the row computes it; one without uses (an output) is listed with the elementwise tensors,
/// since it is inlined as they are.
struct RowStatisticsPlacement {
  std::vector<ir::TensorView*> elementwise;
  std::vector<ir::TensorView*> stats;
};
RowStatisticsPlacement placeRowStatistics(ir::Fusion& fusion, const std::vector<size_t>& reduced,
                                          size_t row_rank, int64_t row_pos);

/// True when a plan that reads its rows again (reload_rows) keeps the rows in flight (a block's
/// row on every block the SMs hold at once) within three quarters of the L2, so each pass after
/// the first reads the L2 rather than DRAM.
bool reloadedRowsStayInL2(const InnerPersistentParams& params, const DeviceInfo& device);

/// The pieces callable without the registry (tests, the Welford translation check).
bool innerPersistentCompileTimeCheck(const ir::Fusion& fusion, std::string* why);
bool innerPersistentRunTimeCheck(const ir::Fusion& fusion, SchedulerRuntimeInfo& info,
                                 std::string* why);
std::unique_ptr<InnerPersistentParams> innerPersistentHeuristics(const ir::Fusion& fusion,
                                                                 SchedulerRuntimeInfo& info);
void scheduleInnerPersistent(ir::Fusion& fusion, const InnerPersistentParams& params);

}  // namespace loom::scheduler
