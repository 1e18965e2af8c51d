// SPDX-License-Identifier: Apache-2.0
// Tests of the Welford to two-pass translation: numbers, structure, the founding case's sharding,
// and translation only when the persistent scheduler accepts.
#include <gtest/gtest.h>

#include <memory>

#include "loom/eval/compare.h"
#include "loom/eval/reference_evaluator.h"
#include "loom/ir/ir.h"
#include "loom/ir/verifier.h"
#include "loom/ops/ops.h"
#include "loom/segmenter/welford_translation.h"
#include "loom/transform/propagation.h"
#include "loom/transform/rfactor.h"
#include "transform/test_utils.h"

namespace loom::segmenter {
namespace {

using namespace loom::ir;
using transform::test::describeAllocation;
using transform::test::describeLoop;

constexpr int64_t kB = 2, kS = 8, kE = 12, kD = 4;

struct WelfordFusion {
  Fusion fusion;
  TensorView* x = nullptr;
  TensorView* avg = nullptr;
  TensorView* m2 = nullptr;
  TensorView* n = nullptr;
};

// welford(x[b, s, e], {2}) with avg, m2 and n as outputs; `sharded` shards s over kD devices in
// loop and allocation and propagates it, as the founding case does.
std::unique_ptr<WelfordFusion> build(DataType dtype, bool sharded) {
  auto f = std::make_unique<WelfordFusion>();
  FusionGuard guard(&f->fusion);
  f->x = ops::TensorBuilder().shape({kB, kS, kE}).dtype(dtype).build();
  f->fusion.addInput(f->x);
  auto w = ops::welford(f->x, {2});
  f->avg = w.avg;
  f->m2 = w.m2;
  f->n = w.n;
  for (TensorView* tv : {w.avg, w.m2, w.n}) f->fusion.addOutput(tv);
  if (sharded) {
    TensorView* x = f->x;
    x->setDeviceMesh(DeviceMesh::arange(kD));
    x->split(1, kD, /*inner_split=*/false);
    x->reorder(std::vector<int64_t>{1, 0, 2, 3});
    x->axis(0)->parallelize(ParallelType::DIDx);
    x->setAllocationDomain(x->loop(), {true, true, true, true});
    transform::propagateTransforms(
        x, {.replay_allocation = true, .parallel = transform::ParallelCopy::DeviceOnly});
  }
  return f;
}

// x + 1e6: a large offset makes a naive sum-of-squares variance lose every digit.
Tensor offsetInput(DataType dtype, uint64_t seed) {
  Tensor t = Tensor::empty({kB, kS, kE}, dtype);
  fillRandom(t, seed);
  Tensor d = Tensor::empty({kB, kS, kE}, DataType::Float64);
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = dtype == DataType::Float64 ? t.dataAs<double>()[i] : t.dataAs<float>()[i];
    d.dataAs<double>()[i] = v + 1e6;
  }
  if (dtype == DataType::Float64) return d;
  for (int64_t i = 0; i < t.numel(); ++i) t.dataAs<float>()[i] = float(d.dataAs<double>()[i]);
  return t;
}

bool hasWelford(const Fusion& f) {
  for (Expr* e : f.exprs()) {
    if (e->isA<WelfordOp>()) return true;
  }
  return false;
}

// Translation rewrites the definitions of avg, m2 and n in place: avg = sum / N (no reduction
// IDs), m2 a sum reduction, n = N; the outputs are the same tensors.
TEST(WelfordTranslation, RedefinesOutputsInPlace) {
  auto f = build(DataType::Float32, false);
  EXPECT_TRUE(hasTranslatableWelford(f->fusion));
  EXPECT_EQ(translateWelfordInFusion(f->fusion), 1);
  EXPECT_FALSE(hasWelford(f->fusion));
  EXPECT_EQ(f->fusion.outputs(), (std::vector<Val*>{f->avg, f->m2, f->n}));
  auto* div = f->avg->definition()->as<BinaryOp>();
  EXPECT_EQ(div->opType(), BinaryOpType::Div);
  EXPECT_TRUE(div->lhs()->definition()->isA<ReductionOp>());
  EXPECT_TRUE(div->rhs()->as<Scalar>()->constDouble() == double(kE));
  EXPECT_EQ(f->m2->definition()->as<ReductionOp>()->opType(), ReductionOpType::Sum);
  EXPECT_TRUE(f->n->definition()->isA<UnaryOp>());
  EXPECT_FALSE(f->avg->domain()->hasReduction());
  EXPECT_FALSE(f->n->domain()->hasReduction());
  EXPECT_TRUE(f->m2->domain()->hasReduction());
  verify(f->fusion);
}

// The translated fusion computes the original's avg, m2 and n: in Float64 (the algebra alone)
// to 1e-12 relative, on data with a 1e6 offset.
TEST(WelfordTranslation, PreservesNumbersFloat64LargeOffset) {
  auto original = build(DataType::Float64, false);
  auto translated = build(DataType::Float64, false);
  translateWelfordInFusion(translated->fusion);
  std::vector<eval::Argument> args = {offsetInput(DataType::Float64, 1)};
  auto a = eval::evaluateFusion(original->fusion, args);
  auto b = eval::evaluateFusion(translated->fusion, args);
  ASSERT_EQ(a.size(), 3u);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_FALSE(eval::expectClose(b[i], a[i], {1e-12, 1e-12}, "output " + std::to_string(i)));
  }
  EXPECT_GT(a[1].dataAs<double>()[0], 0.1);  // m2 of 12 values in [-1, 1) is not tiny
}

