// SPDX-License-Identifier: Apache-2.0
// Rules of the reductions pass for Welford and grid reductions, checked on the printed kernel IR.
#include <gtest/gtest.h>

#include "lower/lower_test_util.h"

namespace loom::test {
namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Welford over TIDx: the triple is declared before the reduction loop, updated inside, block
// reduced after it, and avg / m2 / n are each written from their accumulator.
TEST(ReductionsPass, BlockWelfordDeclaresUpdatesReducesAndWritesSiblings) {
  ir::Fusion f;
  ir::FusionGuard guard(&f);
  auto* x = ops::TensorBuilder().shape({6, 8}).build();
  f.addInput(x);
  auto w = ops::welford(x, {1});
  f.addOutput(w.avg);
  f.addOutput(w.m2);
  f.addOutput(w.n);
  w.avg->axis(0)->parallelize(ir::ParallelType::BIDx);
  w.avg->axis(1)->parallelize(ir::ParallelType::TIDx);
  transform::propagateTransforms(w.avg);
  transform::parallelizeAllLike(w.avg);
  BeforeAfter t = lowerAround(f, "reductions");
  EXPECT_FALSE(has(t.before, "block_welford")) << t.before;
  EXPECT_TRUE(has(t.after,
                  "    var avg2 : f32 = 0.0\n    var m2_3 : f32 = 0.0\n    var n4 : i64 = 0\n"
                  "    for i1 in TIDx 0 .. 8:\n      avg2 += T1 = welford(T0, 0.0, 1)\n"
                  "    (avg2, m2_3, n4) = block_welford(dims=x)\n"
                  "    T1 <- avg2 of T1 = welford(T0, 0.0, 1)\n"
                  "    T2 <- m2_3 of T2 = welford(T0, 0.0, 1)\n"
                  "    T3 <- n4 of T3 = welford(T0, 0.0, 1)\n"))
      << t.after;
  std::string indexed = kir::toString(*lower::lowerFusionUntil(f, "indexing"));
  EXPECT_TRUE(has(indexed, "(avg2, m2_3, n4) = welford_update(T0[")) << indexed;
}

// A reduction ID on BIDx becomes a grid reduction with its own work/semaphore buffers, after the
// block reduction, and only the last block writes the result; `last` is declared at the top.
TEST(ReductionsPass, GridSumUsesScratchAndLastBlockWrites) {
  ir::Fusion f;
  ir::FusionGuard guard(&f);
  auto* x = ops::TensorBuilder().shape({4, 1000}).build();
  f.addInput(x);
  auto* out = ops::sum(x, {1});
  f.addOutput(out);
  out->split(1, 128);
  out->axis(0)->parallelize(ir::ParallelType::BIDy);
  out->axis(1)->parallelize(ir::ParallelType::BIDx);
  out->axis(2)->parallelize(ir::ParallelType::TIDx);
  auto k = lower::lowerFusionUntil(f, "reductions");
  std::string after = kir::toString(*k);
  EXPECT_TRUE(has(after,
                  "acc4 = block_sum(acc4, init=0.0, dims=x)\n"
                  "    last3 = grid_sum(acc4, init=0.0, dims=x, work=gw0, sem=gs0)\n    if last3:\n"
                  "      T1 <- acc4 of T1 = sum(T0)\n"))
      << after;
  EXPECT_TRUE(has(after, ")\n  var last3 : bool = false\n  for i0 in BIDy")) << after;
  ASSERT_EQ(k->gridScratch.size(), 2u);
  EXPECT_EQ(k->gridScratch[0].name, "gw0");
  EXPECT_FALSE(k->gridScratch[0].semaphore);
  EXPECT_TRUE(k->gridScratch[1].semaphore);
}

// A reduction ID on BIDy is a grid reduction over blockIdx.y (dims=y): the blocks of one
// blockIdx.x (the rows) form a segment, and the code calls the runtime's gridReduce<false, true,
// false>.
TEST(ReductionsPass, ReductionOnBIDyIsAGridReductionOverY) {
  ir::Fusion f;
  ir::FusionGuard guard(&f);
  auto* x = ops::TensorBuilder().shape({4, 100}).build();
  f.addInput(x);
  auto* out = ops::sum(x, {1});
  f.addOutput(out);
  out->axis(0)->parallelize(ir::ParallelType::BIDx);
  out->axis(1)->parallelize(ir::ParallelType::BIDy);
  auto k = lower::lowerFusionUntil(f, "reductions");
  std::string after = kir::toString(*k);
  EXPECT_TRUE(has(after, "= grid_sum(acc")) << after;
  EXPECT_TRUE(has(after, ", dims=y, work=gw0, sem=gs0)")) << after;
  ASSERT_EQ(k->gridScratch.size(), 2u);
  EXPECT_EQ(k->gridScratch[0].entrances, 1);
}

// Error text of lowering `f` up to `pass`, or "" when it lowers.
std::string lowerError(const ir::Fusion& f, std::string_view pass) {
  try {
    lower::lowerFusionUntil(f, pass);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// x[rows, 1000] summed per row over BIDx x TIDx (rows on `rows_type`), then T2 = T1 * 2.
void gridSumThenDouble(ir::Fusion& f, ir::ParallelType rows_type) {
  auto* x = ops::TensorBuilder().shape({4, 1000}).build();
  f.addInput(x);
  auto* s = ops::sum(x, {1});
  f.addOutput(ops::mul(s, 2.0));
  s->split(1, 128);
  s->axis(0)->parallelize(rows_type);
  s->axis(1)->parallelize(ir::ParallelType::BIDx);
  s->axis(2)->parallelize(ir::ParallelType::TIDx);
  transform::propagateTransforms(s);
  transform::parallelizeAllLike(s);
  transform::inlineMost(f);
}

// A consumer of a grid reduction's result runs only in the block that holds the result (under the
// reduction's `last` flag, declared at the kernel's top), not in block 0 of blockIdx.x.
TEST(ReductionsPass, GridResultConsumerRunsUnderLast) {
  ir::Fusion f;
  ir::FusionGuard guard(&f);
  gridSumThenDouble(f, ir::ParallelType::BIDy);
  std::string text = kir::toString(*lower::lowerFusionUntil(f, "thread_predicates"));
  EXPECT_TRUE(has(text, "    if (last3 && (threadIdx.x == 0)):\n      tensor T2 = mul(T1, 2.0)\n"))
      << text;
  EXPECT_FALSE(has(text, "blockIdx.x == 0")) << text;
  EXPECT_LT(text.find("var last3 : bool = false"), text.find("for ")) << text;
}

// A grid reduction inside a serial loop of constant extent is entered once per iteration: the
// entrance is the loop index, and its scratch holds one slice per iteration (entrances = 4); the
// consumer inlined into the same loop runs under that iteration's `last`.
TEST(ReductionsPass, GridReductionInSerialLoopHasOneEntrancePerIteration) {
  ir::Fusion f;
  ir::FusionGuard guard(&f);
  gridSumThenDouble(f, ir::ParallelType::Serial);
  auto k = lower::lowerFusionUntil(f, "thread_predicates");
  std::string text = kir::toString(*k);
  EXPECT_TRUE(has(text, "  for i0 in 0 .. 4:\n")) << text;
  EXPECT_TRUE(has(text, ", dims=x, entrance=i0, work=gw0, sem=gs0)")) << text;
  EXPECT_TRUE(has(text, "if (last3 && (threadIdx.x == 0)):\n      tensor T2 = mul(T1, 2.0)"))
      << text;
  ASSERT_EQ(k->gridScratch.size(), 2u);
  EXPECT_EQ(k->gridScratch[0].entrances, 4);
  EXPECT_EQ(k->gridScratch[1].entrances, 4);
}

// Two serial loops around a grid reduction: the entrance is their linear iteration number.
TEST(ReductionsPass, GridReductionEntranceLinearizesNestedSerialLoops) {
  ir::Fusion f;
  ir::FusionGuard guard(&f);
  auto* x = ops::TensorBuilder().shape({6, 1000}).build();
  f.addInput(x);
  auto* s = ops::sum(x, {1});
  f.addOutput(s);
  s->split(0, 3);
  s->split(2, 128);
  s->axis(2)->parallelize(ir::ParallelType::BIDx);
  s->axis(3)->parallelize(ir::ParallelType::TIDx);
  auto k = lower::lowerFusionUntil(f, "reductions");
  std::string text = kir::toString(*k);
  EXPECT_TRUE(has(text, ", dims=x, entrance=((i0 * 3) + i1), work=gw0")) << text;
  EXPECT_EQ(k->gridScratch[0].entrances, 6);
}

// A serial loop of symbolic extent around a grid reduction (issue 36): the entrance is its index
// and the scratch's entrances are that loop's extent, which the executor evaluates at launch
// (GridScratch::entranceExtents); the constant part is 1.
TEST(ReductionsPass, GridReductionInSymbolicSerialLoopSizesItsScratchAtLaunch) {
  ir::Fusion f;
  ir::FusionGuard guard(&f);
  auto* x = ops::TensorBuilder().rank(2).build();
  f.addInput(x);
  auto* s = ops::sum(x, {1});
  f.addOutput(s);
  s->split(1, 128);
  s->axis(1)->parallelize(ir::ParallelType::BIDx);
  s->axis(2)->parallelize(ir::ParallelType::TIDx);
  auto k = lower::lowerFusionUntil(f, "reductions");
  std::string text = kir::toString(*k);
  EXPECT_TRUE(has(text, ", dims=x, entrance=i0, work=gw0")) << text;
  ASSERT_EQ(k->gridScratch.size(), 2u);
  for (const kir::Kernel::GridScratch& g : k->gridScratch) {
    EXPECT_EQ(g.entrances, 1) << g.name;
    ASSERT_EQ(g.entranceExtents.size(), 1u) << g.name;
    EXPECT_EQ(g.entranceExtents[0], s->axis(0)->extent()) << g.name;
  }
}

// Each iteration of a serial loop around a grid reduction finishes in its own last block, so a
// consumer outside that loop has no block holding all iterations' results: a user error.
TEST(ReductionsPass, GridResultConsumerOutsideTheSerialLoopIsRejected) {
  ir::Fusion f;
  ir::FusionGuard guard(&f);
  auto* x = ops::TensorBuilder().shape({4, 1000}).build();
  f.addInput(x);
  auto* s = ops::sum(x, {1});
  auto* out = ops::mul(s, 2.0);
  f.addOutput(out);
  s->split(1, 128);
  s->axis(1)->parallelize(ir::ParallelType::BIDx);
  s->axis(2)->parallelize(ir::ParallelType::TIDx);
  s->setMemoryType(ir::MemoryType::Local);
  std::string msg = lowerError(f, "thread_predicates");
  EXPECT_TRUE(has(msg, out->toString() + " reads the grid reduction result " + s->toString() +
                           " outside the serial loop of"))
      << msg;
}

// A consumer of a grid reduction's result spread over BIDx needs the result in every block (a
// grid broadcast): the GridReduce is an all-reduce, the kernel cooperative, its second scratch
// buffer the two gridSync words, and the consumer runs in every block, not under `last`.
// (Lowering refused this before: "no grid broadcast".)
TEST(ReductionsPass, GridResultConsumerOnBIDxIsAGridAllReduce) {
  ir::Fusion f;
  ir::FusionGuard guard(&f);
  auto* x = ops::TensorBuilder().shape({1000}).build();
  f.addInput(x);
  auto* s = ops::sum(x, {0}, /*keepdim=*/true);
  auto* out = ops::sub(x, s);
  f.addOutput(out);
  out->split(0, 128);
  out->axis(0)->parallelize(ir::ParallelType::BIDx);
  out->axis(1)->parallelize(ir::ParallelType::TIDx);
  transform::propagateTransforms(out);
  transform::parallelizeAllLike(out);
  transform::inlineMost(f);
  auto k = lower::lowerFusionUntil(f, "thread_predicates");
  EXPECT_TRUE(k->cooperative);
  const std::string text = kir::toString(*k);
  EXPECT_TRUE(has(text, " = grid_all_sum(")) << text;
  ASSERT_EQ(k->gridScratch.size(), 2u);
  EXPECT_TRUE(k->gridScratch[1].perLaunch);
  EXPECT_EQ(k->gridScratch[1].elementBytes, 8);
  EXPECT_FALSE(has(text, "if (last")) << text;
}

// One consumer of two grid reductions' results has no block holding both: a user error.
TEST(ReductionsPass, ConsumerOfTwoGridReductionsIsRejected) {
  ir::Fusion f;
  ir::FusionGuard guard(&f);
  auto* x = ops::TensorBuilder().shape({1000}).build();
  f.addInput(x);
  auto* a = ops::sum(x, {0});
  auto* b = ops::max(x, {0});
  f.addOutput(ops::add(a, b));
  for (ir::TensorView* r : {a, b}) {
    r->split(0, 128);
    r->axis(0)->parallelize(ir::ParallelType::BIDx);
    r->axis(1)->parallelize(ir::ParallelType::TIDx);
  }
  std::string msg = lowerError(f, "thread_predicates");
  EXPECT_TRUE(has(
      msg, "reads the results of two grid reductions (" + a->toString() + " and " + b->toString()))
      << msg;
}

}  // namespace
}  // namespace loom::test
