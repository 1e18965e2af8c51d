// SPDX-License-Identifier: Apache-2.0
// TensorView scheduling members and their legality checks; transform::parallelize and
// validateSchedule.
#include "loom/transform/schedule.h"

#include <gtest/gtest.h>

#include "loom/ir/parser.h"
#include "loom/ir/printer.h"
#include "loom/ops/ops.h"
#include "loom/transform/cache.h"
#include "loom/transform/inlining.h"
#include "loom/transform/rfactor.h"
#include "test_utils.h"

namespace loom::transform {
namespace {

using namespace test;

class ScheduleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    x = ops::TensorBuilder().shape({6, 8, 16}).build();
    fusion.addInput(x);
    y = ops::exp(x);
    fusion.addOutput(y);
  }
  Fusion fusion;
  FusionGuard guard{&fusion};
  TensorView* x = nullptr;
  TensorView* y = nullptr;
};

// An inner split makes [ceil(N/f), f]; an outer split makes [f, ceil(N/f)].
TEST_F(ScheduleTest, InnerAndOuterSplit) {
  y->split(1, 3);
  EXPECT_EQ(describeLoop(y, {.types = false, .parallel = false}),
            "[L0{6}, split(L1,3,inner).o{3}, split(L1,3,inner).i{3}, L2{16}]");
  y->split(0, 2, /*inner_split=*/false);
  EXPECT_EQ(describeId(y, y->axis(0), {.types = false, .parallel = false}),
            "split(L0,2,outer).o{2}");
  EXPECT_EQ(describeId(y, y->axis(1), {.types = false, .parallel = false}),
            "split(L0,2,outer).i{3}");
}

// A split factor of zero or below is a user error.
TEST_F(ScheduleTest, SplitFactorMustBePositive) {
  EXPECT_TRUE(has(userError([&] { y->split(0, int64_t(0)); }), "must be positive"));
  EXPECT_TRUE(has(userError([&] { y->split(0, -2); }), "must be positive"));
}

// A loop axis out of range is a user error naming the domain.
TEST_F(ScheduleTest, BadAxisIndex) {
  std::string msg = userError([&] { y->split(3, 2); });
  EXPECT_TRUE(has(msg, "axis 3 is out of range")) << msg;
  EXPECT_TRUE(has(userError([&] { y->merge(0, -4); }), "out of range"));
}

// Axes inside the compute-at position cannot be split or merged.
TEST_F(ScheduleTest, NoSplitInsideInlinedPosition) {
  auto* z = ops::neg(y);
  fusion.addOutput(z);
  inlineAt(y, 2);
  std::string msg = userError([&] { y->split(1, 2); });
  EXPECT_TRUE(has(msg, "compute-at position 2")) << msg;
  msg = userError([&] { z->merge(0, 1); });
  EXPECT_TRUE(has(msg, "a producer is inlined up to position 2")) << msg;
  msg = userError([&] { y->reorder(std::vector<int64_t>{1, 0, 2}); });
  EXPECT_TRUE(has(msg, "inside the inlined position")) << msg;
  y->split(2, 4);  // outside is fine
}

// A parallelized axis cannot be split: split first, then parallelize.
TEST_F(ScheduleTest, NoSplitOfParallelizedAxis) {
  y->axis(0)->parallelize(ParallelType::BIDx);
  std::string msg = userError([&] { y->split(0, 2); });
  EXPECT_TRUE(has(msg, "already parallelized as BIDx")) << msg;
  EXPECT_TRUE(has(userError([&] { y->merge(0, 1); }), "parallelized as BIDx"));
}

// merge joins two axes; flatten joins a range; reorder takes a map or a permutation.
TEST_F(ScheduleTest, MergeFlattenReorder) {
  y->merge(0, 2);
  EXPECT_EQ(describeLoop(y, {.types = false, .parallel = false}), "[merge(L0,L2){96}, L1{8}]");
  auto* z = ops::neg(x);
  fusion.addOutput(z);
  z->flatten();
  EXPECT_EQ(z->nDims(), 1);
  auto* w = ops::abs(x);
  fusion.addOutput(w);
  w->reorder(std::unordered_map<int64_t, int64_t>{{0, 2}});
  EXPECT_EQ(describeLoop(w, {.types = false, .parallel = false}), "[L1{8}, L2{16}, L0{6}]");
  w->reorder(std::vector<int64_t>{2, 0, 1});
  EXPECT_EQ(describeLoop(w, {.types = false, .parallel = false}), "[L0{6}, L1{8}, L2{16}]");
  EXPECT_TRUE(has(userError([&] { w->reorder(std::vector<int64_t>{0, 0, 1}); }),
                  "is not a permutation"));
  EXPECT_TRUE(has(userError([&] { y->merge(1, 1); }), "with itself"));
}

