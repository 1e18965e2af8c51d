// SPDX-License-Identifier: Apache-2.0
// The scheduler interface and the registry that picks a scheduler for a fusion.
//
//   SchedulerRuntimeInfo info(fusion, args);
//   SchedulerProposal p = proposeScheduler(fusion, info);     // first scheduler that accepts
//   auto params = p.scheduler->computeHeuristics(fusion, info);
//   p.scheduler->schedule(fusion, *params);
//
// Adding a scheduler: a SchedulerType value and its name (heuristic.h), its parameters (a
// ParamsOf struct, params_base.h), a Scheduler implementation with its factory declared in its
// header, and its place in the priority list in csrc/scheduler/registry.cpp.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "loom/ir/fusion.h"
#include "loom/scheduler/heuristic.h"
#include "loom/support/options.h"

namespace loom::scheduler {

class Scheduler {
 public:
  virtual ~Scheduler() = default;

  virtual SchedulerType type() const = 0;
  std::string_view name() const { return schedulerTypeName(type()); }

  /// Graph-only check (ops, shapes of the domains); cacheable per fusion. On rejection writes
  /// the reason to *why (when non-null).
  virtual bool canScheduleCompileTime(const ir::Fusion& fusion, std::string* why) const = 0;
  /// Cheap check of the bound sizes; called only after canScheduleCompileTime accepted.
  virtual bool canScheduleRunTime(const ir::Fusion& fusion, SchedulerRuntimeInfo& info,
                                  std::string* why) const = 0;
  /// Parameters for these sizes; called only when both checks accepted. Never null.
  virtual std::unique_ptr<HeuristicParams> computeHeuristics(const ir::Fusion& fusion,
                                                             SchedulerRuntimeInfo& info) const = 0;
  /// Transforms `fusion` (an unscheduled fusion accepted by the checks) with `params`, which
  /// must be of this scheduler's type (UserError otherwise).
  virtual void schedule(ir::Fusion& fusion, const HeuristicParams& params) const = 0;
};

/// All schedulers in priority order (the order proposeScheduler tries them).
const std::vector<const Scheduler*>& allSchedulers();
/// The scheduler of `type`; UserError when none is registered.
const Scheduler& schedulerFor(SchedulerType type);

struct SchedulerProposal {
  /// The first scheduler that accepted, or nullptr.
  const Scheduler* scheduler = nullptr;
  /// The schedulers tried before (or instead of) it, with their reasons.
  std::vector<std::pair<SchedulerType, std::string>> rejections;
  /// "pointwise: <why>; reduction: <why>" (empty when nothing was rejected).
  std::string rejectionSummary() const;
};

/// Tries allSchedulers() in order: compile-time check, then run-time check.
SchedulerProposal proposeScheduler(const ir::Fusion& fusion, SchedulerRuntimeInfo& info);

/// Every registered scheduler's answer, in priority order, one line each: "  transpose: chosen"
/// for the one proposeScheduler picks, "  <name>: compile-time: <why>" / "run-time: <why>" for
/// the others (those after the chosen one are asked too), "  <name>: accepts (not chosen)" for
/// one that accepts after it. What LOOM_DUMP=scheduler_choice prints.
std::string explainSchedulerChoice(const ir::Fusion& fusion, SchedulerRuntimeInfo& info);

/// `scheduler.schedule(fusion, params)`; then, when `debug` has verify_ir (LOOM_DEBUG=verify_ir,
/// on in every ctest test), ir::verify on the scheduled fusion, whose failure is an InternalError
/// naming the scheduler. Every scheduling of a segment (scheduleFusion, the runtime) goes
/// through it.
void applyScheduler(const Scheduler& scheduler, ir::Fusion& fusion, const HeuristicParams& params,
                    const DebugOptions& debug = DebugOptions::fromEnvironment());

/// proposeScheduler, computeHeuristics and schedule (applyScheduler) in one step; prints the
/// parameters when LOOM_DUMP=scheduler_params. UserError listing every rejection when no scheduler accepts.
std::unique_ptr<HeuristicParams> scheduleFusion(ir::Fusion& fusion, SchedulerRuntimeInfo& info);

}  // namespace loom::scheduler
