// SPDX-License-Identifier: Apache-2.0
// Concretization of dynamic reshapes: the concretized fusion computes what the dynamic one does,
// its IR depends only on the decisions, Symbolic IDs resolve, and the error cases.
#include "loom/segmenter/concretize.h"

#include <gtest/gtest.h>

#include <functional>

#include "loom/eval/reference_evaluator.h"
#include "loom/ir/ir.h"
#include "loom/ir/printer.h"
#include "loom/ops/ops.h"

namespace loom::segmenter {
namespace {

using ir::IterType;
using ir::TensorView;

Tensor counting(std::vector<int64_t> shape) {
  Tensor t = Tensor::empty(std::move(shape), DataType::Float32);
  for (int64_t i = 0; i < t.numel(); ++i) t.setDoubleLinear(i, double(i % 17) - 3.0);
  return t;
}

std::vector<double> values(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.getDoubleLinear(i));
  return v;
}

std::string userError(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const UserError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a UserError";
  return "";
}

#define EXPECT_HAS(msg, text) \
  EXPECT_NE(std::string(msg).find(text), std::string::npos) << "message: " << (msg)

class ConcretizeTest : public ::testing::Test {
 protected:
  TensorView* input(std::vector<int64_t> sizes) {
    TensorView* tv = ops::TensorBuilder().shape(std::move(sizes)).build();
    fusion_.addInput(tv);
    return tv;
  }
  ir::Scalar* scalarInput() {
    auto* s = ir::IrBuilder::symbolic(DataType::Int64);
    fusion_.addInput(s);
    return s;
  }

  /// A concretized copy of fusion_ for `args`, with its decisions in `c`.
  std::unique_ptr<ir::Fusion> concretized(const std::vector<eval::Argument>& args,
                                          Concretization* c = nullptr) {
    auto copy = fusion_.clone();
    Concretization got = concretizeFusion(*copy, args);
    if (c != nullptr) *c = got;
    return copy;
  }

  /// The concretized copy evaluates to exactly what fusion_ (dynamic) evaluates to.
  void expectSameResults(const std::vector<eval::Argument>& args) {
    auto copy = concretized(args);
    EXPECT_FALSE(hasDynamicReshape(*copy));
    for (TensorView* tv : copy->allTvs()) {
      for (auto* id : tv->logical()) EXPECT_FALSE(id->isSymbolic()) << ir::printFusion(*copy);
    }
    auto want = eval::evaluateFusion(fusion_, args);
    auto got = eval::evaluateFusion(*copy, args);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(got[i].sizes(), want[i].sizes()) << "output " << i;
      EXPECT_EQ(values(got[i]), values(want[i])) << "output " << i;
    }
  }

  ir::Fusion fusion_;
  ir::FusionGuard guard_{&fusion_};
};

// Merges, splits, size-1 dims and -1 give the results of the dynamic reshape at every size.
TEST_F(ConcretizeTest, EvaluatesLikeDynamic) {
  auto* x = input({-1, -1});
  auto* y = ops::reshape(x, {-1, 2});
  fusion_.addOutput(ops::exp(y));
  fusion_.addOutput(ops::reshape(x, {-1}));
  for (auto shape : {std::vector<int64_t>{3, 4}, {1, 6}, {6, 1}, {2, 1}}) {
    SCOPED_TRACE(::testing::PrintToString(shape));
    expectSameResults({counting(shape)});
  }
}

// Scalar sizes that are 1 at run time become broadcasts that later ops stretch.
TEST_F(ConcretizeTest, RuntimeSizeOneBroadcasts) {
  auto* x = input({-1});
  auto* n = scalarInput();
  auto* r = ops::reshape(x, {n, -1});
  auto* other = input({-1, -1});
  fusion_.addOutput(ops::add(r, other));
  fusion_.addOutput(ops::sum(r, {0}));
  expectSameResults({counting({3}), int64_t{1}, counting({4, 3})});
  expectSameResults({counting({6}), int64_t{2}, counting({2, 3})});
  Concretization c;
  auto copy = concretized({counting({3}), int64_t{1}, counting({4, 3})}, &c);
  ASSERT_EQ(c.reshapes.size(), 1u);
  EXPECT_EQ(c.reshapes[0].broadcast, (std::vector<bool>{true, false}));
}

// Decisions differ exactly when the grouping or the size-1 pattern differs; equal decisions give
// the same IR text, whose splits use the size Scalars (not constants).
TEST_F(ConcretizeTest, DescriptionsAndSharedIr) {
  auto* x = input({-1, -1});
  fusion_.addOutput(ops::reshape(x, {-1}));
  Concretization a, b, c;
  auto fa = concretized({counting({2, 3})}, &a);
  auto fb = concretized({counting({4, 5})}, &b);
  auto fc = concretized({counting({1, 5})}, &c);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(a.toString(), "reshape 0: squeeze [f, f] groups [0:2->0:1] broadcast [f]");
  EXPECT_EQ(c.toString(), "reshape 0: squeeze [t, f] groups [0:1->0:1] broadcast [f]");
  EXPECT_EQ(ir::printFusion(*fa), ir::printFusion(*fb));
  EXPECT_NE(ir::printFusion(*fa), ir::printFusion(*fc));
  EXPECT_EQ(concretizationFor(fusion_, std::vector<eval::Argument>{counting({4, 5})}), a);
}