// One parallel type may appear once per loop domain.
TEST_F(ScheduleTest, ParallelTypeOncePerTensor) {
  parallelize(y, 0, ParallelType::TIDx);
  std::string msg = userError([&] { parallelize(y, 1, ParallelType::TIDx); });
  EXPECT_TRUE(has(msg, "already uses it")) << msg;
  EXPECT_TRUE(has(msg, y->toString())) << msg;
}

// Only the innermost loop ID may be vectorized.
TEST_F(ScheduleTest, VectorizeOnlyInnermost) {
  std::string msg = userError([&] { parallelize(y, 1, ParallelType::Vectorize); });
  EXPECT_TRUE(has(msg, "only the innermost loop ID")) << msg;
  y->split(2, 4);
  parallelize(y, 3, ParallelType::Vectorize);
  validateSchedule(fusion);
}

// DID parallelization needs a device mesh.
TEST_F(ScheduleTest, DeviceDimNeedsMesh) {
  std::string msg = userError([&] { parallelize(y, 0, ParallelType::DIDx); });
  EXPECT_TRUE(has(msg, "no device mesh")) << msg;
  EXPECT_TRUE(has(userError([&] { y->setDeviceMesh(DeviceMesh({0, 0})); }), "twice"));
}

// validateSchedule catches what bypasses the checked helper: duplicates, inner vectorize,
// non-power-of-two vector width, DID extent different from the mesh.
TEST_F(ScheduleTest, ValidateScheduleReportsViolations) {
  y->axis(0)->parallelize(ParallelType::TIDx);
  y->axis(1)->parallelize(ParallelType::TIDx);
  std::string msg = userError([&] { validateSchedule(fusion); });
  EXPECT_TRUE(has(msg, "parallel type TIDx is used by axes 0 and 1")) << msg;
  y->axis(1)->parallelize(ParallelType::Serial);
  y->axis(1)->parallelize(ParallelType::Vectorize);
  msg = userError([&] { validateSchedule(fusion); });
  EXPECT_TRUE(has(msg, "is not the innermost loop ID")) << msg;
  y->axis(1)->parallelize(ParallelType::Serial);
  y->split(2, 3);
  y->axis(3)->parallelize(ParallelType::Vectorize);
  msg = userError([&] { validateSchedule(fusion); });
  EXPECT_TRUE(has(msg, "power-of-two")) << msg;
  y->axis(3)->parallelize(ParallelType::Serial);
  y->setDeviceMesh(DeviceMesh::arange(4));
  y->axis(0)->parallelize(ParallelType::DIDx);
  msg = userError([&] { validateSchedule(fusion); });
  EXPECT_TRUE(has(msg, "the device mesh [0, 1, 2, 3] has 4 devices along it")) << msg;
}

// Bulk axes (a TMA copy's box): several per tensor; only on the output of a TmaCopy between
// global and shared memory; never in a loop another tensor shares through inlining.
TEST_F(ScheduleTest, BulkAxesBelongToATmaCopyOfItsOwnLoops) {
  y->axis(2)->parallelize(ParallelType::Bulk);
  std::string msg = userError([&] { validateSchedule(fusion); });
  EXPECT_TRUE(has(msg, "is bulk, which only the output of a TMA copy can be")) << msg;
  y->axis(2)->parallelize(ParallelType::Serial);
  TensorView* c = cacheAfter(x, MemoryType::Local, LoadStoreOpType::TmaCopy);
  EXPECT_EQ(c->definition()->as<LoadStoreOp>()->opName(), "tma_copy");
  parallelize(c, 1, ParallelType::Bulk);
  parallelize(c, 2, ParallelType::Bulk);  // a 2-D box
  msg = userError([&] { validateSchedule(fusion); });
  EXPECT_TRUE(has(msg, "moves a box between global and shared memory")) << msg;
  EXPECT_TRUE(has(msg, "into local memory")) << msg;
  c->setMemoryType(MemoryType::Shared);
  validateSchedule(fusion);
  msg = userError([&] { computeAt(c, y, 2); });
  EXPECT_TRUE(has(msg, "the largest legal position is 1 because axis 1")) << msg;
  EXPECT_TRUE(has(msg, "is a TMA copy's box")) << msg;
}