// In Float32, the two-pass form stays within the reduction tolerance of Welford despite the
// offset (the mean is subtracted before squaring).
TEST(WelfordTranslation, PreservesNumbersFloat32LargeOffset) {
  auto original = build(DataType::Float32, false);
  auto translated = build(DataType::Float32, false);
  translateWelfordInFusion(translated->fusion);
  std::vector<eval::Argument> args = {offsetInput(DataType::Float32, 2)};
  auto a = eval::evaluateFusion(original->fusion, args);
  auto b = eval::evaluateFusion(translated->fusion, args);
  // avg ~ 1e6: relative tolerance; m2: absolute, scaled by the offset's float spacing.
  EXPECT_FALSE(eval::expectClose(b[0], a[0], eval::defaultTolerance(DataType::Float32, kE), "avg"));
  EXPECT_FALSE(eval::expectClose(b[1], a[1], {1e-2, 0.5}, "m2"));
  EXPECT_FALSE(eval::expectClose(b[2], a[2], {0, 0}, "n"));
}

// The founding case: translating a sequence-sharded Welford keeps the DID split in the loop and
// allocation of avg, m2 and n (contiguity aligned with allocation), and the tensors it creates
// carry the same sharding.
TEST(WelfordTranslation, ShardedWelfordKeepsDidSplitOnAllOutputs) {
  auto original = build(DataType::Float64, true);
  auto f = build(DataType::Float64, true);
  translateWelfordInFusion(f->fusion);
  const std::string loop =
      "[split(L1,4,outer).o{4:iter:DIDx}, L0{2:iter:serial}, split(L1,4,outer).i{2:iter:serial}]";
  for (TensorView* tv : {f->avg, f->n}) {
    EXPECT_EQ(describeLoop(tv), loop) << tv->toString();
    ASSERT_TRUE(tv->domain()->hasAllocation()) << tv->toString();
    EXPECT_EQ(describeAllocation(tv), loop) << tv->toString();
    EXPECT_EQ(tv->contiguity(), (Contiguity{true, true, true})) << tv->toString();
  }
  const std::string m2_loop =
      "[split(L1,4,outer).o{4:iter:DIDx}, L0{2:iter:serial}, split(L1,4,outer).i{2:iter:serial}, "
      "L2{12:red:serial}]";
  EXPECT_EQ(describeLoop(f->m2), m2_loop);
  EXPECT_EQ(describeAllocation(f->m2), m2_loop);
  for (TensorView* tv : f->fusion.allTvs()) {
    EXPECT_EQ(tv->axis(0)->parallelType(), ParallelType::DIDx) << tv->toString();
    EXPECT_EQ(tv->deviceMesh(), DeviceMesh::arange(kD)) << tv->toString();
  }
  verify(f->fusion);
  std::vector<eval::Argument> args = {offsetInput(DataType::Float64, 3)};
  auto a = eval::evaluateFusion(original->fusion, args);
  auto b = eval::evaluateFusion(f->fusion, args);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_FALSE(eval::expectClose(b[i], a[i], {1e-12, 1e-12}, "output " + std::to_string(i)));
  }
}

