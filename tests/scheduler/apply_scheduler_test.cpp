// SPDX-License-Identifier: Apache-2.0
// applyScheduler: with verify_ir (LOOM_DEBUG) a scheduled fusion that breaks the IR contract is an
// internal error naming the scheduler; without it the fusion is left as scheduled.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "loom/ir/ir.h"
#include "loom/ops/ops.h"
#include "loom/scheduler/pointwise.h"
#include "loom/scheduler/registry.h"
#include "loom/support/error.h"

namespace loom::scheduler {
namespace {

using ::testing::HasSubstr;

// A "pointwise" scheduler that puts TIDx on both loop IDs of the output, which ir::verify rejects
// (a parallel type at most once per loop domain).
class BrokenScheduler : public Scheduler {
 public:
  SchedulerType type() const override { return SchedulerType::Pointwise; }
  bool canScheduleCompileTime(const ir::Fusion&, std::string*) const override { return true; }
  bool canScheduleRunTime(const ir::Fusion&, SchedulerRuntimeInfo&, std::string*) const override {
    return true;
  }
  std::unique_ptr<HeuristicParams> computeHeuristics(const ir::Fusion&,
                                                     SchedulerRuntimeInfo&) const override {
    return std::make_unique<PointwiseParams>();
  }
  void schedule(ir::Fusion& fusion, const HeuristicParams&) const override {
    auto* out = fusion.outputs()[0]->as<ir::TensorView>();
    out->axis(0)->parallelize(ir::ParallelType::TIDx);
    out->axis(1)->parallelize(ir::ParallelType::TIDx);
  }
};

std::unique_ptr<ir::Fusion> negFusion() {
  auto f = std::make_unique<ir::Fusion>();
  ir::FusionGuard guard(f.get());
  auto* x = ops::TensorBuilder().shape({4, 8}).build();
  f->addInput(x);
  f->addOutput(ops::neg(x));
  return f;
}

// verify_ir on: the broken schedule is an internal error naming the scheduler and the IR rule.
TEST(ApplyScheduler, VerifyIrRejectsBrokenScheduleNamingTheScheduler) {
  auto f = negFusion();
  ir::FusionGuard guard(f.get());
  try {
    applyScheduler(BrokenScheduler(), *f, PointwiseParams(), DebugOptions::parse("verify_ir"));
    ADD_FAILURE() << "no error";
  } catch (const InternalError& e) {
    EXPECT_THAT(e.message(), HasSubstr("the fusion scheduled by the pointwise scheduler breaks "
                                       "the IR contract (LOOM_DEBUG=verify_ir): "));
    EXPECT_THAT(e.message(), HasSubstr("parallel type"));
  }
}

// verify_ir off: nothing is checked.
TEST(ApplyScheduler, WithoutVerifyIrNothingIsChecked) {
  auto f = negFusion();
  ir::FusionGuard guard(f.get());
  EXPECT_NO_THROW(applyScheduler(BrokenScheduler(), *f, PointwiseParams(), DebugOptions()));
}

}  // namespace
}  // namespace loom::scheduler