// inlineMost stops at a TMA copy's box, and where a producer's thread type meets another type
// of its consumer's (one loop has one parallel type).
TEST_F(ScheduleTest, InliningStopsAtBoxesAndParallelTypeConflicts) {
  TensorView* c = cacheAfter(x, MemoryType::Shared, LoadStoreOpType::TmaCopy);
  for (TensorView* t : {c, y}) parallelize(t, 0, ParallelType::BIDx);
  parallelize(c, 2, ParallelType::Bulk);
  inlineMost(fusion);
  EXPECT_EQ(c->computeAtPosition(), 2);
  validateSchedule(fusion);

  Fusion f2;
  FusionGuard g2(&f2);
  TensorView* a = ops::TensorBuilder().shape({6, 8}).build();
  f2.addInput(a);
  TensorView* b = ops::exp(a);
  TensorView* d = ops::neg(b);
  f2.addOutput(d);
  parallelize(b, 1, ParallelType::TIDx);
  parallelize(d, 1, ParallelType::Unroll);
  EXPECT_EQ(maxInlinePosition(b), 1);
  inlineMost(f2);
  EXPECT_EQ(b->computeAtPosition(), 1);
}

// A bulk (TMA) copy: the op tma_copy and loop IDs parallelized "bulk" parse and print back; a
// text whose compute-at position puts a bulk axis in a shared loop is refused at validation.
TEST(ScheduleText, TmaCopyAndBulkAxes) {
  const std::string text =
      "inputs: T0\noutputs: T2\n"
      "T0 : f32 global [i0{8}, i1{256}]\n"
      "T1 : f32 shared [i2{8, BIDx}, i3{256, bulk}]%s\n"
      "T2 : f32 global [i4{8, BIDx}, i5{256, TIDx}]\n"
      "T1 = tma_copy(T0)\n"
      "T2 = set(T1)\n";
  auto format = [&](const char* ca) {
    std::string t = text;
    return t.replace(t.find("%s"), 2, ca);
  };
  auto f = ir::parseFusion(format(""));
  auto* t1 = f->outputs()[0]->definition()->input(0)->as<TensorView>();
  EXPECT_EQ(t1->definition()->as<LoadStoreOp>()->opType(), LoadStoreOpType::TmaCopy);
  EXPECT_EQ(t1->axis(1)->parallelType(), ParallelType::Bulk);
  const std::string printed = ir::printFusion(*f);
  EXPECT_NE(printed.find("T1 = tma_copy(T0)"), std::string::npos) << printed;
  EXPECT_NE(printed.find("256, bulk}"), std::string::npos) << printed;
  validateSchedule(*ir::parseFusion(printed));
  auto inlined = ir::parseFusion(format(" ca=2"));
  std::string msg = userError([&] { validateSchedule(*inlined); });
  EXPECT_NE(msg.find("bulk axis 1 (i3) is in a loop shared through inlining"), std::string::npos)
      << msg;
}

// A sum or Welford whose init is not the identity, reduced over a thread- or block-parallel dim,
// is rejected (each thread would count the init once); a serial reduction, max with any init,
// and an rFactor (whose partial starts at the identity) are fine.
TEST_F(ScheduleTest, ParallelReductionNeedsIdentityInit) {
  TensorView* s = ops::sum(x, {2});
  fusion.addOutput(s);
  auto* r = s->definition()->as<ReductionOp>();
  // Rebuild the sum with init 1.5.
  fusion.removeExpr(r);
  IrBuilder::create<ReductionOp>(ReductionOpType::Sum, IrBuilder::constant(1.5, s->dtype()), s, x);
  validateSchedule(fusion);  // serial: the init is added once
  s->axis(2)->parallelize(ParallelType::TIDx);
  std::string msg = userError([&] { validateSchedule(fusion); });
  EXPECT_TRUE(has(msg, "its init is not the identity (0 for a sum, 1 for a prod)")) << msg;
  EXPECT_TRUE(has(msg, "in parallel (TIDx)")) << msg;
  s->axis(2)->parallelize(ParallelType::Serial);
  // rFactor: the partial starts at 0, the final sum keeps 1.5.
  s->split(2, 4);
  TensorView* partial = rFactor(s, {3});
  auto* partial_sum = partial->definition()->as<ReductionOp>();
  EXPECT_TRUE(partial_sum->init()->isConst() && partial_sum->init()->constDouble() == 0.0)
      << partial_sum->toString();
  EXPECT_EQ(s->definition()->as<ReductionOp>()->init()->constDouble(), 1.5);
  partial->axis(3)->parallelize(ParallelType::TIDx);
  validateSchedule(fusion);  // the partial over TIDx starts at the identity
}

// Inputs and outputs stay in global memory; allocation IDs must derive from logical.
TEST_F(ScheduleTest, MemoryTypeAndAllocationChecks) {
  EXPECT_TRUE(has(userError([&] { x->setMemoryType(MemoryType::Shared); }), "global memory"));
  std::string msg = userError([&] { y->setAllocationDomain({x->logical()[0]}); });
  EXPECT_TRUE(has(msg, "is not derived from the logical domain")) << msg;
  y->split(1, 2);
  y->setAllocationDomain(y->loop());
  EXPECT_EQ(y->maybeAllocation(), y->loop());
}

}  // namespace
}  // namespace loom::transform
