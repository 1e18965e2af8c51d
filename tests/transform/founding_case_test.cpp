// SPDX-License-Identifier: Apache-2.0
// The founding case: multi-output rFactor and clearReductionIterDomains of a var_mean whose input
// is sharded on the sequence axis (logical [b, s, e], loop [DIDx{d}, b, s/d, e]).
#include <gtest/gtest.h>

#include "loom/ops/ops.h"
#include "loom/transform/propagation.h"
#include "loom/transform/reduction_ids.h"
#include "loom/transform/rfactor.h"
#include "test_utils.h"

namespace loom::transform {
namespace {

using namespace test;

constexpr int64_t kB = 2, kS = 8, kE = 12, kD = 4;

struct VarMeanFusion {
  Fusion fusion;
  TensorView* x = nullptr;
  TensorView* avg = nullptr;
  TensorView* m2 = nullptr;
  TensorView* n = nullptr;
};

// Builds var_mean over e; with `sharded`, shards s over kD devices in loop and allocation and
// propagates that schedule (allocation included) to every tensor.
std::unique_ptr<VarMeanFusion> build(bool sharded) {
  auto f = std::make_unique<VarMeanFusion>();
  FusionGuard guard(&f->fusion);
  f->x = ops::TensorBuilder().shape({kB, kS, kE}).build();
  f->fusion.addInput(f->x);
  auto vm = ops::varMean(f->x, {2}, /*correction=*/0.0);
  f->fusion.addOutput(vm.var);
  f->fusion.addOutput(vm.mean);
  auto* welford = f->x->uses().front()->as<WelfordOp>();
  f->avg = welford->outAvg();
  f->m2 = welford->outM2();
  f->n = welford->outN();
  if (sharded) {
    TensorView* x = f->x;
    x->setDeviceMesh(DeviceMesh::arange(kD));
    x->split(1, kD, /*inner_split=*/false);  // [b, d, s/d, e]
    x->reorder(std::vector<int64_t>{1, 0, 2, 3});  // [d, b, s/d, e]
    x->axis(0)->parallelize(ParallelType::DIDx);
    x->setAllocationDomain(x->loop(), {true, true, true, true});
    propagateTransforms(x, {.replay_allocation = true, .parallel = ParallelCopy::DeviceOnly});
  }
  return f;
}

// Propagation gives the Welford outputs the input's DID split in loop and allocation.
TEST(FoundingCase, PropagationShardsWelfordOutputs) {
  auto f = build(true);
  for (TensorView* tv : {f->avg, f->m2, f->n}) {
    EXPECT_EQ(describeLoop(tv),
              "[split(L1,4,outer).o{4:iter:DIDx}, L0{2:iter:serial}, "
              "split(L1,4,outer).i{2:iter:serial}, L2{12:red:serial}]")
        << tv->toString();
    EXPECT_EQ(describeAllocation(tv), describeLoop(tv)) << tv->toString();
  }
  verify(f->fusion);
}

// (a) rFactor of the Welford outputs, scheduled only through avg, leaves all three outputs (and
// all three producers) with identical loop and allocation domains, DID split kept.
TEST(FoundingCase, MultiOutputRFactorKeepsShardingOnAllSiblings) {
  auto f = build(true);
  FusionGuard guard(&f->fusion);
  f->avg->split(3, 4);  // only avg: [DIDx{4}, b, s/d, r{3}, r{4}]
  auto producers = rFactor(f->avg, {4}, {f->avg, f->m2, f->n});
  ASSERT_EQ(producers.size(), 3u);
  const std::string out_loop =
      "[split(L1,4,outer).o{4:iter:DIDx}, L0{2:iter:serial}, split(L1,4,outer).i{2:iter:serial}, "
      "L2{3:red:serial}]";
  for (TensorView* tv : {f->avg, f->m2, f->n}) {
    EXPECT_EQ(describeLoop(tv), out_loop) << tv->toString();
    EXPECT_EQ(describeAllocation(tv), out_loop) << tv->toString();
    EXPECT_FALSE(tv->domain()->hasRoot());
    EXPECT_EQ(tv->contiguity().size(), tv->maybeAllocation().size());
  }
  for (TensorView* p : producers) {
    EXPECT_TRUE(p->domain()->hasRoot());
    EXPECT_EQ(describeLoop(p), describeLoop(producers[0]));
    EXPECT_EQ(describeAllocation(p), describeAllocation(producers[0]));
    EXPECT_EQ(p->axis(0)->parallelType(), ParallelType::DIDx);
    EXPECT_EQ(p->loop().size(), 5u);
    EXPECT_TRUE(p->axis(3)->isIteration());  // partial results per outer piece of e
    EXPECT_TRUE(p->axis(4)->isReduction());
    EXPECT_EQ(p->deviceMesh(), DeviceMesh::arange(kD));
  }
  // The final welford combines partial statistics: the non-raw form.
  auto* final_op = f->avg->definition()->as<WelfordOp>();
  EXPECT_FALSE(final_op->hasRawInput());
  EXPECT_EQ(final_op->inAvg(), producers[0]);
  EXPECT_EQ(final_op->inN(), producers[2]);
  EXPECT_TRUE(producers[0]->definition()->as<WelfordOp>()->hasRawInput());
  verify(f->fusion);
}

// (b) clearReductionIterDomains on sharded avg and N: logical [b, s], loop [DIDx{d}, b, s/d],
// allocation keeps the split, contiguity aligned with it.
TEST(FoundingCase, ClearReductionIdsKeepsSharding) {
  auto f = build(true);
  for (TensorView* tv : {f->avg, f->n}) {
    clearReductionIterDomains(tv);
    ASSERT_EQ(tv->logical().size(), 2u);
    EXPECT_FALSE(tv->domain()->hasReduction());
    const std::string loop =
        "[split(L1,4,outer).o{4:iter:DIDx}, L0{2:iter:serial}, "
        "split(L1,4,outer).i{2:iter:serial}]";
    EXPECT_EQ(describeLoop(tv), loop);
    ASSERT_TRUE(tv->domain()->hasAllocation());
    EXPECT_EQ(describeAllocation(tv), loop);
    EXPECT_EQ(tv->contiguity(), (Contiguity{true, true, true}));
  }
  verify(f->fusion);
}

// (c) Unsharded: rFactor works the same and clearing drops the explicit allocation.
TEST(FoundingCase, UnshardedRFactorAndClear) {
  auto f = build(false);
  {
    FusionGuard guard(&f->fusion);
    f->avg->split(2, 4);
    auto producers = rFactor(f->avg, {3}, {f->avg, f->m2, f->n});
    for (TensorView* tv : {f->avg, f->m2, f->n}) {
      EXPECT_EQ(describeLoop(tv), "[L0{2:iter:serial}, L1{8:iter:serial}, L2{3:red:serial}]");
      EXPECT_FALSE(tv->domain()->hasAllocation());
    }
    EXPECT_EQ(describeLoop(producers[1]),
              "[L0{2:iter:serial}, L1{8:iter:serial}, split(L2,4,inner).o{3:iter:serial}, "
              "split(L2,4,inner).i{4:red:serial}]");
    verify(f->fusion);
  }
  auto g = build(false);
  clearReductionIterDomains(g->avg);
  EXPECT_EQ(describeLoop(g->avg), "[L0{2:iter:serial}, L1{8:iter:serial}]");
  EXPECT_FALSE(g->avg->domain()->hasAllocation());
  EXPECT_EQ(g->avg->contiguity(), (Contiguity{true, true}));
}

// (d) clearReductionIterDomains refuses an rFactor product (it has a root domain).
TEST(FoundingCase, ClearReductionIdsRejectsRFactorProduct) {
  auto f = build(true);
  FusionGuard guard(&f->fusion);
  f->avg->split(3, 4);
  auto producers = rFactor(f->avg, {4}, {f->avg, f->m2, f->n});
  std::string msg = userError([&] { clearReductionIterDomains(producers[0]); });
  EXPECT_TRUE(has(msg, "root domain")) << msg;
  EXPECT_TRUE(has(msg, producers[0]->toString())) << msg;
}

// Multi-output rFactor needs all siblings, in order.
TEST(FoundingCase, MultiOutputRFactorChecksSiblings) {
  auto f = build(true);
  FusionGuard guard(&f->fusion);
  f->avg->split(3, 4);
  std::string msg = userError([&] { rFactor(f->avg, {4}, {f->avg, f->m2}); });
  EXPECT_TRUE(has(msg, "siblings must be all outputs")) << msg;
  msg = userError([&] { rFactor(f->avg, {4}); });
  EXPECT_TRUE(has(msg, "use rFactor(tv, axes, siblings)")) << msg;
}

}  // namespace
}  // namespace loom::transform
