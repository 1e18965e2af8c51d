// SPDX-License-Identifier: Apache-2.0
// cacheBefore, cacheAfter, cacheFork: graph rewiring and schedule replay.
#include <gtest/gtest.h>

#include "loom/ops/ops.h"
#include "loom/transform/cache.h"
#include "test_utils.h"

namespace loom::transform {
namespace {

using namespace test;

// cacheAfter redirects every use to the cache, which gets the input's schedule.
TEST(Cache, CacheAfterRedirectsUses) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  auto* x = ops::TensorBuilder().shape({4, 8}).build();
  fusion.addInput(x);
  auto* a = ops::exp(x);
  auto* b = ops::neg(x);
  fusion.addOutput(a);
  fusion.addOutput(b);
  x->split(1, 4);
  TensorView* c = cacheAfter(x);
  EXPECT_EQ(a->definition()->input(0), c);
  EXPECT_EQ(b->definition()->input(0), c);
  EXPECT_EQ(c->definition()->input(0), x);
  EXPECT_EQ(c->memoryType(), MemoryType::Local);
  EXPECT_EQ(describeLoop(c), describeLoop(x));
  verify(fusion);
}

// cacheBefore moves the definition (a sharded reduction) to the cache, keeping its schedule;
// the original becomes a copy without reduction IDs that keeps the DID split.
TEST(Cache, CacheBeforeKeepsSchedule) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  auto* x = ops::TensorBuilder().shape({4, 8}).build();
  fusion.addInput(x);
  auto* s = ops::sum(x, {1});
  fusion.addOutput(s);
  s->setDeviceMesh(DeviceMesh::arange(2));
  s->split(0, 2, false);
  s->axis(0)->parallelize(ParallelType::DIDx);
  s->setAllocationDomain(s->loop(), {true, true, std::nullopt});
  TensorView* c = cacheBefore(s);
  EXPECT_TRUE(c->definition()->isA<ReductionOp>());
  EXPECT_TRUE(s->definition()->isA<LoadStoreOp>());
  EXPECT_TRUE(c->domain()->hasReduction());
  EXPECT_FALSE(s->domain()->hasReduction());
  EXPECT_EQ(describeLoop(s), "[split(L0,2,outer).o{2:iter:DIDx}, split(L0,2,outer).i{2:iter:serial}]");
  EXPECT_EQ(describeAllocation(s), describeLoop(s));
  EXPECT_EQ(s->deviceMesh(), DeviceMesh::arange(2));
  verify(fusion);
  EXPECT_TRUE(has(userError([&] { cacheBefore(x); }), "has no definition"));
}

// cacheFork keeps the output as an intermediate and adds a new output copy.
TEST(Cache, CacheForkAddsOutput) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  auto* x = ops::TensorBuilder().shape({4, 8}).build();
  fusion.addInput(x);
  auto* a = ops::exp(x);
  auto* b = ops::neg(a);
  fusion.addOutput(a);
  fusion.addOutput(b);
  a->split(0, 2);
  TensorView* o = cacheFork(a);
  EXPECT_TRUE(fusion.isOutput(o));
  EXPECT_FALSE(fusion.isOutput(a));
  EXPECT_EQ(o->definition()->input(0), a);
  EXPECT_EQ(describeLoop(o), describeLoop(a));
  EXPECT_TRUE(has(userError([&] { cacheFork(b); }), "has no uses"));
  EXPECT_TRUE(has(userError([&] { cacheFork(a); }), "not a fusion output"));
  verify(fusion);
}

}  // namespace
}  // namespace loom::transform
