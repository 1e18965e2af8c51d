// SPDX-License-Identifier: Apache-2.0
// The outer-persistent scheduler's checks and heuristic: which fusions it takes (a reduction over
// outer dims whose result is used with the same data), and a plan whose grid the device holds at
// once (the kernel waits at a grid barrier), or a rejection naming why, so the segmenter splits.
#include "loom/scheduler/outer_persistent.h"

#include <algorithm>

#include "loom/ir/exprs.h"
#include "loom/scheduler/memory_order.h"
#include "loom/scheduler/normalization.h"
#include "loom/scheduler/utils.h"
#include "loom/transform/id_graph.h"

namespace loom::scheduler {

using namespace loom::ir;

namespace {

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

// A register is 4 bytes; a thread needs about this many besides its held elements (indices,
// accumulators, the grid all-reduce's pointers). ptxas rounds allocations to 8 registers.
constexpr int64_t kBaseRegisters = 40;
// Held bytes per thread at most (64 registers): beyond that the batch spills or starves occupancy.
constexpr int64_t kMaxHeldBytesPerThread = 256;
constexpr int64_t kThreadsPerBlock = 256;

int64_t registersFor(int64_t held_bytes) {
  return std::min<int64_t>(255, (kBaseRegisters + (held_bytes + 3) / 4 + 7) / 8 * 8);
}

struct Sizes {
  int64_t columns = 1, reduced = 1, bytes_per_element = 0;
  bool inner_reduced = false;
};

Sizes sizesOf(const Fusion& fusion, SchedulerRuntimeInfo& info) {
  Sizes s;
  const TensorView* ref = utils::reductionTvs(fusion).front();
  std::vector<IterDomain*> kept, red;
  for (IterDomain* id : ref->logical()) {
    if (id->isBroadcast()) continue;
    (id->isReduction() ? red : kept).push_back(id);
  }
  s.columns = utils::product(info, ref, kept);
  s.reduced = utils::product(info, ref, red);
  // Whether the reduced dims hold the innermost one in memory (utils::memoryOrder): the threads
  // then walk the reduction, else the columns.
  s.inner_reduced = utils::isInnerInMemory(fusion, ref);
  s.bytes_per_element = std::max<int64_t>(planPersistentBuffers(fusion).bytesPerElement(), 1);
  return s;
}

}  // namespace

int64_t residentBlocks(const DeviceInfo& device, int64_t threads, int64_t registers) {
  if (threads <= 0 || threads > device.max_threads_per_block) return 0;
  const int64_t by_threads = device.max_threads_per_sm / threads;
  const int64_t by_registers =
      device.registers_per_sm / (threads * std::max<int64_t>(registers, 1));
  return std::min(by_threads, by_registers) * device.sm_count;
}

bool outerPersistentCompileTimeCheck(const Fusion& fusion, std::string* why) {
  if (!utils::isPlainUnscheduledFusion(fusion, why)) return false;
  if (!utils::hasNoScan(fusion, why) || !utils::hasNoSort(fusion, why) ||
      !utils::hasNoScatterAdd(fusion, why)) {
    return false;
  }
  for (TensorView* tv : fusion.allTvs()) {
    if (tv->domain()->hasRoot()) {
      return reject(why, "tensor " + tv->toString() + " has a root domain (reshape or permute)");
    }
  }
  std::vector<TensorView*> reds = utils::reductionTvs(fusion);
  if (reds.empty()) return reject(why, "no reduction");
  const TensorView* ref = reds.front();
  const std::vector<size_t> ref_pos = reducedPositions(ref);
  const transform::IdGraph exact(fusion, transform::IdMappingMode::Exact);
  for (TensorView* tv : reds) {
    bool same = tv->logical().size() == ref->logical().size() && reducedPositions(tv) == ref_pos;
    for (size_t i = 0; same && i < tv->logical().size(); ++i) {
      IterDomain* a = ref->logical()[i];
      IterDomain* b = tv->logical()[i];
      same = a->isBroadcast() || b->isBroadcast() || exact.areMapped(a, b);
    }
    if (!same) {
      return reject(why, "reductions " + ref->toString() + " and " + tv->toString() +
                             " reduce different dims");
    }
  }
  // The kept dims must not all be outer of the reduced ones in memory (utils::memoryOrder: the
  // allocation order of the input, a stride_order one included): then the reduced dims are the
  // innermost, each row contiguous (the inner-persistent scheduler's case).
  if (utils::reducesTrailingRun(utils::memoryOrder(fusion, exact, ref))) {
    return reject(why, "reduction " + ref->toString() +
                           " reduces the innermost dims in memory (no kept dim "
                           "inside a reduced one): the inner-persistent scheduler's case");
  }
  if (persistentBuffers(fusion).empty()) {
    return reject(why,
                  "no persistent buffer: no reduced data is used after its reduction (the "
                  "reduction scheduler's case)");
  }
  return true;
}

std::unique_ptr<OuterPersistentParams> outerPersistentHeuristics(const Fusion& fusion,
                                                                 SchedulerRuntimeInfo& info,
                                                                 std::string* why) {
  const Sizes s = sizesOf(fusion, info);
  const DeviceInfo& d = info.device();
  auto p = std::make_unique<OuterPersistentParams>();
  p->inner_reduced = s.inner_reduced;
  p->columns = s.columns;
  p->reduced = s.reduced;
  if (s.columns == 0 || s.reduced == 0) {
    reject(why, "an empty reduction or no columns: nothing to keep on chip");
    return nullptr;
  }
  int64_t column_blocks = 0, reduce_threads = 0;
  if (s.inner_reduced) {
    // One column (channel) per block column; the threads walk the reduced inner dims, coalesced.
    p->bdimx =
        std::min<int64_t>(kThreadsPerBlock, std::max<int64_t>(32, utils::floorPow2(s.reduced)));
    p->bdimy = 1;
    column_blocks = s.columns;
    reduce_threads = p->bdimx;
  } else {
    // A warp of neighbouring columns per block row (128 contiguous bytes of f32), the rest of the
    // block over the reduction.
    p->bdimx = std::min<int64_t>(32, std::max<int64_t>(1, utils::floorPow2(s.columns)));
    if (p->bdimx < s.columns && p->bdimx < 32) p->bdimx *= 2;
    p->bdimy = std::max<int64_t>(1, kThreadsPerBlock / p->bdimx);
    p->bdimy = std::min(p->bdimy, std::max<int64_t>(1, utils::floorPow2(s.reduced)));
    column_blocks = utils::ceilDiv(s.columns, p->bdimx);
    reduce_threads = p->bdimy;
  }
  const int64_t threads = p->bdimx * p->bdimy;
  const int64_t max_batch = std::max<int64_t>(1, kMaxHeldBytesPerThread / s.bytes_per_element);
  // The smallest batch whose grid is resident: more blocks share the reduction, each thread's
  // registers stay few. At least 4 elements a thread where the reduction has them (loads in
  // flight), never more than a thread's share of the reduction.
  const int64_t min_batch =
      std::min<int64_t>({4, max_batch, utils::ceilDiv(s.reduced, reduce_threads)});
  for (int64_t batch = min_batch; batch <= max_batch; ++batch) {
    const int64_t grid = utils::ceilDiv(s.reduced, reduce_threads * batch);
    if (grid > d.max_grid_yz) continue;
    const int64_t blocks = column_blocks * grid;
    const int64_t resident = residentBlocks(d, threads, registersFor(batch * s.bytes_per_element));
    if (blocks > resident || column_blocks > d.max_grid_x) continue;
    p->persistent_batch = batch;
    p->grid = grid;
    p->blocks = blocks;
    p->resident_blocks = resident;
    return p;
  }
  const int64_t resident =
      residentBlocks(d, threads, registersFor(max_batch * s.bytes_per_element));
  reject(why,
         "the reduced data does not fit on chip across a resident grid: " +
             std::to_string(s.columns) + " columns x " + std::to_string(s.reduced) +
             " reduced elements x " + std::to_string(s.bytes_per_element) + " held bytes need " +
             std::to_string(column_blocks * utils::ceilDiv(s.reduced, reduce_threads * max_batch)) +
             " blocks of " + std::to_string(threads) + " threads holding " +
             std::to_string(max_batch) + " elements each, the device holds " +
             std::to_string(resident) + " at once (a grid barrier needs them all)");
  return nullptr;
}

bool outerPersistentRunTimeCheck(const Fusion& fusion, SchedulerRuntimeInfo& info,
                                 std::string* why) {
  return outerPersistentHeuristics(fusion, info, why) != nullptr;
}

namespace {

class OuterPersistentScheduler final : public Scheduler {
 public:
  SchedulerType type() const override { return SchedulerType::OuterPersistent; }
  bool canScheduleCompileTime(const Fusion& fusion, std::string* why) const override {
    return outerPersistentCompileTimeCheck(fusion, why);
  }
  bool canScheduleRunTime(const Fusion& fusion, SchedulerRuntimeInfo& info,
                          std::string* why) const override {
    return outerPersistentRunTimeCheck(fusion, info, why);
  }
  std::unique_ptr<HeuristicParams> computeHeuristics(const Fusion& fusion,
                                                     SchedulerRuntimeInfo& info) const override {
    std::string why;
    std::unique_ptr<OuterPersistentParams> p = outerPersistentHeuristics(fusion, info, &why);
    LOOM_CHECK(p != nullptr, "outer persistent scheduler: ", why);
    return p;
  }
  void schedule(Fusion& fusion, const HeuristicParams& params) const override {
    auto* p = dynamic_cast<const OuterPersistentParams*>(&params);
    LOOM_CHECK(p != nullptr, "outer persistent scheduler given ", params.toString());
    scheduleOuterPersistent(fusion, *p);
  }
};

}  // namespace

std::unique_ptr<Scheduler> makeOuterPersistentScheduler() {
  return std::make_unique<OuterPersistentScheduler>();
}

}  // namespace loom::scheduler
