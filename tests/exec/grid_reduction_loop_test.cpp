// SPDX-License-Identifier: Apache-2.0
// A grid reduction (BIDx on the reduced axis) inside serial loops whose extents are known only at
// launch (issue 36, nvFuser's test_tutorial_reduction): every iteration enters the reduction with
// its own slice of the grid scratch, which the executor sizes from the run's extents, so one
// compiled kernel runs any number of rows. Hand schedules run by KernelExecutor, compared with
// the reference evaluator on the unscheduled clone, outputs poisoned. Built twice: emu (host
// backend) and gpu (LOOM_EXEC_TEST_CUDA).
#include <gtest/gtest.h>

#include <string>

#include "exec/exec_cases.h"
#include "exec/exec_test_util.h"

namespace loom::test {
namespace {

// Runs the kernel `ke` (compiled from a schedule of `reference`) on each input and compares with
// the reference evaluator.
void expectRowsMatch(exec::KernelExecutor& ke, const ir::Fusion& reference,
                     const std::vector<std::vector<int64_t>>& shapes, int64_t seed) {
  for (const std::vector<int64_t>& shape : shapes) {
    const std::vector<eval::Argument> inputs{randomTensor(shape, uint64_t(seed++))};
    const std::vector<Tensor> outs = ke.run(inputs);
    const std::vector<Tensor> expected = eval::evaluateFusion(reference, inputs);
    ASSERT_EQ(outs.size(), expected.size());
    for (size_t i = 0; i < outs.size(); ++i) {
      const auto tol = eval::defaultTolerance(expected[i].dtype(), shape.back());
      auto msg = eval::expectClose(
          outs[i].contiguous(), expected[i], tol,
          "output " + std::to_string(i) + " for rows " + std::to_string(shape.front()));
      EXPECT_FALSE(msg.has_value()) << *msg << "\n" << ke.generated().kernelText;
    }
  }
}

// nvFuser's tutorial: sum(x, [1]) with only the reduced axis on BIDx; the rows are a serial loop
// of x's first extent, one grid reduction per row.
TEST(GridReductionInSymbolicLoop, RowsSerialReducedAxisOnBlocks) {
  if (auto why = test::backendUnavailable(testBackend())) GTEST_SKIP() << *why;
  ir::Fusion fusion;
  ir::FusionGuard guard(&fusion);
  auto* x = ops::TensorBuilder().rank(2).build();
  fusion.addInput(x);
  auto* out = ops::sum(x, {1});
  fusion.addOutput(out);
  std::unique_ptr<ir::Fusion> reference = fusion.clone();
  out->axis(1)->parallelize(ir::ParallelType::BIDx);
  exec::KernelExecutor ke;
  ke.compile(fusion, testBackend(), {.poisonOutputs = true});
  expectRowsMatch(ke, *reference, {{10, 1024}, {3, 7}, {1, 5}, {17, 2}, {10, 1024}}, 1);
}

// The rows split by a constant (an inner serial loop of 4 and an outer one of ceil(rows / 4),
// rows not a multiple of 4), the reduced axis split with its inner part on TIDx and its outer
// part on BIDx: entrances = 4 * ceil(rows / 4), found at launch.
TEST(GridReductionInSymbolicLoop, SplitRowsAndBlockThreadReduction) {
  if (auto why = test::backendUnavailable(testBackend())) GTEST_SKIP() << *why;
  ir::Fusion fusion;
  ir::FusionGuard guard(&fusion);
  auto* x = ops::TensorBuilder().rank(2).build();
  fusion.addInput(x);
  auto* out = ops::max(x, {1});
  fusion.addOutput(out);
  std::unique_ptr<ir::Fusion> reference = fusion.clone();
  out->split(1, 32);
  out->split(0, 4);
  out->axis(2)->parallelize(ir::ParallelType::BIDx);
  out->axis(3)->parallelize(ir::ParallelType::TIDx);
  exec::KernelExecutor ke;
  ke.compile(fusion, testBackend(), {.poisonOutputs = true});
  expectRowsMatch(ke, *reference, {{10, 100}, {4, 33}, {13, 64}, {1, 1}}, 20);
}

}  // namespace
}  // namespace loom::test
