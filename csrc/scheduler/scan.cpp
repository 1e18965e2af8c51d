// SPDX-License-Identifier: Apache-2.0
// The scan scheduler: checks, heuristics and the one-thread-per-row schedule.
#include "loom/scheduler/scan.h"

#include <algorithm>

#include "loom/ir/exprs.h"
#include "loom/ir/iter_domain.h"
#include "loom/scheduler/utils.h"
#include "loom/support/error.h"
#include "loom/transform/id_graph.h"
#include "loom/transform/inlining.h"
#include "loom/transform/propagation.h"
#include "loom/transform/recompute.h"
#include "loom/transform/schedule.h"

namespace loom::scheduler {

using ir::IterDomain;
using ir::ParallelType;
using ir::TensorView;

namespace {

// The position of the scan dim among the reference's dims (logical, reductions excluded: the
// reference is unscheduled), or -1 when the reference has no ID exactly mapped to it.
int64_t scanPosition(const transform::IdGraph& exact, const TensorView* ref,
                     const IterDomain* sid) {
  std::vector<IterDomain*> dims = ir::TensorDomain::noReductions(ref->logical());
  for (size_t i = 0; i < dims.size(); ++i) {
    if (exact.areMapped(dims[i], sid)) return int64_t(i);
  }
  return -1;
}

// The reason the fusion is not one scan kernel, or "" when it is.
std::string scanProblem(const ir::Fusion& fusion) {
  std::vector<ir::Expr*> scans = utils::scanExprs(fusion);
  if (scans.empty()) return "the fusion has no scan";
  if (auto reductions = utils::reductionExprs(fusion); !reductions.empty()) {
    return "the fusion has a reduction (" + reductions.front()->output(0)->toString() + ")";
  }
  const TensorView* ref = utils::largestOutput(fusion);
  const transform::IdGraph exact(fusion, transform::IdMappingMode::Exact);
  const IterDomain* sid = scans.front()->as<ir::ScanOp>()->scanId();
  if (scanPosition(exact, ref, sid) < 0) {
    return "the largest output " + ref->toString() + " has no dim of the scan " +
           scans.front()->toString();
  }
  // Every scan runs along the same dim and holds every dim of the reference: a scan with
  // fewer dims would be recomputed by every thread of the rows it lacks.
  const size_t ref_rank = ir::TensorDomain::noReductions(ref->logical()).size();
  for (ir::Expr* e : scans) {
    const auto* scan = e->as<ir::ScanOp>();
    if (!exact.areMapped(scan->scanId(), sid)) {
      return "the scans " + scans.front()->toString() + " and " + scan->toString() +
             " run along different dims";
    }
    if (ir::TensorDomain::noReductions(scan->out()->logical()).size() != ref_rank) {
      return "the scan " + scan->toString() + " has fewer dims than the output " + ref->toString();
    }
  }
  return "";
}

class ScanScheduler final : public Scheduler {
 public:
  SchedulerType type() const override { return SchedulerType::Scan; }

  bool canScheduleCompileTime(const ir::Fusion& fusion, std::string* why) const override {
    if (!utils::isPlainUnscheduledFusion(fusion, why) || !utils::hasNoSort(fusion, why) ||
        !utils::hasNoScatterAdd(fusion, why)) {
      return false;
    }
    std::string problem = scanProblem(fusion);
    if (problem.empty()) return true;
    if (why != nullptr) *why = problem;
    return false;
  }

  bool canScheduleRunTime(const ir::Fusion&, SchedulerRuntimeInfo&, std::string*) const override {
    return true;  // any size: a thread per row, the rows over the grid
  }

  std::unique_ptr<HeuristicParams> computeHeuristics(const ir::Fusion& fusion,
                                                     SchedulerRuntimeInfo& info) const override {
    auto params = std::make_unique<ScanParams>();
    const TensorView* ref = utils::largestOutput(fusion);
    const transform::IdGraph exact(fusion, transform::IdMappingMode::Exact);
    const IterDomain* sid = utils::scanExprs(fusion).front()->as<ir::ScanOp>()->scanId();
    std::vector<IterDomain*> dims = ir::TensorDomain::noReductions(ref->logical());
    dims.erase(dims.begin() + scanPosition(exact, ref, sid));
    const int64_t rows = utils::product(info, ref, dims);
    // Small row counts get a smaller block (one warp at least), so the grid has more blocks.
    params->bdimx = std::clamp<int64_t>(utils::floorPow2(std::max<int64_t>(rows, 1)), 32, 128);
    return params;
  }

  void schedule(ir::Fusion& fusion, const HeuristicParams& params) const override {
    const auto* p = dynamic_cast<const ScanParams*>(&params);
    LOOM_CHECK(p != nullptr, "the scan scheduler got ", params.toString());
    LOOM_CHECK(p->bdimx >= 1, "scan: bdimx must be at least 1, got ", p->bdimx);
    ir::FusionGuard guard(&fusion);
    TensorView* ref = utils::largestOutput(fusion);
    LOOM_CHECK(ref != nullptr, "the scan scheduler needs a tensor output");
    const IterDomain* sid = utils::scanExprs(fusion).front()->as<ir::ScanOp>()->scanId();
    int64_t pos = -1;
    {
      const transform::IdGraph exact(fusion, transform::IdMappingMode::Exact);
      pos = scanPosition(exact, ref, sid);
    }
    LOOM_CHECK(pos >= 0, "scan: the reference ", ref->toString(), " has no dim of the scan");
    utils::forkOutputsReadInFusion(fusion);
    const int64_t rank = ref->nDims();
    // [rows..., scan] -> [BIDx, TIDx, scan]: each thread runs its row's scan loop in order.
    if (pos != rank - 1) ref->reorder(std::unordered_map<int64_t, int64_t>{{pos, rank - 1}});
    if (rank > 1) {
      if (rank > 2) ref->flatten(0, rank - 2);
      ref->split(0, p->bdimx);
      transform::parallelize(ref, 0, ParallelType::BIDx);
      transform::parallelize(ref, 1, ParallelType::TIDx);
    }
    transform::propagateTransforms(ref);
    transform::parallelizeAllLike(ref);
    transform::inlineMost(fusion);
    transform::recomputeAcrossThreads(fusion);
  }
};

}  // namespace

std::unique_ptr<Scheduler> makeScanScheduler() { return std::make_unique<ScanScheduler>(); }

}  // namespace loom::scheduler
