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
const ir::Expr* theSort(const ir::Fusion& fusion, std::string* why) {
  std::vector<ir::Expr*> sorts = utils::sortExprs(fusion);
  auto reject = [&](const std::string& reason) -> const ir::Expr* {
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
    const ir::Expr* e = theSort(fusion, &why);
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
    // [rows..., sort] -> [BIDx, TIDx, sort]: each thread sorts its row.
    if (pos != rank - 1) ref->reorder(std::unordered_map<int64_t, int64_t>{{pos, rank - 1}});
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

}  // namespace loom::scheduler
