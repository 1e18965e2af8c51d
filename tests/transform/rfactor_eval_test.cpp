// SPDX-License-Identifier: Apache-2.0
// rFactor preserves semantics: rFactored sums and Welfords (var_mean, sharded and unsharded,
// non-divisible splits) evaluate, in the reference evaluator, to the numbers of the original.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <random>

#include "loom/eval/reference_evaluator.h"
#include "loom/ops/ops.h"
#include "loom/transform/propagation.h"
#include "loom/transform/rfactor.h"
#include "test_utils.h"

namespace loom::transform {
namespace {

using namespace test;

Tensor randomTensor(const std::vector<int64_t>& sizes, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-2.0, 3.0);
  Tensor t = Tensor::empty(sizes, DataType::Float32);
  for (int64_t i = 0; i < t.numel(); ++i) t.setDoubleLinear(i, dist(rng));
  return t;
}

// Builds the fusion twice (once left as is, once passed to `transform`), evaluates both on the
// same random input and expects every output element to agree to float rounding.
void expectSameResults(const std::vector<int64_t>& shape,
                       const std::function<void(Fusion&, TensorView*)>& build,
                       const std::function<void(Fusion&)>& transform) {
  Fusion original;
  Fusion transformed;
  for (Fusion* f : {&original, &transformed}) {
    FusionGuard guard(f);
    auto* x = ops::TensorBuilder().shape(shape).build();
    f->addInput(x);
    build(*f, x);
  }
  {
    FusionGuard guard(&transformed);
    transform(transformed);
    verify(transformed);
  }
  std::vector<eval::Argument> args{randomTensor(shape, 7)};
  auto want = eval::evaluateFusion(original, args);
  auto got = eval::evaluateFusion(transformed, args);
  ASSERT_EQ(want.size(), got.size());
  for (size_t o = 0; o < want.size(); ++o) {
    ASSERT_EQ(want[o].sizes(), got[o].sizes()) << "output " << o;
    for (int64_t i = 0; i < want[o].numel(); ++i) {
      double a = want[o].getDoubleLinear(i);
      double b = got[o].getDoubleLinear(i);
      EXPECT_NEAR(a, b, 1e-5 * (1.0 + std::abs(a))) << "output " << o << " element " << i;
    }
  }
}

TensorView* onlyReduction(Fusion& f) {
  for (TensorView* tv : f.allTvs()) {
    if (tv->definition() != nullptr && tv->definition()->isA<ReductionOp>()) return tv;
  }
  return nullptr;
}

// A sum over 37 elements split by 8 (40: three padded points) and rFactored over either piece,
// or over both pieces of two splits, gives the original sums.
TEST(RFactorEval, SumNonDivisible) {
  auto build = [](Fusion& f, TensorView* x) { f.addOutput(ops::sum(x, {1})); };
  for (int variant = 0; variant < 3; ++variant) {
    SCOPED_TRACE(variant);
    expectSameResults({5, 37}, build, [&](Fusion& f) {
      TensorView* s = onlyReduction(f);
      s->split(1, 8);  // [i5, r5, r8]
      if (variant == 0) {
        rFactor(s, {2});
      } else if (variant == 1) {
        rFactor(s, {1});
      } else {
        s->split(1, 2);  // [i5, r3, r2, r8]
        rFactor(s, {1, 3});
      }
      EXPECT_TRUE(s->definition()->as<ReductionOp>()->in()->domain()->hasRoot());
    });
  }
}

constexpr int64_t kB = 2, kS = 8, kE = 13, kD = 4;

// var_mean over e; with `sharded`, s is sharded over kD devices (outer split, DIDx) in loop and
// allocation and propagated to every tensor, as in the founding case.
void buildVarMean(Fusion& f, TensorView* x, bool sharded) {
  auto vm = ops::varMean(x, {2}, /*correction=*/1.0);
  f.addOutput(vm.var);
  f.addOutput(vm.mean);
  if (sharded) {
    x->setDeviceMesh(DeviceMesh::arange(kD));
    x->split(1, kD, /*inner_split=*/false);
    x->reorder(std::vector<int64_t>{1, 0, 2, 3});  // [DIDx{d}, b, s/d, e]
    x->axis(0)->parallelize(ParallelType::DIDx);
    x->setAllocationDomain(x->loop(), {true, true, true, true});
    propagateTransforms(x, {.replay_allocation = true, .parallel = ParallelCopy::DeviceOnly});
  }
}

WelfordOp* welfordOf(Fusion& f) {
  for (Expr* e : f.exprs()) {
    if (auto* w = e->dynCast<WelfordOp>()) return w;
  }
  return nullptr;
}

// Multi-output rFactor of var_mean's Welford (e = 13 split by 4: 16, three padded points), over
// the inner or the outer piece, sharded and unsharded, keeps var and mean.
TEST(RFactorEval, VarMeanShardedAndUnsharded) {
  for (bool sharded : {false, true}) {
    for (int piece = 0; piece < 2; ++piece) {
      SCOPED_TRACE(std::string(sharded ? "sharded" : "unsharded") + " piece " +
                   std::to_string(piece));
      auto build = [&](Fusion& f, TensorView* x) { buildVarMean(f, x, sharded); };
      expectSameResults({kB, kS, kE}, build, [&](Fusion& f) {
        WelfordOp* w = welfordOf(f);
        TensorView* avg = w->outAvg();
        int64_t r = avg->nDims() - 1;  // the reduction axis e, last in both layouts
        avg->split(r, 4);
        auto producers = rFactor(avg, {r + 1 - piece}, {avg, w->outM2(), w->outN()});
        ASSERT_EQ(producers.size(), 3u);
        EXPECT_EQ(avg->definition()->input(0), producers[0]);  // the final Welford reads them
      });
    }
  }
}

// A reduction over two logical axes rFactored over one of them with no split: the other, an
// untransformed reduction axis, is the producer's iteration axis (root and logical at once), so
// the partial sums keep it and the final sum reduces it. Then again on the final reduction of a
// first rFactor (whose logical is the first one's frontier), as nvFuser's tutorial chains them.
TEST(RFactorEval, UnsplitReductionAxes) {
  auto build = [](Fusion& f, TensorView* x) { f.addOutput(ops::sum(x, {0, 1})); };
  for (int64_t axis : {0, 1}) {
    SCOPED_TRACE(axis);
    expectSameResults({6, 9}, build, [&](Fusion& f) {
      TensorView* s = onlyReduction(f);
      TensorView* p = rFactor(s, {axis});
      ASSERT_EQ(p->logical().size(), 2u);
      EXPECT_EQ(p->logical()[axis]->isReduction(), true);
      EXPECT_EQ(p->logical()[1 - axis]->isReduction(), false);
      EXPECT_EQ(s->logical().size(), 1u);
      EXPECT_TRUE(s->logical()[0]->isReduction());
    });
  }
  auto build1d = [](Fusion& f, TensorView* x) { f.addOutput(ops::sum(x, {0})); };
  expectSameResults({1000}, build1d, [&](Fusion& f) {
    TensorView* s = onlyReduction(f);
    s->split(0, 16);
    s->split(0, 5);                    // [r13, r5, r16]
    TensorView* p1 = rFactor(s, {1});  // s: [r13, r16]
    TensorView* p2 = rFactor(s, {1});  // s: [r13]
    EXPECT_EQ(p1->logical().size(), 3u);
    ASSERT_EQ(p2->logical().size(), 2u);
    EXPECT_FALSE(p2->logical()[0]->isReduction());
    EXPECT_TRUE(p2->logical()[1]->isReduction());
    ASSERT_EQ(s->logical().size(), 1u);
  });
}

}  // namespace
}  // namespace loom::transform
