// SPDX-License-Identifier: Apache-2.0
// The inner-persistent scheduler: checks, persistent buffer analysis and heuristics. The
// schedule itself is in normalization_schedule.cpp.
#include "loom/scheduler/normalization.h"

#include <algorithm>
#include <optional>
#include <sstream>
#include <unordered_set>

#include "loom/ir/exprs.h"
#include "loom/ir/iter_domain.h"
#include "loom/ir/transforms.h"
#include "loom/scheduler/memory_order.h"
#include "loom/scheduler/utils.h"
#include "loom/support/hash.h"
#include "loom/transform/id_graph.h"

namespace loom::scheduler {

using namespace loom::ir;

namespace {

// Registers a thread needs besides its persistent buffers (indices, partial results, temps).
constexpr int64_t kRegisterOverhead = 48;
// Row elements a thread holds per persistent buffer: the target, and the most before the heuristic
// prefers more threads (until kMaxThreads).
constexpr int64_t kTargetValues = 32;
constexpr int64_t kMaxValues = 48;
// Narrow rows (bf16/fp16 persistent buffers, projected to the inputs) are latency-bound, not
// bandwidth-bound: each row's critical path (a load round trip plus two block reductions with
// __syncthreads) lasts several microseconds, so throughput = rows in flight x row bytes / latency.
// A thread then holds up to kTargetBufferBytes of row data (32 registers) instead of 32 values,
// which means fewer threads per row and more rows per SM. var_mean [16, 2048, 12288] bf16 on an
// H200: 32 values -> 384 threads x ~40 registers = 15360 per block -> 4 rows per SM (96 KB in
// flight per SM); 64 values -> 192 threads x ~56 registers = 10752 per block -> 6 rows per SM
// (144 KB in flight, 8 independent 16-byte loads per thread, 6-warp block reductions). fp32 rows
// (4 bytes per element) keep 32 values. Only with enough rows to fill the SMs several times over
// (kLatencyBoundRowsPerSm): few rows are better served by more threads each.
constexpr int64_t kTargetBufferBytes = 128;
constexpr int64_t kLatencyBoundRowsPerSm = 4;
// Vector loads a thread keeps in flight, at least, on latency-bound short rows.
constexpr int64_t kMinVectorsInFlight = 4;
// Threads per row: below kMinThreads rows share a block (TIDy); above kMaxThreads only when a
// thread would otherwise hold more than kMaxValues; never above kMaxThreadsPerRow.
constexpr int64_t kMinThreads = 128;
constexpr int64_t kMaxThreads = 512;
constexpr int64_t kMaxThreadsPerRow = 1024;
// Shared memory of the block reductions (one slot per thread for each value reduced together:
// Welford reduces three), beside the persistent buffers in shared-memory mode.
constexpr int64_t kReductionWorkspacePerThread = 16;
// Rows that reload (InnerPersistentParams::reload_rows) need at least sm_count / this many rows.
constexpr int64_t kReloadRowsPerSmDivisor = 16;

bool isReductionExpr(const Expr* e) { return e->isA<ReductionOp>() || e->isA<WelfordOp>(); }

bool reject(std::string* why, std::string msg) {
  if (why != nullptr) *why = std::move(msg);
  return false;
}

// True when the loop ID is in logical, or a DID piece of an outer split (the sharding), or the
// inner piece of such a split: the only scheduling an unscheduled fusion may carry.
bool isUnscheduledLoopId(const TensorView* tv, const IterDomain* id) {
  const auto& logical = tv->logical();
  if (std::find(logical.begin(), logical.end(), id) != logical.end()) return true;
  if (id->isDeviceDim()) return true;
  auto* split = id->definition() != nullptr ? id->definition()->dynCast<Split>() : nullptr;
  return split != nullptr && split->outer()->isDeviceDim();
}

// The reduced positions of a reduction tensor's logical domain.
std::vector<size_t> reducedPositions(const TensorView* tv) {
  std::vector<size_t> pos;
  for (size_t i = 0; i < tv->logical().size(); ++i) {
    if (tv->logical()[i]->isReduction()) pos.push_back(i);
  }
  return pos;
}

int64_t roundUp(int64_t x, int64_t m) { return utils::ceilDiv(x, m) * m; }

}  // namespace


TensorView* projectableCastInput(const TensorView* tv) {
  auto* cast = tv->definition() != nullptr ? tv->definition()->dynCast<UnaryOp>() : nullptr;
  if (cast == nullptr || cast->opType() != UnaryOpType::Cast || tv->isFusionOutput()) {
    return nullptr;
  }
  auto* in = cast->in()->dynCast<TensorView>();
  if (in == nullptr || !in->isFusionInput()) return nullptr;
  // A narrowing cast would make the persistent copy wider; keep the narrow result then.
  if (dataTypeSize(in->dtype()) > dataTypeSize(tv->dtype())) return nullptr;
  return in;
}

std::vector<TensorView*> persistentBuffers(const Fusion& fusion) {
  std::vector<Expr*> exprs = fusion.exprs();
  std::vector<TensorView*> out;
  std::unordered_set<TensorView*> chosen;
  for (Expr* red : exprs) {
    if (!isReductionExpr(red)) continue;
    // Upstream of the reduction's input, and downstream of its outputs.
    std::unordered_set<const Val*> feeds;
    for (Val* in : red->inputs()) feeds.insert(in);
    for (auto it = exprs.rbegin(); it != exprs.rend(); ++it) {
      bool hit = std::any_of((*it)->outputs().begin(), (*it)->outputs().end(),
                             [&](Val* o) { return feeds.count(o) != 0; });
      if (hit) feeds.insert((*it)->inputs().begin(), (*it)->inputs().end());
    }
    std::unordered_set<const Val*> after(red->outputs().begin(), red->outputs().end());
    for (Expr* e : exprs) {
      bool hit = std::any_of(e->inputs().begin(), e->inputs().end(),
                             [&](Val* i) { return after.count(i) != 0; });
      if (hit) after.insert(e->outputs().begin(), e->outputs().end());
    }
    const size_t row_rank = red->output(0)->as<TensorView>()->logical().size();
    for (const Val* v : feeds) {
      auto* tv = const_cast<Val*>(v)->dynCast<TensorView>();
      // Only whole rows: a tensor with the reduction's rank and no broadcast where it reduces.
      if (tv == nullptr || chosen.count(tv) || tv->rank() != int64_t(row_rank)) continue;
      auto ids = TensorDomain::noReductions(tv->logical());
      bool whole_row = true;
      for (size_t p : reducedPositions(red->output(0)->as<TensorView>())) {
        whole_row = whole_row && !ids[p]->isBroadcast();
      }
      if (!whole_row) continue;
      // A use other than the reduction itself whose result needs the reduction's result.
      bool used_after = std::any_of(tv->uses().begin(), tv->uses().end(), [&](Expr* use) {
        return use != red && std::any_of(use->outputs().begin(), use->outputs().end(),
                           [&](Val* o) { return after.count(o) != 0; });
      });
      if (used_after) {
        chosen.insert(tv);
        out.push_back(tv);
      }
    }
  }
  // Deterministic order: as the tensors appear in the fusion.
  std::vector<TensorView*> ordered;
  for (TensorView* tv : fusion.allTvs()) {
    if (chosen.count(tv)) ordered.push_back(tv);
  }
  return ordered;
}

namespace {

// A tensor of the reduction's rank that is not a broadcast at any reduced position: it holds
// whole rows.
bool holdsRows(const TensorView* tv, const std::vector<size_t>& reduced, size_t row_rank) {
  if (tv->rank() != int64_t(row_rank)) return false;
  auto ids = TensorDomain::noReductions(tv->logical());
  for (size_t p : reduced) {
    if (ids[p]->isBroadcast()) return false;
  }
  return true;
}

bool isPointwise(const Expr* e) {
  return e->outputs().size() == 1 &&
         (e->isA<UnaryOp>() || e->isA<BinaryOp>() || e->isA<TernaryOp>());
}

bool isNarrowingCast(const TensorView* tv) {
  auto* cast = tv->definition() != nullptr ? tv->definition()->dynCast<UnaryOp>() : nullptr;
  return cast != nullptr && cast->opType() == UnaryOpType::Cast &&
         dataTypeSize(cast->in()->dtype()) > dataTypeSize(tv->dtype());
}

// The leaves `buf` can be recomputed from (see BufferPlan), or nullopt: the walk back from `buf`
// through pointwise exprs must end at fusion inputs, at rows already `held`, or at tensors that
// hold no whole row.
std::optional<std::vector<TensorView*>> projectionLeaves(
    TensorView* buf, const std::vector<size_t>& reduced, size_t row_rank,
    const std::unordered_set<const TensorView*>& held) {
  if (buf->isFusionInput() || buf->isFusionOutput()) return std::nullopt;
  std::vector<TensorView*> leaves;
  std::unordered_set<const TensorView*> seen;
  std::vector<TensorView*> work{buf};
  while (!work.empty()) {
    TensorView* t = work.back();
    work.pop_back();
    if (!seen.insert(t).second) continue;
    // A narrowing cast's result is a leaf too: holding it takes fewer bytes than its input.
    bool is_leaf = t != buf && (t->isFusionInput() || held.count(t) != 0 ||
                                !holdsRows(t, reduced, row_rank) || isNarrowingCast(t));
    if (is_leaf) {
      leaves.push_back(t);
      continue;
    }
    Expr* def = t->definition();
    // A whole-row intermediate made by anything else (a broadcast of a row, a reshape) would
    // have to stay on chip itself: no gain.
    if (def == nullptr || !isPointwise(def) || t->domain()->hasRoot()) return std::nullopt;
    for (Val* in : def->inputs()) {
      if (auto* tin = in->dynCast<TensorView>()) work.push_back(tin);
    }
  }
  return leaves;
}

}  // namespace

int64_t BufferPlan::bytesPerElement() const {
  int64_t bytes = 0;
  for (const TensorView* tv : held) bytes += int64_t(dataTypeSize(tv->dtype()));
  return bytes;
}

BufferPlan planPersistentBuffers(const Fusion& fusion) {
  std::vector<TensorView*> reds = utils::reductionTvs(fusion);
  return reds.empty() ? BufferPlan{} : planPersistentBuffers(fusion, reds.front());
}

BufferPlan planPersistentBuffers(const Fusion& fusion, const TensorView* ref) {
  BufferPlan plan;
  std::vector<TensorView*> buffers = persistentBuffers(fusion);
  if (buffers.empty()) return plan;
  const std::vector<size_t> reduced = reducedPositions(ref);
  const size_t row_rank = ref->logical().size();
  std::unordered_set<const TensorView*> held;
  auto hold = [&](TensorView* tv) {
    if (held.insert(tv).second) plan.held.push_back(tv);
  };
  for (TensorView* buf : buffers) {
    if (buf->isFusionInput()) hold(buf);
  }
  for (TensorView* buf : buffers) {
    if (buf->isFusionInput()) continue;
    std::optional<std::vector<TensorView*>> leaves =
        projectionLeaves(buf, reduced, row_rank, held);
    int64_t added = 0;
    if (leaves) {
      for (TensorView* leaf : *leaves) {
        if (holdsRows(leaf, reduced, row_rank) && !held.count(leaf)) {
          added += int64_t(dataTypeSize(leaf->dtype()));
        }
      }
    }
    if (!leaves || added > int64_t(dataTypeSize(buf->dtype()))) {
      hold(buf);
      continue;
    }
    for (TensorView* leaf : *leaves) {
      if (holdsRows(leaf, reduced, row_rank)) hold(leaf);
    }
    plan.projected.push_back({buf, std::move(*leaves)});
  }
  return plan;
}

bool innerPersistentCompileTimeCheck(const Fusion& fusion, std::string* why) {
  bool has_tensor_output = false;
  for (Val* o : fusion.outputs()) {
    if (!o->isA<TensorView>()) return reject(why, "output " + o->toString() + " is a scalar");
    has_tensor_output = true;
  }
  if (!has_tensor_output) return reject(why, "the fusion has no tensor output");
  if (!utils::fitsOneKernel(fusion, why)) return false;
  for (TensorView* tv : fusion.allTvs()) {
    if (tv->domain()->hasRoot()) {
      return reject(why, "tensor " + tv->toString() +
                             " has a root domain (reshape or permute); not supported");
    }
    for (IterDomain* id : tv->loop()) {
      if (id->isParallelized() && !id->isDeviceDim()) {
        return reject(why, "tensor " + tv->toString() + " is already parallelized");
      }
      if (!isUnscheduledLoopId(tv, id)) {
        return reject(why, "tensor " + tv->toString() + " is already scheduled");
      }
    }
  }
  std::vector<TensorView*> reds = utils::reductionTvs(fusion);
  if (reds.empty()) return reject(why, "no reduction");
  const TensorView* ref = reds.front();
  std::vector<size_t> ref_pos = reducedPositions(ref);
  const transform::IdGraph exact(fusion, transform::IdMappingMode::Exact);
  for (TensorView* tv : reds) {
    std::vector<size_t> pos = reducedPositions(tv);
    bool same_dims = tv->logical().size() == ref->logical().size() && pos == ref_pos;
    // The same dims, not just the same positions (a reduction of a transposed copy reduces
    // another dim at the same position): one row loop and one reduction loop serve them all.
    for (size_t i = 0; same_dims && i < tv->logical().size(); ++i) {
      IterDomain* a = ref->logical()[i];
      IterDomain* b = tv->logical()[i];
      same_dims = a->isBroadcast() || b->isBroadcast() || exact.areMapped(a, b);
    }
    if (!same_dims) {
      return reject(why, "reductions " + ref->toString() + " and " + tv->toString() +
                             " reduce different dims");
    }
    // Reduced dims must be the innermost ones (an inner, not outer, persistent normalization).
    for (size_t i = 0; i < pos.size(); ++i) {
      if (pos[i] != tv->logical().size() - pos.size() + i) {
        return reject(why, "reduction " + tv->toString() + " does not reduce the innermost dims");
      }
    }
    for (IterDomain* id : tv->loop()) {
      if (id->isDeviceDim() && id->isReduction()) {
        return reject(why, "reduction " + tv->toString() +
                               " reduces a device-sharded dim (needs a communication)");
      }
    }
  }
  // The rows must be innermost in memory too (utils::memoryOrder): an input laid out with the
  // reduced dims outermost (stride_order) would have every thread stride through memory.
  if (const TensorView* layout = utils::memoryOrderInput(fusion, exact, ref);
      layout != nullptr && !utils::reducesTrailingRun(utils::memoryOrder(fusion, exact, ref))) {
    return reject(why, "reduction " + ref->toString() + " reduces the innermost logical dims, but " +
                           layout->toString() +
                           " holds them outermost in memory (its allocation order): an outer "
                           "reduction there");
  }
  if (persistentBuffers(fusion).empty()) {
    return reject(why, "no persistent buffer: no row is needed after its reduction (the "
                       "reduction scheduler's case)");
  }
  return true;
}

namespace {

// Sizes shared by the run-time check and the heuristic.
struct RowSizes {
  int64_t row = 1;   // elements per row
  int64_t rows = 1;  // rows in this device's shard
  int64_t bytes_per_element = 0;  // register bytes per row element (buffers and input caches)
  int64_t persistent_bytes_per_element = 0;  // the persistent buffers only (shared memory mode)
  bool held_rows_are_inputs = true;  // every held row can be read again from global memory
};

std::vector<IterDomain*> rowIds(const TensorView* ref) {
  std::vector<IterDomain*> ids;
  for (IterDomain* id : ref->logical()) {
    if (id->isReduction()) ids.push_back(id);
  }
  return ids;
}

// Tensors accessed along the row with vector accesses: the inputs holding the innermost row ID
// (their register caches) and the whole-row outputs.
std::vector<TensorView*> rowAccessedTensors(const Fusion& fusion, const transform::IdGraph& exact,
                                           const TensorView* ref) {
  std::vector<TensorView*> out;
  for (TensorView* tv : utils::innerAlignedTensors(fusion, exact, ref, rowIds(ref))) {
    if (tv->isFusionInput() ? !tv->uses().empty() : tv->isFusionOutput()) out.push_back(tv);
  }
  return out;
}

// `ref`: the first reduction; `row_accessed`: rowAccessedTensors(fusion, ...), both computed
// once by the caller (each walks the whole fusion).
RowSizes rowSizes(const Fusion& fusion, const TensorView* ref,
                  const std::vector<TensorView*>& row_accessed, SchedulerRuntimeInfo& info) {
  RowSizes s;
  for (IterDomain* id : ref->logical()) {
    if (id->isReduction()) s.row *= info.extent(id, ref);
  }
  // Rows from the loop domain: DID pieces have extent 1 inside a kernel.
  for (IterDomain* id : ref->loop()) {
    if (!id->isReduction() && !id->isDeviceDim()) s.rows *= info.extent(id, ref);
  }
  // Projected buffers persist as the input rows they are recomputed from (BufferPlan).
  const BufferPlan buffers = planPersistentBuffers(fusion);
  s.persistent_bytes_per_element = buffers.bytesPerElement();
  for (const TensorView* tv : buffers.held) {
    s.held_rows_are_inputs = s.held_rows_are_inputs && tv->isFusionInput();
  }
  std::unordered_set<TensorView*> held(buffers.held.begin(), buffers.held.end());
  // Every cached input row stays in registers too (layer_norm's weight and bias).
  for (TensorView* tv : row_accessed) {
    if (tv->isFusionInput()) held.insert(tv);
  }
  for (TensorView* tv : held) s.bytes_per_element += int64_t(dataTypeSize(tv->dtype()));
  return s;
}

// Registers a thread needs besides its row data, as measured at the most threads per row (the
// planning overhead kRegisterOverhead is a margin on top of that).
constexpr int64_t kMeasuredRegisterSlack = 16;

// Whether a batch of `elems` row elements of each persistent buffer, plus `overhead` registers,
// fits a thread of a block of `threads_per_block` threads.
bool fitsRegisters(const DeviceInfo& d, int64_t bytes_per_element, int64_t elems,
                   int64_t threads_per_block, int64_t overhead = kRegisterOverhead) {
  int64_t regs = overhead + utils::ceilDiv(bytes_per_element * elems, 4);
  return regs <= d.max_registers_per_thread &&
         regs * roundUp(threads_per_block, d.warp_size) <= d.registers_per_sm;
}

}  // namespace

bool reloadedRowsStayInL2(const InnerPersistentParams& params, const DeviceInfo& device) {
  const int64_t threads = roundUp(params.threads_per_row * params.rows_per_block, device.warp_size);
  const int64_t blocks_per_sm =
      std::max<int64_t>(1, device.max_threads_per_sm / std::max<int64_t>(1, threads));
  const int64_t in_flight =
      device.sm_count * blocks_per_sm * params.rows_per_block * params.buffer_bytes_per_row;
  return in_flight <= device.l2_bytes / 4 * 3;
}

namespace {

// Fills the schedule fields of `p`; false (with the reason) when no plan fits.
bool plan(const Fusion& fusion, SchedulerRuntimeInfo& info, InnerPersistentParams& p,
          std::string* why) {
  const DeviceInfo& d = info.device();
  // One exact graph for every ID question below: the fusion does not change while planning.
  const transform::IdGraph exact(fusion, transform::IdMappingMode::Exact);
  TensorView* ref = utils::reductionTvs(fusion).front();
  const std::vector<TensorView*> row_accessed = rowAccessedTensors(fusion, exact, ref);
  RowSizes s = rowSizes(fusion, ref, row_accessed, info);
  p.row_size = s.row;
  p.rows = s.rows;
  p.buffer_bytes_per_row = s.row * s.persistent_bytes_per_element;
  if (s.row == 0 || s.rows == 0) {
    return reject(why, "zero-size rows (" + std::to_string(s.rows) + " rows of " +
                           std::to_string(s.row) + " elements)");
  }
  p.vectorize =
      std::max<int64_t>(1, utils::maxVectorWidth(exact, info, ref, rowIds(ref), row_accessed));
  p.peel = false;
  if (const int64_t peeled = utils::maxPeeledVectorWidth(exact, info, rowIds(ref), row_accessed);
      peeled > p.vectorize && s.row >= utils::kMinPeeledVectors * peeled &&
      utils::peelableRow(fusion, ref, nullptr)) {
    p.vectorize = peeled;
    p.peel = true;
  }
  const int64_t units = utils::ceilDiv(s.row, p.vectorize);
  auto threads = [&](int64_t pb) { return utils::ceilDiv(units, pb); };
  auto fits = [&](int64_t pb) {
    return fitsRegisters(d, s.bytes_per_element, pb * p.vectorize, threads(pb));
  };

  // Registers: about kTargetValues row elements per thread (enough independent 16-byte loads in
  // flight, few enough registers for several blocks per SM), blocks of kMinThreads..kMaxThreads.
  const int64_t max_threads = std::min(d.max_threads_per_block, kMaxThreadsPerRow);
  int64_t target_values = kTargetValues;
  int64_t max_values = kMaxValues;
  // The bytes of the persistent rows only: weights (layer_norm's weight and bias) are read once
  // at the end, not held through the reductions. layer_norm of [4096, 16384] bf16 on the H100
  // took 94.7 us at 64 values a thread (x's 2 bytes) against 124.3 at 32 (x, weight and bias's
  // 6 bytes), rms_norm 94.3 against 105.3 (run 33).
  if (s.rows >= kLatencyBoundRowsPerSm * d.sm_count && s.persistent_bytes_per_element > 0) {
    target_values = std::max(target_values, kTargetBufferBytes / s.persistent_bytes_per_element);
    max_values = std::max(max_values, target_values);
  }
  int64_t pb = std::max<int64_t>(1, target_values / p.vectorize);
  const int64_t pb_soft_max = std::max<int64_t>(1, max_values / p.vectorize);
  while (threads(pb) > kMaxThreads && pb < pb_soft_max) ++pb;  // long rows: more per thread
  while (threads(pb) > max_threads) ++pb;                      // very long rows: block limit
  // Short rows: fewer values per thread until a row has kMinThreads threads, but where rows are
  // latency-bound keep kMinVectorsInFlight vector loads per thread (rows then share a block
  // along TIDy): each row's two block reductions cost less over fewer threads than the loads
  // they hide. softmax of [262144, 256] bf16 on the H100 took 103 us at 4 vectors a thread (8
  // threads a row) against 122 at 1 (32 threads), [65536, 1024] 106 against 131; fp32 rows
  // were as fast either way (run 33).
  const int64_t min_pb =
      s.rows >= kLatencyBoundRowsPerSm * d.sm_count ? std::min(kMinVectorsInFlight, units) : 1;
  while (pb > min_pb && threads(pb) < kMinThreads && threads(pb - 1) <= kMaxThreads) --pb;
  while (!fits(pb) && pb > 1 && threads(pb - 1) <= max_threads) --pb;  // fewer values, more threads
  p.shared_memory = false;
  p.reload_rows = false;
  const int64_t min_reload_rows = std::max<int64_t>(1, d.sm_count / kReloadRowsPerSmDivisor);
  // Scalar rows (an odd width: no vector loads) too wide for kMaxValues a thread at the most
  // threads are read again by each pass when the rows in flight stay in L2: the second read
  // costs L2 bandwidth, while holding the row would take one scalar load per element into
  // registers or shared memory behind the reductions' barriers. H100 run 33, width 50257 (26
  // MB of bf16 rows in flight, of a 50 MB L2): layer_norm bf16 239 against 316 us in shared
  // memory, softmax 243 against 310 in registers, var_mean 97 against 105; fp32 rows (53 MB in
  // flight) were faster held: softmax 296 against 507, var_mean 147 against 273. Peeled rows
  // (the same odd widths, now with vector loads) keep the rule until the peel is timed on a GPU
  // (benchmarks/sweeps/h100-tune-peel.txt times them held and reloaded).
  if ((p.vectorize == 1 || p.peel) && utils::ceilDiv(s.row, kMaxValues) > max_threads &&
      s.held_rows_are_inputs && s.rows >= min_reload_rows) {
    InnerPersistentParams reload = p;
    reload.persistent_batch = utils::ceilDiv(units, max_threads);
    reload.threads_per_row = threads(reload.persistent_batch);
    reload.reload_rows = true;
    reload.rows_per_block = 1;
    if (reloadedRowsStayInL2(reload, d)) {
      p = reload;
      return true;
    }
  }
  // The overhead above is a planning margin, not what ptxas needs: at the most threads a row
  // may have, rows whose held data leaves kMeasuredRegisterSlack registers free still run from
  // registers, and faster than from shared memory (H100 run 33: softmax bf16 65536 145 against
  // 172 us, var_mean bf16 65536 60 against 104, layer_norm bf16 32768 111 against 165; rows that
  // needed more, layer_norm bf16 65536 at 96 data registers, spilled: 299 against 165).
  if (!fits(pb)) {
    const int64_t widest_pb = std::max<int64_t>(1, utils::ceilDiv(units, max_threads));
    if (fitsRegisters(d, s.bytes_per_element, widest_pb * p.vectorize, threads(widest_pb),
                      kMeasuredRegisterSlack)) {
      p.persistent_batch = widest_pb;
      p.threads_per_row = threads(widest_pb);
      p.rows_per_block = 1;
      return true;
    }
  }
  p.persistent_batch = pb;
  p.threads_per_row = threads(pb);
  if (!fits(pb)) {
    // Shared memory: the whole row of every buffer in the block, as many threads as allowed,
    // next to the block reductions' workspace.
    p.persistent_batch = utils::ceilDiv(units, max_threads);
    p.threads_per_row = threads(p.persistent_batch);
    const int64_t workspace = kReductionWorkspacePerThread * roundUp(p.threads_per_row,
                                                                     d.warp_size);
    if (p.buffer_bytes_per_row + workspace > d.shared_memory_per_block) {
      // Reading the rows again needs enough rows to keep the SMs busy with one block each;
      // fewer, wider rows are better split over blocks by the segmenter's reductions.
      const int64_t min_rows = min_reload_rows;
      if (!s.held_rows_are_inputs || s.rows < min_rows) {
        int64_t reg_bytes = (std::min(d.max_registers_per_thread,
                                      d.registers_per_sm / max_threads) -
                             kRegisterOverhead) * 4 * max_threads;
        return reject(why, "rows of " + std::to_string(s.row) + " elements need " +
                               std::to_string(p.buffer_bytes_per_row) +
                               " bytes of persistent buffers each; registers hold at most " +
                               std::to_string(reg_bytes) + " and shared memory " +
                               std::to_string(d.shared_memory_per_block) +
                               " bytes per block, and " +
                               (s.held_rows_are_inputs
                                    ? std::to_string(s.rows) + " rows are too few (under " +
                                          std::to_string(min_rows) +
                                          ") to read them again block by block"
                                    : std::string("a buffer that is not an input row cannot be "
                                                  "read again from global memory")));
      }
      // Wider still: each pass reads the input rows again (one kernel, no persistence).
      p.reload_rows = true;
      p.rows_per_block = 1;
      return true;
    }
    p.shared_memory = true;
  }

  // Narrow rows share a block along TIDy, as long as the grid still fills the SMs.
  p.rows_per_block = 1;
  if (!p.shared_memory && p.threads_per_row < kMinThreads) {
    int64_t rpb = utils::floorPow2(kMinThreads / p.threads_per_row);
    rpb = std::min(rpb, utils::floorPow2(std::max<int64_t>(1, s.rows / d.sm_count)));
    while (rpb > 1 && !fitsRegisters(d, s.bytes_per_element, p.persistent_batch * p.vectorize,
                                     rpb * p.threads_per_row)) {
      rpb /= 2;
    }
    p.rows_per_block = std::max<int64_t>(1, rpb);
  }
  return true;
}

}  // namespace

bool innerPersistentRunTimeCheck(const Fusion& fusion, SchedulerRuntimeInfo& info,
                                 std::string* why) {
  InnerPersistentParams p;
  return plan(fusion, info, p, why);
}

std::unique_ptr<InnerPersistentParams> innerPersistentHeuristics(const Fusion& fusion,
                                                                 SchedulerRuntimeInfo& info) {
  auto p = std::make_unique<InnerPersistentParams>();
  std::string why;
  LOOM_CHECK(plan(fusion, info, *p, &why), "inner persistent heuristics: ", why);
  return p;
}

namespace {

class InnerPersistentScheduler final : public Scheduler {
 public:
  SchedulerType type() const override { return SchedulerType::InnerPersistent; }
  bool canScheduleCompileTime(const Fusion& fusion, std::string* why) const override {
    return utils::hasNoScan(fusion, why) && utils::hasNoSort(fusion, why) &&
           utils::hasNoScatterAdd(fusion, why) &&
           innerPersistentCompileTimeCheck(fusion, why);
  }
  bool canScheduleRunTime(const Fusion& fusion, SchedulerRuntimeInfo& info,
                          std::string* why) const override {
    return innerPersistentRunTimeCheck(fusion, info, why);
  }
  std::unique_ptr<HeuristicParams> computeHeuristics(const Fusion& fusion,
                                                     SchedulerRuntimeInfo& info) const override {
    return innerPersistentHeuristics(fusion, info);
  }
  void schedule(Fusion& fusion, const HeuristicParams& params) const override {
    auto* p = dynamic_cast<const InnerPersistentParams*>(&params);
    LOOM_CHECK(p != nullptr, "inner persistent scheduler given ", params.toString());
    scheduleInnerPersistent(fusion, *p);
  }
};

}  // namespace

std::unique_ptr<Scheduler> makeInnerPersistentScheduler() {
  return std::make_unique<InnerPersistentScheduler>();
}

}  // namespace loom::scheduler
