// SPDX-License-Identifier: Apache-2.0
// The scatter scheduler: checks, heuristics and the two schedules of a lone scatter_add.
#include "loom/scheduler/scatter.h"

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

// The one scatter_add of a scatter kernel, or nullptr with the reason in *why.
ir::ScatterOp* theScatter(const ir::Fusion& fusion, std::string* why) {
  auto reject = [&](const std::string& reason) -> ir::ScatterOp* {
    if (why != nullptr) *why = reason;
    return nullptr;
  };
  ir::ScatterOp* found = nullptr;
  for (ir::Expr* e : fusion.exprs()) {
    auto* sc = e->dynCast<ir::ScatterOp>();
    if (sc != nullptr && sc->accumulate() && found == nullptr) {
      found = sc;
      continue;
    }
    const bool tensor = std::any_of(e->outputs().begin(), e->outputs().end(),
                                    [](const ir::Val* v) { return v->isA<TensorView>(); });
    if (tensor) {
      return reject("a scatter kernel holds one scatter_add alone, not also " +
                    e->output(0)->toString() + " = " + e->opName() + "(...)");
    }
  }
  if (found == nullptr) return reject("the fusion has no scatter_add");
  return found;
}

class ScatterScheduler final : public Scheduler {
 public:
  SchedulerType type() const override { return SchedulerType::Scatter; }

  bool canScheduleCompileTime(const ir::Fusion& fusion, std::string* why) const override {
    return utils::isPlainUnscheduledFusion(fusion, why) && theScatter(fusion, why) != nullptr;
  }

  bool canScheduleRunTime(const ir::Fusion&, SchedulerRuntimeInfo&, std::string*) const override {
    return true;  // any size: the search or the atomics
  }

  std::unique_ptr<HeuristicParams> computeHeuristics(const ir::Fusion& fusion,
                                                     SchedulerRuntimeInfo& info) const override {
    auto params = std::make_unique<ScatterParams>();
    const ir::ScatterOp* sc = theScatter(fusion, nullptr);
    const std::vector<ir::IterDomain*> x = ir::TensorDomain::noReductions(sc->index()->logical());
    const int64_t extent = utils::product(info, sc->index(), {x.at(size_t(sc->dim()))});
    const int64_t index_elements = utils::product(info, sc->index(), x);
    const int64_t out_elements =
        utils::product(info, sc->out(), ir::TensorDomain::noReductions(sc->out()->logical()));
    params->atomic = atomicScatterDtype(sc) && extent >= kMinAtomicScatterExtent &&
                     out_elements > 0 && index_elements > 0;
    if (!params->atomic) return params;
    // A grid-stride kernel over a resident grid: a quarter of an SM's threads is enough to keep
    // the copies and atomics in flight, and stays inside the host backend's cooperative limit.
    const DeviceInfo& d = info.device();
    const int64_t work = std::max(out_elements, index_elements);
    params->bdimx = std::clamp<int64_t>(utils::floorPow2(work), 32, 256);
    const int64_t per_sm = std::max<int64_t>(d.max_threads_per_sm / 4 / params->bdimx, 1);
    params->blocks = std::clamp<int64_t>(utils::ceilDiv(work, params->bdimx), 1,
                                         std::min(per_sm * d.sm_count, d.max_grid_x));
    return params;
  }

  void schedule(ir::Fusion& fusion, const HeuristicParams& params) const override {
    const auto* p = dynamic_cast<const ScatterParams*>(&params);
    LOOM_CHECK(p != nullptr, "the scatter scheduler got ", params.toString());
    LOOM_CHECK(p->bdimx >= 1 && p->blocks >= 1, "scatter: bdimx and blocks must be at least 1, got ",
               p->toString());
    ir::FusionGuard guard(&fusion);
    std::string why;
    ir::ScatterOp* sc = theScatter(fusion, &why);
    LOOM_CHECK(sc != nullptr, "the scatter scheduler cannot schedule this fusion: ", why);
    LOOM_CHECK(!p->atomic || atomicScatterDtype(sc), "scatter: atomic adds into ",
               sc->out()->dtype(), " are not supported (f32, f64, i32, i64, f16 and bf16 are)");
    TensorView* ref = sc->out();
    // Every element of out is written by the copy (or the search): [out...] -> [BIDx, TIDx], or
    // for the atomics [BIDx (blocks), serial, TIDx] so that the grid is the resident one.
    if (ref->nDims() > 1) ref->flatten(0, ref->nDims() - 1);
    ref->split(0, p->bdimx);
    if (p->atomic) {
      ref->outerSplit(0, p->blocks);
      transform::parallelize(ref, 0, ParallelType::BIDx);
      transform::parallelize(ref, 2, ParallelType::TIDx);
    } else {
      transform::parallelize(ref, 0, ParallelType::BIDx);
      transform::parallelize(ref, 1, ParallelType::TIDx);
    }
    sc->setAtomic(p->atomic);
    transform::propagateTransforms(ref);
    transform::parallelizeAllLike(ref);
  }
};

}  // namespace

bool atomicScatterDtype(const ir::ScatterOp* sc) {
  switch (sc->out()->dtype()) {
    case DataType::Float32:
    case DataType::Float64:
    case DataType::Int32:
    case DataType::Int64:
    case DataType::Float16:
    case DataType::BFloat16: return true;
    default: return false;
  }
}

std::unique_ptr<Scheduler> makeScatterScheduler() { return std::make_unique<ScatterScheduler>(); }

}  // namespace loom::scheduler