// translateApplicableWelford translates only when the persistent scheduler accepts: a row too
// long for registers and shared memory leaves the Welford in place and says why.
TEST(WelfordTranslation, OnlyWhenPersistentSchedulerAccepts) {
  Fusion f;
  {
    FusionGuard guard(&f);
    auto* x = ops::TensorBuilder().shape({2, int64_t(1) << 26}).build();
    f.addInput(x);
    auto vm = ops::varMean(x, {1});
    f.addOutput(vm.var);
    f.addOutput(vm.mean);
  }
  std::string why;
  Tensor big = Tensor::empty({2, int64_t(1) << 26}, DataType::Float32);
  std::vector<eval::Argument> args = {big};
  EXPECT_FALSE(translateApplicableWelford(f, args, {}, &why));
  EXPECT_NE(why.find("rows of 67108864 elements"), std::string::npos) << why;
  EXPECT_TRUE(hasWelford(f));
}

// Rows read again from global memory keep their Welford (one read where two passes read twice),
// unless the rows in flight stay in L2 between the passes: var_mean of bf16 rows of 50257 (26.5
// MB in flight on an H100's 50 MB L2) translates; rows of 128256 (67 MB) do not.
TEST(WelfordTranslation, ReloadedRowsTranslateOnlyWhileTheyStayInL2) {
  scheduler::DeviceInfo h100;
  h100.l2_bytes = 50 * 1024 * 1024;
  auto var_mean = [](int64_t rows, int64_t width) {
    auto f = std::make_unique<Fusion>();
    FusionGuard guard(f.get());
    auto* x = ops::TensorBuilder().shape({rows, width}).dtype(DataType::BFloat16).build();
    f->addInput(x);
    auto vm = ops::varMean(x, {1});
    f->addOutput(vm.var);
    f->addOutput(vm.mean);
    return f;
  };
  std::string why;
  auto in_l2 = var_mean(1335, 50257);
  std::vector<eval::Argument> small = {Tensor::empty({1335, 50257}, DataType::BFloat16)};
  EXPECT_TRUE(translateApplicableWelford(*in_l2, small, h100, &why)) << why;
  auto too_wide = var_mean(523, 128256);
  std::vector<eval::Argument> wide = {Tensor::empty({523, 128256}, DataType::BFloat16)};
  EXPECT_FALSE(translateApplicableWelford(*too_wide, wide, h100, &why));
  EXPECT_NE(why.find("read from global memory once per pass"), std::string::npos) << why;
}

// A Welford that combines partial statistics (the final op of an rFactor) is not translatable,
// and asking for it is a UserError.
TEST(WelfordTranslation, PartialInputIsNotTranslatable) {
  auto f = build(DataType::Float32, false);
  FusionGuard guard(&f->fusion);
  EXPECT_TRUE(isTranslatableWelford(f->avg->definition()->as<WelfordOp>()));
  f->avg->split(2, 4);
  transform::rFactor(f->avg, {3}, {f->avg, f->m2, f->n});
  auto* final_op = f->avg->definition()->as<WelfordOp>();
  EXPECT_FALSE(isTranslatableWelford(final_op));
  EXPECT_FALSE(hasTranslatableWelford(f->fusion));  // the producer's outputs have a root domain
  std::string msg = transform::test::userError([&] { translateWelford(f->fusion, final_op); });
  EXPECT_NE(msg.find("needs a raw tensor input"), std::string::npos) << msg;
}

}  // namespace
}  // namespace loom::segmenter
