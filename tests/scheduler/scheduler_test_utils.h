// SPDX-License-Identifier: Apache-2.0
// Helpers for the scheduler tests: build a fusion, schedule a clone through the registry, and
// check the schedule (validateSchedule, ir::verify, same numbers as the unscheduled fusion).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "eval/eval_test_utils.h"
#include "loom/eval/compare.h"
#include "loom/eval/reference_evaluator.h"
#include "loom/ir/ir.h"
#include "loom/ir/verifier.h"
#include "loom/ops/ops.h"
#include "loom/scheduler/pointwise.h"
#include "loom/scheduler/reduction.h"
#include "loom/scheduler/registry.h"
#include "loom/scheduler/utils.h"
#include "loom/transform/schedule.h"

namespace loom::scheduler::testing {

using ir::TensorView;

#define EXPECT_HAS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "message: " << (haystack)

inline Tensor randomTensor(std::vector<int64_t> sizes, uint64_t seed,
                           DataType dtype = DataType::Float32) {
  Tensor t = Tensor::empty(std::move(sizes), dtype);
  fillRandom(t, seed);
  return t;
}

using eval::testing::userErrorOf;  // expects a UserError, returns its message

using BuildFn = std::function<void(ir::Fusion&)>;

/// A fusion built by `build` (inside its own FusionGuard).
inline std::unique_ptr<ir::Fusion> makeFusion(const BuildFn& build) {
  auto f = std::make_unique<ir::Fusion>();
  ir::FusionGuard guard(f.get());
  build(*f);
  return f;
}

/// The proposal for `build` with `args`.
inline SchedulerProposal propose(const BuildFn& build, const std::vector<eval::Argument>& args) {
  auto f = makeFusion(build);
  SchedulerRuntimeInfo info(*f, args);
  return proposeScheduler(*f, info);
}

/// The result of scheduling one fusion through the registry.
struct Scheduled {
  std::unique_ptr<ir::Fusion> original;
  std::unique_ptr<ir::Fusion> fusion;  ///< the scheduled clone
  std::unique_ptr<HeuristicParams> params;
};

/// Schedules a clone of build's fusion for `args` and checks it: validateSchedule and ir::verify
/// pass, and the reference evaluator gives the original's numbers (within `reduction_size`'s
/// tolerance).
inline Scheduled scheduleAndCheck(const BuildFn& build, const std::vector<eval::Argument>& args,
                                  int64_t reduction_size = 1) {
  Scheduled s;
  s.original = makeFusion(build);
  s.fusion = s.original->clone();
  SchedulerRuntimeInfo info(*s.fusion, args);
  s.params = scheduleFusion(*s.fusion, info);
  EXPECT_NO_THROW(transform::validateSchedule(*s.fusion)) << s.fusion->toString();
  EXPECT_NO_THROW(ir::verify(*s.fusion)) << s.fusion->toString();
  std::vector<Tensor> expected = eval::evaluateFusion(*s.original, args);
  std::vector<Tensor> actual = eval::evaluateFusion(*s.fusion, args);
  EXPECT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size() && i < expected.size(); ++i) {
    auto mismatch = eval::expectClose(
        actual[i], expected[i], eval::defaultTolerance(expected[i].dtype(), reduction_size),
        "output " + std::to_string(i));
    EXPECT_FALSE(mismatch.has_value()) << *mismatch << "\n" << s.fusion->toString();
  }
  return s;
}

inline const PointwiseParams& pointwiseOf(const Scheduled& s) {
  const auto* p = dynamic_cast<const PointwiseParams*>(s.params.get());
  if (p == nullptr) throw std::runtime_error("not pointwise params: " + s.params->toString());
  return *p;
}

inline const ReductionParams& reductionOf(const Scheduled& s) {
  const auto* p = dynamic_cast<const ReductionParams*>(s.params.get());
  if (p == nullptr) throw std::runtime_error("not reduction params: " + s.params->toString());
  return *p;
}

// ---- Fusions used by several tests.

/// out = x + y, both [-1, -1] of `dtype`.
inline BuildFn addFusion(DataType dtype = DataType::Float32) {
  return [dtype](ir::Fusion& f) {
    auto* x = ops::TensorBuilder().shape({-1, -1}).dtype(dtype).build();
    auto* y = ops::TensorBuilder().shape({-1, -1}).dtype(dtype).build();
    f.addInput(x);
    f.addInput(y);
    f.addOutput(ops::add(x, y));
  };
}

/// out = x[-1, -1] + bias[-1] (broadcast along the outer dim).
inline BuildFn biasAddFusion() {
  return [](ir::Fusion& f) {
    auto* x = ops::TensorBuilder().shape({-1, -1}).build();
    auto* bias = ops::TensorBuilder().shape({-1}).build();
    f.addInput(x);
    f.addInput(bias);
    f.addOutput(ops::add(x, bias));
  };
}

/// out = sum(x * 2, dims) over x [-1, -1].
inline BuildFn sumFusion(std::vector<int64_t> dims) {
  return [dims](ir::Fusion& f) {
    auto* x = ops::TensorBuilder().shape({-1, -1}).build();
    f.addInput(x);
    f.addOutput(ops::sum(ops::mul(x, 2.0), dims));
  };
}

/// var and mean of a symbolic [-1, -1] f32 input over `dim` (a Welford, then var = m2 / (n - 1)).
inline BuildFn varMeanFusion(int64_t dim) {
  return [dim](ir::Fusion& f) {
    auto* x = ops::TensorBuilder().shape({-1, -1}).build();
    f.addInput(x);
    auto vm = ops::varMean(x, {dim});
    f.addOutput(vm.var);
    f.addOutput(vm.mean);
  };
}

}  // namespace loom::scheduler::testing
