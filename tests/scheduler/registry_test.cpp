// SPDX-License-Identifier: Apache-2.0
// Tests of the scheduler registry: which scheduler each fusion gets, the rejection reasons, the
// parameter structs (printing, equality, hash) and the errors of misuse.
#include <gtest/gtest.h>

#include "loom/scheduler/normalization.h"
#include "scheduler/scheduler_test_utils.h"

namespace loom::scheduler::testing {
namespace {

// A plain pointwise add goes to the pointwise scheduler, which is tried first.
TEST(RegistryTest, PointwiseAddIsPointwise) {
  auto p = propose(addFusion(), {randomTensor({4, 8}, 1), randomTensor({4, 8}, 2)});
  ASSERT_NE(p.scheduler, nullptr);
  EXPECT_EQ(p.scheduler->type(), SchedulerType::Pointwise);
  EXPECT_TRUE(p.rejections.empty());
  EXPECT_EQ(p.scheduler->name(), "pointwise");
}

// A broadcast add is pointwise too.
TEST(RegistryTest, BroadcastAddIsPointwise) {
  auto p = propose(biasAddFusion(), {randomTensor({4, 8}, 1), randomTensor({8}, 2)});
  ASSERT_NE(p.scheduler, nullptr);
  EXPECT_EQ(p.scheduler->type(), SchedulerType::Pointwise);
}

// Inner and outer sums go to the reduction scheduler, after the pointwise one said why not.
TEST(RegistryTest, SumsAreReductions) {
  for (int64_t dim : {0, 1}) {
    auto p = propose(sumFusion({dim}), {randomTensor({4, 8}, 1)});
    ASSERT_NE(p.scheduler, nullptr);
    EXPECT_EQ(p.scheduler->type(), SchedulerType::Reduction);
    ASSERT_EQ(p.rejections.size(), 1u);
    EXPECT_EQ(p.rejections[0].first, SchedulerType::Pointwise);
    EXPECT_HAS(p.rejectionSummary(), "pointwise: compile-time: the fusion has a reduction");
  }
}

// var_mean (a Welford) is not pointwise; the reduction scheduler takes it.
TEST(RegistryTest, VarMeanIsNotPointwise) {
  auto p = propose(
      varMeanFusion(1),
      {randomTensor({4, 8}, 1)});
  ASSERT_NE(p.scheduler, nullptr);
  EXPECT_NE(p.scheduler->type(), SchedulerType::Pointwise);
  EXPECT_EQ(p.scheduler->type(), SchedulerType::Reduction);
}

// Softmax (a reduction result broadcast back) is neither pointwise nor a plain reduction; only
// a normalization scheduler, when registered, may take it.
TEST(RegistryTest, SoftmaxIsNotAPlainReduction) {
  auto p = propose(
      [](ir::Fusion& f) {
        auto* x = ops::TensorBuilder().shape({-1, -1}).build();
        f.addInput(x);
        f.addOutput(ops::softmax(x, 1));
      },
      {randomTensor({4, 8}, 1)});
  if (p.scheduler != nullptr) {
    EXPECT_EQ(p.scheduler->type(), SchedulerType::InnerPersistent);
  }
  EXPECT_HAS(p.rejectionSummary(), "reduction: compile-time:");
  EXPECT_HAS(p.rejectionSummary(), "reductions; this scheduler handles exactly one");
}

// A reduction whose result is broadcast back is a normalization pattern, not a reduction.
TEST(RegistryTest, BroadcastReductionResultRejected) {
  auto f = makeFusion([](ir::Fusion& f) {
    auto* x = ops::TensorBuilder().shape({-1, -1}).build();
    f.addInput(x);
    f.addOutput(ops::sub(x, ops::sum(x, {1}, /*keepdim=*/true)));
  });
  std::string why;
  EXPECT_FALSE(schedulerFor(SchedulerType::Reduction).canScheduleCompileTime(*f, &why));
  EXPECT_HAS(why, "is iterated again after the reduction");
  EXPECT_HAS(why, "normalization pattern");
}

// A keepdim reduction (a broadcast after the reduction, no reduced dim iterated again) is a
// plain reduction.
TEST(RegistryTest, KeepdimReductionAccepted) {
  auto p = propose(
      [](ir::Fusion& f) {
        auto* x = ops::TensorBuilder().shape({-1, -1}).build();
        f.addInput(x);
        f.addOutput(ops::sum(x, {1}, /*keepdim=*/true));
      },
      {randomTensor({4, 8}, 1)});
  ASSERT_NE(p.scheduler, nullptr);
  EXPECT_EQ(p.scheduler->type(), SchedulerType::Reduction);
}

// An output that does not depend on the reduction needs its own kernel.
TEST(RegistryTest, UnreducedOutputRejectedByReduction) {
  auto f = makeFusion([](ir::Fusion& f) {
    auto* x = ops::TensorBuilder().shape({-1, -1}).build();
    f.addInput(x);
    auto* y = ops::mul(x, 2.0);
    f.addOutput(y);
    f.addOutput(ops::sum(y, {1}));
  });
  std::string why;
  EXPECT_FALSE(schedulerFor(SchedulerType::Reduction).canScheduleCompileTime(*f, &why));
  EXPECT_HAS(why, "does not depend on the reduction");
}

// An already scheduled fusion is rejected by every scheduler, and scheduleFusion says why.
TEST(RegistryTest, AlreadyScheduledRejectedEverywhere) {
  auto f = makeFusion(addFusion());
  {
    ir::FusionGuard guard(f.get());
    f->outputs()[0]->as<TensorView>()->split(1, 4);
  }
  SchedulerRuntimeInfo info(*f, std::vector<eval::Argument>{randomTensor({4, 8}, 1),
                                                            randomTensor({4, 8}, 2)});
  std::string msg = userErrorOf([&] { scheduleFusion(*f, info); });
  EXPECT_HAS(msg, "no scheduler accepts the fusion");
  EXPECT_HAS(msg, "pointwise: compile-time:");
  EXPECT_HAS(msg, "already scheduled");
}

// Device-parallel fusions are left to the multidevice schedulers (not written yet).
TEST(RegistryTest, DidParallelRejected) {
  auto f = makeFusion([](ir::Fusion& f) {
    auto* x = ops::TensorBuilder().shape({2, 8}).build();
    x->setDeviceMesh(ir::DeviceMesh({0, 1}));
    x->axis(0)->parallelize(ir::ParallelType::DIDx);
    f.addInput(x);
    auto* y = ops::mul(x, 2.0);
    f.addOutput(y);
  });
  std::string why;
  EXPECT_FALSE(schedulerFor(SchedulerType::Pointwise).canScheduleCompileTime(*f, &why));
  EXPECT_HAS(why, "device-parallel");
}

// Fields declared once (ParamsOf's table): setField reaches every schedule field by its printed
// name, booleans as 0/1, and nothing else (not a summary field, not an informational one); the
// informational sizes print on a second line and do not make two schedules differ.
TEST(RegistryTest, ParamsFieldTable) {
  InnerPersistentParams p;
  EXPECT_TRUE(p.setField("shared_memory", 1));
  EXPECT_TRUE(p.shared_memory);
  EXPECT_TRUE(p.setField("reload_rows", 1));
  EXPECT_TRUE(p.setField("persistent_batch", 6));
  EXPECT_EQ(p.persistent_batch, 6);
  EXPECT_FALSE(p.setField("row_size", 5)) << "informational, not a schedule field";
  EXPECT_FALSE(p.setField("no_such_field", 1));
  InnerPersistentParams q = p;
  q.row_size = 4096;
  q.rows = 7;
  EXPECT_EQ(p, q);
  EXPECT_EQ(p.hash(), q.hash());
  EXPECT_HAS(q.toString(),
             "InnerPersistent: vectorize=1 persistent_batch=6 rows_per_block=1 "
             "shared_memory=1 reload_rows=1 peel=0\n  row_size=4096 rows=7");

  ReductionParams r;
  EXPECT_FALSE(r.setField("inner", 0)) << "printed as the summary word, not settable";
  EXPECT_TRUE(r.setField("grid_reduction", 4));
  EXPECT_EQ(r.grid_reduction, 4);
  ReductionParams outer = r;
  outer.inner = false;
  EXPECT_NE(r, outer) << "a summary field is part of the schedule";
}

// Params print every field, compare by value and hash equal when equal.
TEST(RegistryTest, ParamsPrintCompareHash) {
  PointwiseParams a;
  a.vectorize = 4;
  a.unroll = 2;
  PointwiseParams b = a;
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.hash(), b.hash());
  EXPECT_HAS(a.toString(), "Pointwise: 1-D break_point=0 vectorize=4 unroll=2 bdimx=128 bdimy=1");
  b.bdimx = 256;
  EXPECT_NE(a, b);
  EXPECT_NE(a.hash(), b.hash());

