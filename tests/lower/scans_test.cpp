// SPDX-License-Identifier: Apache-2.0
// Rules of the scans pass, checked on the printed kernel IR: the accumulator goes before the
// scan loop, each iteration accumulates and writes its prefix; schedules the serial scan cannot
// run (a parallel or split scan ID, a loop inside the scan loop) are user errors.
#include <gtest/gtest.h>

#include "lower/lower_test_util.h"

namespace loom::test {
namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// [rows on BIDx, scan serial]: acc before the scan loop, accumulate then write inside it.
TEST(ScansPass, AccumulatorBeforeTheScanLoopPrefixWrittenEachIteration) {
  ir::Fusion f;
  ir::FusionGuard guard(&f);
  auto* x = ops::TensorBuilder().shape({6, 8}).build();
  f.addInput(x);
  auto* out = ops::cumsum(x, 1);
  f.addOutput(out);
  out->axis(0)->parallelize(ir::ParallelType::BIDx);
  BeforeAfter t = lowerAround(f, "scans");
  EXPECT_TRUE(has(t.before, "    for i1 in 0 .. 8:\n      tensor T1 = cumsum(T0)\n")) << t.before;
  EXPECT_TRUE(has(t.after,
                  "    var acc2 : f32 = 0.0\n    for i1 in 0 .. 8:\n"
                  "      acc2 += T1 = cumsum(T0)\n      T1 <- acc2 of T1 = cumsum(T0)\n"))
      << t.after;
}

TEST(ScansPass, ParallelSplitOrOuterScanIdsAreUserErrors) {
  {
    ir::Fusion f;
    ir::FusionGuard guard(&f);
    auto* x = ops::TensorBuilder().shape({6, 8}).build();
    f.addInput(x);
    auto* out = ops::cummax(x, 1);
    f.addOutput(out);
    out->axis(1)->parallelize(ir::ParallelType::TIDx);
    expectLoweringError(f, "which is parallelized on TIDx; a scan runs its row in order");
  }
  {
    ir::Fusion f;
    ir::FusionGuard guard(&f);
    auto* x = ops::TensorBuilder().shape({6, 8}).build();
    f.addInput(x);
    auto* out = ops::cumsum(x, 1);
    f.addOutput(out);
    out->split(1, 4);
    expectLoweringError(f, "which the schedule split or merged");
  }
  {
    ir::Fusion f;
    ir::FusionGuard guard(&f);
    auto* x = ops::TensorBuilder().shape({6, 8}).build();
    f.addInput(x);
    auto* out = ops::cumsum(x, 0);  // the scan ID stays outside the loop of dim 1
    f.addOutput(out);
    expectLoweringError(f, "the scan ID must be the innermost loop of the op");
  }
}

}  // namespace
}  // namespace loom::test
