// SPDX-License-Identifier: Apache-2.0
// Helpers of the runtime tests: random host inputs, host-backend options with outputs poisoned,
// and runAndCheck, the one "run the fusion, compare with the reference evaluator" of the suites.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "loom/eval/compare.h"
#include "loom/eval/reference_evaluator.h"
#include "loom/ir/fusion.h"
#include "loom/ir/parser.h"
#include "loom/ir/printer.h"
#include "loom/runtime/fusion_executor_cache.h"
#include "loom/tensor/tensor.h"
#include "runtime/runtime_test_backend.h"
#ifdef LOOM_HAVE_CUDA_BACKEND
#include "loom/backend/cuda/memory.h"
#endif

namespace loom::runtime::test {

/// A contiguous host tensor of `sizes` and `dtype` (Float32 when not given) with random values
/// from `seed`.
inline Tensor randomTensor(std::vector<int64_t> sizes, DataType dtype, uint64_t seed) {
  Tensor t = Tensor::empty(std::move(sizes), dtype);
  fillRandom(t, seed);
  return t;
}
inline Tensor randomTensor(std::vector<int64_t> sizes, uint64_t seed) {
  return randomTensor(std::move(sizes), DataType::Float32, seed);
}

/// A contiguous host index tensor (Int32 or Int64) of `sizes` with values drawn uniformly from
/// [lo, hi) by `seed`.
inline Tensor randomIndexTensor(std::vector<int64_t> sizes, int64_t lo, int64_t hi, DataType dt,
                                uint64_t seed) {
  Tensor t = Tensor::empty(std::move(sizes), dt);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> pick(lo, hi - 1);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (dt == DataType::Int32) {
      static_cast<int32_t*>(t.data())[i] = int32_t(pick(rng));
    } else {
      static_cast<int64_t*>(t.data())[i] = pick(rng);
    }
  }
  return t;
}

/// The host backend, outputs poisoned before every launch.
inline RuntimeOptions hostOptions() {
  RuntimeOptions o;
  o.backend = exec::Backend::Host;
  o.executor.poisonOutputs = true;
  return o;
}

/// How far a kernel's outputs may be from the reference evaluator's. By default (or from a
/// reduction size) eval::defaultTolerance of each output's dtype for reductions of that many
/// elements; a Tolerance converts to one bound for every output (`{0.0, 0.0}`: exact); a suite
/// with its own rule (its math functions' ulps, an output that is a sample) gives it by output.
class Tolerances {
 public:
  using Rule = std::function<eval::Tolerance(size_t output, DataType dtype)>;

  Tolerances(int64_t reduction_size = 1)  // NOLINT(google-explicit-constructor): see above
      : rule_([reduction_size](size_t, DataType dt) {
          return eval::defaultTolerance(dt, reduction_size);
        }) {}
  Tolerances(eval::Tolerance all)  // NOLINT(google-explicit-constructor): see above
      : rule_([all](size_t, DataType) { return all; }) {}
  static Tolerances byOutput(Rule rule) { return Tolerances(std::move(rule)); }

  eval::Tolerance of(size_t output, DataType dtype) const { return rule_(output, dtype); }

 private:
  explicit Tolerances(Rule rule) : rule_(std::move(rule)) {}
  Rule rule_;
};

/// What runAndCheck ran: the kernels' outputs (host copies) and the run's segments.
struct CheckedRun {
  std::vector<Tensor> outputs;
  std::vector<SegmentRecord> segments;

  /// Each segment's scheduler ("pointwise", "scan", ...).
  std::vector<std::string> schedulers() const {
    std::vector<std::string> out;
    for (const SegmentRecord& r : segments) out.push_back(r.scheduler);
    return out;
  }
  /// Each segment as "scheduler: params" (to tell schedules apart).
  std::vector<std::string> kernels() const {
    std::vector<std::string> out;
    for (const SegmentRecord& r : segments) out.push_back(r.scheduler + ": " + r.params);
    return out;
  }
};

/// `t` on the host (outputs of a fusion without tensor inputs stay on the backend's device).
inline Tensor onHost(const Tensor& t) {
#ifdef LOOM_HAVE_CUDA_BACKEND
  if (t.device().isCuda()) return cuda::toHost(t);
#endif
  return t;
}

/// Compares `got` (a run's outputs, on the host) with the reference evaluator's result for
/// `fusion` on `args`: the same number of outputs, and each of the same dtype and shape with every
/// element within `tol` (eval::expectClose); output i is named names[i] when given. Mismatches are
/// test failures.
inline void expectMatchesReference(const ir::Fusion& fusion,
                                   const std::vector<eval::Argument>& args,
                                   const std::vector<Tensor>& got, const Tolerances& tol = {},
                                   const std::vector<std::string>& names = {}) {
  const std::vector<Tensor> expected = eval::evaluateFusion(fusion, args);
  EXPECT_EQ(got.size(), expected.size()) << "outputs of the run and of the reference";
  for (size_t i = 0; i < got.size() && i < expected.size(); ++i) {
    const std::string name = i < names.size() ? names[i] : "output " + std::to_string(i);
    auto err = eval::expectClose(got[i], expected[i], tol.of(i, expected[i].dtype()), name);
    EXPECT_FALSE(err.has_value()) << *err;
  }
}

/// Runs `cache` on `args` and checks its outputs against the reference evaluator's for the
/// cache's fusion (expectMatchesReference). Make the cache with poisonedOptions() (or options
/// that poison outputs) so an element a kernel skips fails; runAndCheck on a fusion does.
inline CheckedRun runAndCheck(FusionExecutorCache& cache, const std::vector<eval::Argument>& args,
                              const Tolerances& tol = {},
                              const std::vector<std::string>& names = {}) {
  CheckedRun run;
  for (const Tensor& t : cache.run(args)) run.outputs.push_back(onHost(t));
  run.segments = cache.lastRuntime()->lastRun();
  expectMatchesReference(cache.fusion(), args, run.outputs, tol, names);
  return run;
}

/// runAndCheck on a new cache of `fusion` with the suite's backend, outputs poisoned.
inline CheckedRun runAndCheck(std::unique_ptr<ir::Fusion> fusion,
                              const std::vector<eval::Argument>& args, const Tolerances& tol = {},
                              const std::vector<std::string>& names = {}) {
  FusionExecutorCache cache(std::move(fusion), poisonedOptions());
  return runAndCheck(cache, args, tol, names);
}

/// The reason of the UserError a run of `fusion` on `args` raises, "(no error)" when it runs.
inline std::string runError(const ir::Fusion& fusion, const std::vector<eval::Argument>& args) {
  FusionExecutorCache cache(fusion.clone(), poisonedOptions());
  try {
    (void)cache.run(args);
  } catch (const UserError& e) {
    return e.reason();
  }
  return "(no error)";
}

/// Expects the text form of `fusion` to survive a parse: printing the parsed fusion gives the
/// same text. Returns the text (for failure messages).
inline std::string expectTextRoundTrip(const ir::Fusion& fusion, std::string_view file) {
  const std::string text = ir::printFusion(fusion);
  EXPECT_EQ(ir::printFusion(*ir::parseFusion(text, file)), text);
  return text;
}

}  // namespace loom::runtime::test
