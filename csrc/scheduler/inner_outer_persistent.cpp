// SPDX-License-Identifier: Apache-2.0
// The inner-outer-persistent scheduler: checks and heuristics. The schedule itself is in
// inner_outer_persistent_schedule.cpp.
#include "loom/scheduler/inner_outer_persistent.h"

#include <algorithm>
#include <unordered_set>

#include "loom/ir/exprs.h"
#include "loom/ir/iter_domain.h"
#include "loom/scheduler/memory_order.h"
#include "loom/scheduler/normalization.h"
#include "loom/scheduler/utils.h"
#include "loom/transform/id_graph.h"

namespace loom::scheduler {

using namespace loom::ir;

namespace {

// Registers a thread needs besides its row data and partials (indices, temporaries), as in the
// inner-persistent plan.
constexpr int64_t kRegisterOverhead = 48;
// Row elements per thread the plan starts from: a thread's batch is its vector loads in flight
// per row, and also the number of per-column partials it keeps for each outer reduction.
constexpr int64_t kTargetValues = 16;
// Threads per row: fewer only for short rows, more only for long ones.
constexpr int64_t kMinThreads = 128;
constexpr int64_t kMaxThreads = 512;
// Shared memory of the block reductions per thread (inner-persistent's workspace).
constexpr int64_t kReductionWorkspacePerThread = 16;

bool reject(std::string* why, std::string msg) {
  if (why != nullptr) *why = std::move(msg);
  return false;
}

std::vector<size_t> reducedPositions(const TensorView* tv) {
  std::vector<size_t> pos;
  for (size_t i = 0; i < tv->logical().size(); ++i) {
    if (tv->logical()[i]->isReduction()) pos.push_back(i);
  }
  return pos;
}

int64_t roundUp(int64_t x, int64_t m) { return utils::ceilDiv(x, m) * m; }

bool isPointwise(const Expr* e) {
  return e->outputs().size() == 1 &&
         (e->isA<UnaryOp>() || e->isA<BinaryOp>() || e->isA<TernaryOp>());
}

// Everything computed from an outer reduction's result must be [row]-shaped math that only the
// last block (the one that finishes the grid reduction) evaluates: pointwise exprs of outer
// results and fusion inputs. Reading one back into the rows would need every block to wait for
// the grid (the outer-persistent scheduler's case).
bool outerResultsOnlyOutput(const Fusion& fusion, const std::vector<TensorView*>& outer,
                            std::string* why) {
  std::unordered_set<const Val*> downstream(outer.begin(), outer.end());
  for (Expr* e : fusion.exprs()) {
    bool hit = std::any_of(e->inputs().begin(), e->inputs().end(),
                           [&](Val* v) { return downstream.count(v) != 0; });
    if (!hit) continue;
    if (!isPointwise(e)) {
      return reject(why, "the result of an outer reduction is used by " + e->toString() +
                             " (only pointwise math on it to an output fits one pass)");
    }
    for (Val* in : e->inputs()) {
      auto* tv = in->dynCast<TensorView>();
      if (tv != nullptr && downstream.count(tv) == 0 && !tv->isFusionInput()) {
        return reject(why, "the result of an outer reduction meets computed tensor " +
                               tv->toString() + " in " + e->toString());
      }
    }
    downstream.insert(e->outputs().begin(), e->outputs().end());
  }
  return true;
}

}  // namespace

InnerOuterReductions classifyInnerOuter(const Fusion& fusion, std::string* why) {
  InnerOuterReductions r;
  std::vector<Expr*> exprs = utils::reductionExprs(fusion);
  for (Expr* e : exprs) {
    if (!e->isA<ReductionOp>()) {
      reject(why, "reduction " + e->toString() + " is not a ReductionOp (a Welford)");
      return {};
    }
  }
  // Inner reductions reduce a trailing run of dims; outer ones the leading run the inner ones
  // keep. The first reduction that is neither decides nothing: it is rejected below.
  for (TensorView* tv : utils::reductionTvs(fusion)) {
    std::vector<size_t> pos = reducedPositions(tv);
    const size_t rank = tv->logical().size();
    bool trailing = !pos.empty() && pos.back() == rank - 1 && pos.size() < rank;
    bool leading = !pos.empty() && pos.front() == 0 && pos.size() < rank;
    for (size_t i = 0; i < pos.size(); ++i) {
      trailing = trailing && pos[i] == rank - pos.size() + i;
      leading = leading && pos[i] == i;
    }
    if (trailing) {
      r.inner.push_back(tv);
    } else if (leading) {
      r.outer.push_back(tv);
    } else {
      reject(why, "reduction " + tv->toString() +
                      " reduces neither the innermost dims nor the leading dims (or all dims)");
      return {};
    }
  }
  if (r.inner.empty() || r.outer.empty()) {
    reject(why, r.inner.empty() ? "no reduction of the innermost dims (grad input's)"
                                : "no reduction of the leading dims (grad weight's or bias's)");
    return {};
  }
  // The same dims: every inner reduction reduces what the first one reduces, and every outer
  // reduction exactly the dims the first inner one keeps.
  const transform::IdGraph exact(fusion, transform::IdMappingMode::Exact);
  const TensorView* ref = r.inner.front();
  const size_t rank = ref->logical().size();
  auto sameDims = [&](const TensorView* tv, bool complement) {
    if (tv->logical().size() != rank) return false;
    for (size_t i = 0; i < rank; ++i) {
      IterDomain* a = ref->logical()[i];
      IterDomain* b = tv->logical()[i];
      if (a->isBroadcast() || b->isBroadcast()) return false;
      if (!exact.areMapped(a, b)) return false;
      if ((a->isReduction() != b->isReduction()) != complement) return false;
    }
    return true;
  };
  for (TensorView* tv : r.inner) {
    if (!sameDims(tv, false)) {
      reject(why, "inner reductions " + ref->toString() + " and " + tv->toString() +
                      " reduce different dims");
      return {};
    }
  }
  for (TensorView* tv : r.outer) {
    if (!sameDims(tv, true)) {
      reject(why, "outer reduction " + tv->toString() + " does not reduce exactly the dims " +
                      ref->toString() + " keeps");
      return {};
    }
  }
  // The inner reductions' rows must be innermost in memory too (utils::memoryOrder; an input
  // laid out otherwise by its stride_order makes them outer reductions there).
  if (const TensorView* layout = utils::memoryOrderInput(fusion, exact, ref);
      layout != nullptr && !utils::reducesTrailingRun(utils::memoryOrder(fusion, exact, ref))) {
    reject(why, "reduction " + ref->toString() + " reduces the innermost logical dims, but " +
                    layout->toString() +
                    " holds them outermost in memory (its allocation order)");
    return {};
  }
  return r;
}

bool innerOuterPersistentCompileTimeCheck(const Fusion& fusion, std::string* why) {
  if (!utils::isPlainUnscheduledFusion(fusion, why)) return false;
  if (!utils::hasNoScan(fusion, why) || !utils::hasNoSort(fusion, why) ||
      !utils::hasNoScatterAdd(fusion, why)) {
    return false;
  }
  for (TensorView* tv : fusion.allTvs()) {
    if (tv->domain()->hasRoot()) {
      return reject(why, "tensor " + tv->toString() +
                             " has a root domain (reshape or permute); not supported");
    }
  }
  if (utils::reductionExprs(fusion).empty()) return reject(why, "no reduction");
  InnerOuterReductions r = classifyInnerOuter(fusion, why);
  if (r.inner.empty()) return false;
  if (!outerResultsOnlyOutput(fusion, r.outer, why)) return false;
  if (planPersistentBuffers(fusion, r.inner.front()).held.empty()) {
    return reject(why, "no persistent buffer: no row is needed after its inner reduction");
  }
  return true;
}

namespace {

std::vector<IterDomain*> rowIds(const TensorView* ref) {
  std::vector<IterDomain*> ids;
  for (IterDomain* id : ref->logical()) {
    if (id->isReduction()) ids.push_back(id);
  }
  return ids;
}

// Registers of one thread: `bytes` per row element of its batch, plus the overhead.
int64_t registersFor(int64_t bytes_per_element, int64_t elements) {
  return kRegisterOverhead + utils::ceilDiv(bytes_per_element * elements, 4);
}

bool fitsRegisters(const DeviceInfo& d, int64_t regs, int64_t threads) {
  return regs <= d.max_registers_per_thread &&
         regs * roundUp(threads, d.warp_size) <= d.registers_per_sm;
}

// What one row element costs a thread, by where it lives.
struct ElementBytes {
  int64_t held = 0;       // input rows held through the row's reductions (registers or shared)
  int64_t invariant = 0;  // row-invariant inputs (weight) held across rows in registers
  int64_t partials = 0;   // the outer reductions' per-column partials (registers)
};

ElementBytes elementBytes(const Fusion& fusion, const InnerOuterReductions& r,
                          const std::vector<TensorView*>& row_accessed) {
  ElementBytes b;
  const BufferPlan plan = planPersistentBuffers(fusion, r.inner.front());
  b.held = plan.bytesPerElement();
  std::unordered_set<const TensorView*> held(plan.held.begin(), plan.held.end());
  const size_t rank = r.inner.front()->logical().size();
  for (TensorView* tv : row_accessed) {
    // A row-accessed input of lower rank (no row dim) is row-invariant: the weight.
    if (tv->isFusionInput() && held.count(tv) == 0 && int64_t(rank) > tv->rank()) {
      b.invariant += int64_t(dataTypeSize(tv->dtype()));
    }
  }
  for (TensorView* tv : r.outer) {
    b.partials += std::max<int64_t>(4, int64_t(dataTypeSize(tv->dtype())));
  }
  return b;
}

// Fills the schedule fields of `p`; false (with the reason) when no plan fits.
bool plan(const Fusion& fusion, SchedulerRuntimeInfo& info, InnerOuterPersistentParams& p,
          std::string* why) {
  const DeviceInfo& d = info.device();
  InnerOuterReductions r = classifyInnerOuter(fusion, why);
  LOOM_ASSERT(!r.inner.empty(), "inner-outer plan of a fusion its check rejects");
  TensorView* ref = r.inner.front();
  const transform::IdGraph exact(fusion, transform::IdMappingMode::Exact);
  std::vector<TensorView*> row_accessed;
  for (TensorView* tv : utils::innerAlignedTensors(fusion, exact, ref, rowIds(ref))) {
    if (tv->isFusionInput() ? !tv->uses().empty() : tv->isFusionOutput()) {
      row_accessed.push_back(tv);
    }
  }
  p.row_size = 1;
  p.rows = 1;
  for (IterDomain* id : ref->logical()) {
    (id->isReduction() ? p.row_size : p.rows) *= info.extent(id, ref);
  }
  if (p.row_size == 0 || p.rows == 0) {
    return reject(why, "zero-size rows (" + std::to_string(p.rows) + " rows of " +
                           std::to_string(p.row_size) + " elements)");
  }
  p.vectorize =
      std::max<int64_t>(1, utils::maxVectorWidth(exact, info, ref, rowIds(ref), row_accessed));
  const ElementBytes bytes = elementBytes(fusion, r, row_accessed);
  const int64_t units = utils::ceilDiv(p.row_size, p.vectorize);
  const int64_t max_threads = d.max_threads_per_block;
  auto threads = [&](int64_t pb) { return utils::ceilDiv(units, pb); };
  auto regs = [&](int64_t pb, bool shared) {
    int64_t b = bytes.partials + (shared ? 0 : bytes.held + bytes.invariant);
    return registersFor(b, pb * p.vectorize);
  };
  auto fits = [&](int64_t pb) {
    return threads(pb) <= max_threads && fitsRegisters(d, regs(pb, false), threads(pb));
  };
  int64_t pb = std::max<int64_t>(1, kTargetValues / p.vectorize);
  while (threads(pb) > kMaxThreads && fits(pb + 1)) ++pb;  // long rows: more per thread
  while (threads(pb) > max_threads) ++pb;                  // very long rows: block limit
  while (pb > 1 && threads(pb) < kMinThreads) --pb;        // short rows: more threads
  while (!fits(pb) && pb > 1 && threads(pb - 1) <= max_threads) --pb;  // fewer values a thread
  p.shared_memory = false;
  if (!fits(pb)) {
    // The held rows in shared memory, the partials (and nothing else) in registers: the most
    // threads a block may have whose partials fit the SM's registers.
    pb = utils::ceilDiv(units, max_threads);
    while (!fitsRegisters(d, regs(pb, true), threads(pb)) && threads(pb) > d.warp_size) ++pb;
    const int64_t smem =
        p.row_size * bytes.held + kReductionWorkspacePerThread * roundUp(threads(pb), d.warp_size);
    // The lowering sizes shared buffers from constants: symbolic row extents cannot go there.
    bool constant_row = true;
    for (IterDomain* id : rowIds(ref))
      constant_row = constant_row && id->extent()->constInt().has_value();
    if (!constant_row) {
      return reject(why, "rows of " + std::to_string(p.row_size) + " elements need " +
                             std::to_string(bytes.held + bytes.invariant + bytes.partials) +
                             " bytes a row element in registers, more than a block has, and "
                             "rows of a symbolic width cannot be held in shared memory; the "
                             "segmenter splits the fusion");
    }
    if (smem > d.shared_memory_per_block || !fitsRegisters(d, regs(pb, true), threads(pb))) {
      return reject(why, "rows of " + std::to_string(p.row_size) + " elements need " +
                             std::to_string(bytes.held + bytes.invariant + bytes.partials) +
                             " bytes a row element (held rows " + std::to_string(bytes.held) +
                             ", weights " + std::to_string(bytes.invariant) + ", outer partials " +
                             std::to_string(bytes.partials) + "): neither registers (" +
                             std::to_string(d.registers_per_sm) + " per SM) nor shared memory (" +
                             std::to_string(d.shared_memory_per_block) +
                             " bytes per block) hold them; the segmenter splits the fusion");
    }
    p.shared_memory = true;
  }
  p.persistent_batch = pb;
  p.threads_per_row = threads(pb);
  p.registers_per_thread = regs(pb, p.shared_memory);
  // As many blocks as the SMs hold at once: each walks rows_per_block rows, and the fewer the
  // blocks, the fewer partials the grid reduction combines.
  const int64_t block_threads = roundUp(p.threads_per_row, d.warp_size);
  int64_t per_sm = std::min(d.max_threads_per_sm / block_threads,
                            d.registers_per_sm / (p.registers_per_thread * block_threads));
  if (p.shared_memory) {
    const int64_t smem = p.row_size * bytes.held;
    per_sm = std::min(per_sm, std::max<int64_t>(1, d.shared_memory_per_block / smem));
  }
  const int64_t max_blocks = d.sm_count * std::max<int64_t>(1, per_sm);
  p.rows_per_block = utils::ceilDiv(p.rows, max_blocks);
  p.blocks = utils::ceilDiv(p.rows, p.rows_per_block);
  return true;
}

}  // namespace

bool innerOuterPersistentRunTimeCheck(const Fusion& fusion, SchedulerRuntimeInfo& info,
                                      std::string* why) {
  InnerOuterPersistentParams p;
  return plan(fusion, info, p, why);
}

std::unique_ptr<InnerOuterPersistentParams> innerOuterPersistentHeuristics(
    const Fusion& fusion, SchedulerRuntimeInfo& info) {
  auto p = std::make_unique<InnerOuterPersistentParams>();
  std::string why;
  LOOM_CHECK(plan(fusion, info, *p, &why), "inner-outer persistent heuristics: ", why);
  return p;
}

namespace {

class InnerOuterPersistentScheduler final : public Scheduler {
 public:
  SchedulerType type() const override { return SchedulerType::InnerOuterPersistent; }
  bool canScheduleCompileTime(const Fusion& fusion, std::string* why) const override {
    return innerOuterPersistentCompileTimeCheck(fusion, why);
  }
  bool canScheduleRunTime(const Fusion& fusion, SchedulerRuntimeInfo& info,
                          std::string* why) const override {
    return innerOuterPersistentRunTimeCheck(fusion, info, why);
  }
  std::unique_ptr<HeuristicParams> computeHeuristics(const Fusion& fusion,
                                                     SchedulerRuntimeInfo& info) const override {
    return innerOuterPersistentHeuristics(fusion, info);
  }
  void schedule(Fusion& fusion, const HeuristicParams& params) const override {
    auto* p = dynamic_cast<const InnerOuterPersistentParams*>(&params);
    LOOM_CHECK(p != nullptr, "inner-outer persistent scheduler given ", params.toString());
    scheduleInnerOuterPersistent(fusion, *p);
  }
};

}  // namespace

std::unique_ptr<Scheduler> makeInnerOuterPersistentScheduler() {
  return std::make_unique<InnerOuterPersistentScheduler>();
}

}  // namespace loom::scheduler
