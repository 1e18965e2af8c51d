// SPDX-License-Identifier: Apache-2.0
// The sort scheduler: checks, heuristics and the one-thread-per-row schedule.
#include "loom/scheduler/sort.h"

#include <algorithm>

#include "loom/ir/exprs.h"
#include "loom/scheduler/utils.h"
#include "loom/support/error.h"
#include "loom/transform/propagation.h"
#include "loom/transform/schedule.h"

namespace loom::scheduler {

using ir::ParallelType;
using ir::TensorView;

namespace {

// The one sort of a sort kernel, or nullptr with the reason in *why.
ir::Expr* theSort(const ir::Fusion& fusion, std::string* why) {
  std::vector<ir::Expr*> sorts = utils::sortExprs(fusion);
  auto reject = [&](const std::string& reason) -> ir::Expr* {
    if (why != nullptr) *why = reason;
    return nullptr;
  };
  if (sorts.empty()) return reject("the fusion has no argsort or topk");
  for (ir::Expr* e : fusion.exprs()) {
    const bool tensor = std::any_of(e->outputs().begin(), e->outputs().end(),
                                    [](const ir::Val* v) { return v->isA<TensorView>(); });
    if (tensor && e != sorts.front()) {
      return reject("a sort kernel holds its sort alone, not also " + e->output(0)->toString() +
                    " = " + e->opName() + "(...)");
    }
  }
  return sorts.front();
}

class SortScheduler final : public Scheduler {
 public:
  SchedulerType type() const override { return SchedulerType::Sort; }

  bool canScheduleCompileTime(const ir::Fusion& fusion, std::string* why) const override {
    return utils::isPlainUnscheduledFusion(fusion, why) && theSort(fusion, why) != nullptr;
  }

  bool canScheduleRunTime(const ir::Fusion&, SchedulerRuntimeInfo&, std::string*) const override {
    return true;  // any size: a thread per row, the rows over the grid
  }

  std::unique_ptr<HeuristicParams> computeHeuristics(const ir::Fusion& fusion,
                                                     SchedulerRuntimeInfo& info) const override {
    auto params = std::make_unique<SortParams>();
    const ir::Expr* e = theSort(fusion, nullptr);
    const auto* out = e->output(0)->as<TensorView>();
    std::vector<ir::IterDomain*> dims = ir::TensorDomain::noReductions(out->logical());
    dims.erase(dims.begin() + ir::sortDim(e));
    const int64_t rows = utils::product(info, out, dims);
    const auto* in = e->input(0)->as<TensorView>();
    const int64_t n = utils::product(
        info, in, {ir::TensorDomain::noReductions(in->logical()).at(size_t(ir::sortDim(e)))});
    const int64_t capacity = utils::floorPow2(std::max<int64_t>(n, 1)) == n
                                 ? n
                                 : 2 * utils::floorPow2(std::max<int64_t>(n, 1));
    const DeviceInfo& d = info.device();
    if (n > kMaxThreadRow && blockSortBytes(in->dtype(), capacity) <= d.shared_memory_per_block &&
        rows <= d.max_grid_x) {
      // One block per row: a thread per compared pair of the bitonic network, at most a block.
      params->block_row = capacity;
      params->bdimx = std::min<int64_t>(capacity / 2, d.max_threads_per_block);
      return params;
    }
    // Few rows get a smaller block (one warp at least), so that more blocks share the rows.
    params->bdimx = std::clamp<int64_t>(utils::floorPow2(std::max<int64_t>(rows, 1)), 32, 128);
    return params;
  }

  void schedule(ir::Fusion& fusion, const HeuristicParams& params) const override {
    const auto* p = dynamic_cast<const SortParams*>(&params);
    LOOM_CHECK(p != nullptr, "the sort scheduler got ", params.toString());
    LOOM_CHECK(p->bdimx >= 1, "sort: bdimx must be at least 1, got ", p->bdimx);
    ir::FusionGuard guard(&fusion);
    std::string why;
    ir::Expr* e = theSort(fusion, &why);
    LOOM_CHECK(e != nullptr, "the sort scheduler cannot schedule this fusion: ", why);
    // The row call writes whole rows of every output: an output no later segment reads still
    // needs memory for them (topk's indices keep the heap).
    for (ir::Val* v : e->outputs()) {
      auto* tv = v->as<TensorView>();
      if (!tv->isFusionOutput()) tv->setMemoryType(ir::MemoryType::Global);
    }
    auto* ref = e->output(0)->as<TensorView>();
    const int64_t rank = ref->nDims();
    const int64_t pos = ir::sortDim(e);
    if (pos != rank - 1) ref->reorder(std::unordered_map<int64_t, int64_t>{{pos, rank - 1}});
    if (p->block_row > 0) {
      // [rows..., sort] -> [BIDx, serial, TIDx]: the block's threads sort the row together.
      LOOM_CHECK(p->block_row >= 2 && (p->block_row & (p->block_row - 1)) == 0,
                 "sort: block_row must be a power of two of at least 2, got ", p->block_row);
      if (rank > 2) ref->flatten(0, rank - 2);
      const int64_t sort_axis = rank > 1 ? 1 : 0;
      ref->split(sort_axis, p->bdimx);
      if (rank > 1) transform::parallelize(ref, 0, ParallelType::BIDx);
      transform::parallelize(ref, sort_axis + 1, ParallelType::TIDx);
      if (auto* a = e->dynCast<ir::ArgsortOp>()) {
        a->setBlockRow(p->block_row);
      } else {
        e->as<ir::TopKOp>()->setBlockRow(p->block_row);
      }
      transform::propagateTransforms(ref);
      transform::parallelizeAllLike(ref);
      return;
    }
    // [rows..., sort] -> [BIDx, TIDx, sort]: each thread sorts its row.
    if (rank > 1) {
      if (rank > 2) ref->flatten(0, rank - 2);
      ref->split(0, p->bdimx);
      transform::parallelize(ref, 0, ParallelType::BIDx);
      transform::parallelize(ref, 1, ParallelType::TIDx);
    }
    transform::propagateTransforms(ref);
    transform::parallelizeAllLike(ref);
  }
};

}  // namespace

std::unique_ptr<Scheduler> makeSortScheduler() { return std::make_unique<SortScheduler>(); }

int64_t blockSortBytes(DataType dtype, int64_t capacity) {
  const int64_t key = isReducedPrecision(dtype) ? 4 : int64_t(dataTypeSize(dtype));
  return (capacity * key + 15) / 16 * 16 + (capacity * 4 + 15) / 16 * 16;
}

}  // namespace loom::scheduler
