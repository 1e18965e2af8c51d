// SPDX-License-Identifier: Apache-2.0
// The scheduler registry: the priority list and proposeScheduler / scheduleFusion.
#include "loom/scheduler/registry.h"

#include <iostream>

#include "loom/ir/verifier.h"
#include "loom/scheduler/inner_outer_persistent.h"
#include "loom/scheduler/normalization.h"
#include "loom/scheduler/outer_persistent.h"
#include "loom/scheduler/pointwise.h"
#include "loom/scheduler/reduction.h"
#include "loom/scheduler/scan.h"
#include "loom/scheduler/scatter.h"
#include "loom/scheduler/sort.h"
#include "loom/scheduler/transpose.h"
#include "loom/support/dump_sink.h"
#include "loom/support/error.h"
#include "loom/support/options.h"

namespace loom::scheduler {

namespace {

// The priority list: proposeScheduler tries these in order (registry.h says what else a new
// scheduler needs). The checks are written so that at most one
// of the current schedulers accepts a fusion (the pointwise scheduler leaves the fusions the
// transpose scheduler accepts to it); the order still matters for future overlaps.
std::vector<std::unique_ptr<Scheduler>> makeSchedulers() {
  std::vector<std::unique_ptr<Scheduler>> list;
  list.push_back(makePointwiseScheduler());
  list.push_back(makeReductionScheduler());
  list.push_back(makeInnerPersistentScheduler());
  list.push_back(makeScanScheduler());
  list.push_back(makeSortScheduler());
  list.push_back(makeScatterScheduler());
  list.push_back(makeTransposeScheduler());
  list.push_back(makeInnerOuterPersistentScheduler());
  list.push_back(makeOuterPersistentScheduler());
  return list;
}

}  // namespace

const std::vector<const Scheduler*>& allSchedulers() {
  static const std::vector<std::unique_ptr<Scheduler>> owned = makeSchedulers();
  static const std::vector<const Scheduler*> list = [] {
    std::vector<const Scheduler*> result;
    for (const auto& s : owned) result.push_back(s.get());
    return result;
  }();
  return list;
}

const Scheduler& schedulerFor(SchedulerType type) {
  for (const Scheduler* s : allSchedulers()) {
    if (s->type() == type) return *s;
  }
  LOOM_CHECK(false, "no scheduler of type ", schedulerTypeName(type), " is registered");
  return *allSchedulers().front();  // not reached: LOOM_CHECK throws
}

std::string SchedulerProposal::rejectionSummary() const {
  std::string result;
  for (const auto& [type, why] : rejections) {
    if (!result.empty()) result += "; ";
    result += std::string(schedulerTypeName(type)) + ": " + why;
  }
  return result;
}

SchedulerProposal proposeScheduler(const ir::Fusion& fusion, SchedulerRuntimeInfo& info) {
  SchedulerProposal proposal;
  for (const Scheduler* s : allSchedulers()) {
    std::string why;
    if (!s->canScheduleCompileTime(fusion, &why)) {
      proposal.rejections.emplace_back(s->type(), "compile-time: " + why);
      continue;
    }
    why.clear();
    if (!s->canScheduleRunTime(fusion, info, &why)) {
      proposal.rejections.emplace_back(s->type(), "run-time: " + why);
      continue;
    }
    proposal.scheduler = s;
    break;
  }
  return proposal;
}

std::string explainSchedulerChoice(const ir::Fusion& fusion, SchedulerRuntimeInfo& info) {
  std::string out;
  bool chosen = false;
  for (const Scheduler* s : allSchedulers()) {
    std::string why;
    std::string answer;
    if (!s->canScheduleCompileTime(fusion, &why)) {
      answer = "compile-time: " + why;
    } else if (why.clear(); !s->canScheduleRunTime(fusion, info, &why)) {
      answer = "run-time: " + why;
    } else {
      answer = chosen ? "accepts (not chosen)" : "chosen";
      chosen = true;
    }
    out += "  " + std::string(s->name()) + ": " + answer + "\n";
  }
  return out;
}

std::unique_ptr<HeuristicParams> scheduleFusion(ir::Fusion& fusion, SchedulerRuntimeInfo& info) {
  SchedulerProposal proposal = proposeScheduler(fusion, info);
  LOOM_CHECK(proposal.scheduler != nullptr, "no scheduler accepts the fusion: ",
             proposal.rejectionSummary());
  std::unique_ptr<HeuristicParams> params = proposal.scheduler->computeHeuristics(fusion, info);
  if (DumpOptions::fromEnvironment().has(DumpOption::SchedulerChoice)) {
    dumpSink() << "scheduler_choice:\n" << explainSchedulerChoice(fusion, info);
  }
  if (DumpOptions::fromEnvironment().has(DumpOption::SchedulerParams)) {
    dumpSink() << params->toString();
    if (!proposal.rejections.empty()) {
      dumpSink() << "  rejected: " << proposal.rejectionSummary() << "\n";
    }
  }
  applyScheduler(*proposal.scheduler, fusion, *params);
  return params;
}

void applyScheduler(const Scheduler& scheduler, ir::Fusion& fusion, const HeuristicParams& params,
                    const DebugOptions& debug) {
  scheduler.schedule(fusion, params);
  if (!debug.has(DebugOption::VerifyIr)) return;
  try {
    ir::verify(fusion);
  } catch (const InternalError& e) {
    LOOM_ASSERT(false, "the fusion scheduled by the ", scheduler.name(),
                " scheduler breaks the IR contract (LOOM_DEBUG=verify_ir): ", e.reason());
  }
}

}  // namespace loom::scheduler