// A split of the rebuilt reshape takes the requested size Scalar as its factor.
TEST_F(ConcretizeTest, SplitBySizeScalar) {
  auto* x = input({-1});
  auto* n = scalarInput();
  fusion_.addOutput(ops::reshape(x, {n, -1}));
  auto copy = concretized({counting({6}), int64_t{2}});
  TensorView* out = copy->outputs()[0]->as<TensorView>();
  auto* op = out->definition()->as<ir::ReshapeOp>();
  EXPECT_FALSE(op->isDynamic());
  auto* split = out->logical()[1]->definition()->as<ir::Split>();
  EXPECT_FALSE(split->factor()->isConst());
  expectSameResults({counting({6}), int64_t{2}});
  expectSameResults({counting({12}), int64_t{3}});
}

// expand of a reshape dim that is 1 at run time becomes an expanded broadcast.
TEST_F(ConcretizeTest, ExpandOfSymbolic) {
  auto* x = input({-1});
  auto* n = scalarInput();
  auto* r = ops::reshape(x, {n, -1});
  auto* e = ops::expand(r, {4, -1});
  fusion_.addOutput(e);
  auto copy = concretized({counting({3}), int64_t{1}});
  TensorView* out = copy->outputs()[0]->as<TensorView>();
  EXPECT_TRUE(out->logical()[0]->isBroadcast());
  EXPECT_TRUE(out->logical()[0]->hasExpandedExtent());
  expectSameResults({counting({3}), int64_t{1}});
  expectSameResults({counting({8}), int64_t{4}});
}

// A reshape of zero elements becomes a FullOp of the output shape.
TEST_F(ConcretizeTest, ZeroElements) {
  auto* x = input({-1, 3});
  fusion_.addOutput(ops::reshape(x, {3, -1}));
  Concretization c;
  auto copy = concretized({counting({0, 3})}, &c);
  ASSERT_EQ(c.reshapes.size(), 1u);
  EXPECT_TRUE(c.reshapes[0].empty);
  EXPECT_TRUE(copy->outputs()[0]->definition()->isA<ir::FullOp>());
  expectSameResults({counting({0, 3})});
}

// Reshapes in a chain are concretized in order, the second from the first's rebuilt output.
TEST_F(ConcretizeTest, Chain) {
  auto* x = input({-1, -1, -1});
  auto* n = scalarInput();
  auto* a = ops::reshape(x, {-1, n});
  auto* b = ops::reshape(ops::neg(a), {n, -1});
  fusion_.addOutput(b);
  expectSameResults({counting({2, 3, 4}), int64_t{4}});
  expectSameResults({counting({2, 1, 6}), int64_t{1}});
}

// Element counts that do not match are UserErrors naming the tensor and both shapes.
TEST_F(ConcretizeTest, Errors) {
  auto* x = input({-1});
  auto* n = scalarInput();
  fusion_.addOutput(ops::reshape(x, {n, 2}));
  std::string msg = userError([&] { concretized({counting({6}), int64_t{2}}); });
  EXPECT_HAS(msg, "reshape: cannot reshape " + x->toString() +
                      " of shape [6] (6 elements) to shape [2, 2] (4 elements)");
  msg = userError([&] { concretized({counting({6}), int64_t{-3}}); });
  EXPECT_HAS(msg, "size -3 at dimension 0 of the requested shape [-3, 2]");
}

// A Symbolic dim that is 1 at run time and broadcasts against another Symbolic dim takes the
// other's size; a reduction that copied the stale size is reported as unsupported.
TEST_F(ConcretizeTest, BroadcastBetweenSymbolicDims) {
  auto* x = input({-1});
  auto* y = input({-1});
  auto* n = scalarInput();
  auto* m = scalarInput();
  auto* sum = ops::add(ops::reshape(x, {n}), ops::reshape(y, {m}));
  fusion_.addOutput(sum);
  expectSameResults({counting({1}), counting({5}), int64_t{1}, int64_t{5}});
  fusion_.addOutput(ops::sum(sum, {0}));
  std::string msg = userError([&] {
    concretized({counting({1}), counting({5}), int64_t{1}, int64_t{5}});
  });
  EXPECT_HAS(msg, "not supported by concretization yet");
}

// A fusion without dynamic reshapes is left alone.
TEST_F(ConcretizeTest, StaticFusionUnchanged) {
  auto* x = input({2, 3});
  fusion_.addOutput(ops::reshape(x, {3, 2}));
  std::string before = ir::printFusion(fusion_);
  EXPECT_FALSE(hasDynamicReshape(fusion_));
  Concretization c = concretizeFusion(fusion_, std::vector<eval::Argument>{counting({2, 3})});
  EXPECT_TRUE(c.empty());
  EXPECT_EQ(c.toString(), "static");
  EXPECT_EQ(ir::printFusion(fusion_), before);
}

}  // namespace
}  // namespace loom::segmenter
