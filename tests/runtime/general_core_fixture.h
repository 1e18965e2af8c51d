// SPDX-License-Identifier: Apache-2.0
// The fixture of the general-core suites: a fusion run through the automatic path (outputs
// poisoned) and every output compared with the reference evaluator, on the suite's backend.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "loom/eval/compare.h"
#include "loom/ir/builder.h"
#include "loom/ir/ir.h"
#include "loom/ir/parser.h"
#include "loom/ops/ops.h"
#include "loom/runtime/fusion_executor_cache.h"
#include "runtime/runtime_test_backend.h"
#include "runtime/runtime_test_util.h"

namespace loom::runtime {

inline Tensor randomTensor(std::vector<int64_t> sizes, uint64_t seed,
                           DataType dt = DataType::Float32) {
  Tensor t = Tensor::empty(std::move(sizes), dt);
  fillRandom(t, seed);
  return t;
}

class GeneralCore : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = loom::test::backendUnavailable(testBackend())) GTEST_SKIP() << *why;
  }

  static RuntimeOptions options() { return poisonedOptions(); }

  // Runs `f` through a FusionExecutorCache (outputs poisoned first) and compares every output with
  // the reference evaluator; `reduction` is the largest number of elements one output reduces.
  static void runAndCheck(std::unique_ptr<ir::Fusion> f, const std::vector<eval::Argument>& args,
                          int64_t reduction = 1) {
    FusionExecutorCache cache(std::move(f), options());
    test::runAndCheck(cache, args, reduction);
  }
};

}  // namespace loom::runtime