  ReductionParams r;
  r.inner = false;
  r.bdimy = 8;
  EXPECT_HAS(r.toString(), "Reduction: outer vectorize=1 bdimx=128 bdimy=8 grid_reduction=1");
  EXPECT_NE(static_cast<const HeuristicParams&>(r), static_cast<const HeuristicParams&>(a));
  auto copy = r.clone();
  EXPECT_EQ(*copy, r);
  EXPECT_EQ(copy->hash(), r.hash());
  EXPECT_EQ(copy->type(), SchedulerType::Reduction);
}

// A scheduler given another scheduler's params says which params it got.
TEST(RegistryTest, WrongParamsType) {
  auto f = makeFusion(addFusion());
  ReductionParams r;
  std::string msg =
      userErrorOf([&] { schedulerFor(SchedulerType::Pointwise).schedule(*f, r); });
  EXPECT_HAS(msg, "the pointwise scheduler got Reduction:");
}

// Reduction params of the wrong kind (outer for an inner reduction) are refused.
TEST(RegistryTest, ReductionParamsKindMismatch) {
  auto f = makeFusion(sumFusion({1}));
  ReductionParams r;
  r.inner = false;
  std::string msg =
      userErrorOf([&] { schedulerFor(SchedulerType::Reduction).schedule(*f, r); });
  EXPECT_HAS(msg, "reduction params for an outer reduction applied to");
}

// The device defaults are an H200 and print.
TEST(RegistryTest, DeviceDefaults) {
  DeviceInfo d;
  EXPECT_EQ(d.sm_count, 132);
  EXPECT_EQ(d.max_threads_per_block, 1024);
  EXPECT_EQ(d, DeviceInfo::h200());
  EXPECT_HAS(d.toString(), "sms=132");
}

// Runtime info from sizes alone derives strides from contiguity (unknown where not contiguous).
TEST(RegistryTest, RuntimeInfoFromSizes) {
  auto f = makeFusion([](ir::Fusion& f) {
    auto* x = ops::TensorBuilder().shape({3, 5, 7}).contiguity({true, false, true}).build();
    f.addInput(x);
    f.addOutput(ops::neg(x));
  });
  SchedulerRuntimeInfo info(*f, eval::ExpressionEvaluator{});
  auto* x = f->inputs()[0]->as<TensorView>();
  EXPECT_EQ(info.strides(x), (std::vector<int64_t>{-1, -1, 1}));
  EXPECT_EQ(info.alignmentBytes(x), 16);
}

}  // namespace
}  // namespace loom::scheduler::testing
