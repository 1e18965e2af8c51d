// SPDX-License-Identifier: Apache-2.0
// Binding checks the extent equalities the fusion's exprs impose (eval/shape_constraints.h):
// dims an expr lines up have equal sizes unless a broadcast is declared, and a mismatch names
// the expr, the tensors, the dims and where each size came from.
#include <gtest/gtest.h>

#include "eval/eval_test_utils.h"
#include "loom/eval/expression_evaluator.h"
#include "loom/ir/parser.h"

namespace loom::eval::testing {
namespace {

class ShapeConstraintsTest : public EvalTest {};

std::vector<double> counting(int64_t n) {
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(double(i));
  return v;
}

// Two symbolic inputs of one add: sizes 4 and 1 (no broadcast declared) and 4 and 8 both fail,
// naming both inputs.
TEST_F(ShapeConstraintsTest, PointwiseOperandsMustAgree) {
  auto* x = input({-1});
  auto* y = input({-1});
  fusion_.addOutput(ops::add(x, y));
  for (int64_t ysize : {1, 8}) {
    std::string msg = userErrorOf([&] {
      evaluateWith(fusion_, {makeTensor({4}, counting(4)), makeTensor({ysize}, counting(ysize))});
    });
    EXPECT_HAS(msg, "shapes disagree in");
    EXPECT_HAS(msg, "from input 0 (" + x->toString() + ") dimension 0");
    EXPECT_HAS(msg, "from input 1 (" + y->toString() + ") dimension 0");
    EXPECT_HAS(msg, "has size " + std::to_string(ysize));
    EXPECT_HAS(msg, "has size 4");
  }
  // Equal sizes run.
  expectValues(valuesOf(evaluateWith(fusion_, {makeTensor({3}, counting(3)),
                                               makeTensor({3}, counting(3))})[0]),
               {0, 2, 4});
}

// The same fusion with a declared broadcast stretches the size-1 operand.
TEST_F(ShapeConstraintsTest, DeclaredBroadcastStretches) {
  auto* x = input({-1, -1});
  auto* y = input({-1});
  fusion_.addOutput(ops::add(x, ops::broadcast(y, {true, false})));
  auto out = evaluateWith(fusion_, {makeTensor({2, 3}, counting(6)), makeTensor({3}, {10, 20, 30})});
  expectValues(valuesOf(out[0]), {10, 21, 32, 13, 24, 35});
}

// A reduction's input and an extent bound by another input: [s0, s1] summed over dim 1 and
// added to [s2]; s0 != s2 fails even though each input is well formed on its own.
TEST_F(ShapeConstraintsTest, ReductionAndOtherInput) {
  auto* x = input({-1, -1});
  auto* y = input({-1});
  fusion_.addOutput(ops::add(ops::sum(x, {1}), y));
  std::string msg = userErrorOf([&] {
    evaluateWith(fusion_, {makeTensor({2, 3}, counting(6)), makeTensor({5}, counting(5))});
  });
  EXPECT_HAS(msg, "shapes disagree in");
  EXPECT_HAS(msg, "from input 1 (" + y->toString() + ") dimension 0");
  EXPECT_HAS(msg, "from input 0 (" + x->toString() + ") dimension 0");
}

// A .fus whose tensors carry constant extents that disagree with the bound input: the reduced
// dim of T1 is 8 but the input's dim 1 is bound to 6.
TEST_F(ShapeConstraintsTest, ConstantExtentAgainstBoundInput) {
  auto f = ir::parseFusion(R"(
inputs:  T0
outputs: T1
s0 : i64
s1 : i64
T0 : f32 global [i0{s0}, i1{s1}]
T1 : f32 global [i2{s0}, r3{8}]
T1 = sum(T0, init=0.0)
)");
  std::string msg = userErrorOf([&] { evaluateWith(*f, {makeTensor({2, 6}, counting(12))}); });
  EXPECT_HAS(msg, "shapes disagree in T1 = sum(T0");
  EXPECT_HAS(msg, "T0 dimension 1 has size 6 (extent s1, from input 0 (T0) dimension 1)");
  EXPECT_HAS(msg, "T1 reduced dimension 1 has size 8");
  auto ok = evaluateWith(*f, {makeTensor({2, 8}, counting(16))});
  expectValues(valuesOf(ok[0]), {28, 92});
}

// ExpressionEvaluator::bindInputs itself checks (the executor and the schedulers bind through
// it), not only the reference evaluator.
TEST_F(ShapeConstraintsTest, BindInputsChecks) {
  auto* x = input({-1, -1});
  auto* y = input({-1, -1});
  fusion_.addOutput(ops::mul(x, y));
  std::vector<Argument> args{makeTensor({4, 2}, counting(8)), makeTensor({4, 1}, counting(4))};
  std::string msg = userErrorOf([&] {
    ExpressionEvaluator ee;
    ee.bindInputs(fusion_, args);
  });
  EXPECT_HAS(msg, y->toString() + " dimension 1 has size 1");
}

// A symbolic (dynamic reshape) dim that is 1 at run time is a broadcast decided then: no error,
// and it stretches.
TEST_F(ShapeConstraintsTest, RuntimeBroadcastOfDynamicReshape) {
  auto* x = input({-1, -1});
  auto* y = input({-1});
  auto* n = ir::IrBuilder::create<ir::Scalar>(DataType::Int64);
  auto* m = ir::IrBuilder::create<ir::Scalar>(DataType::Int64);
  fusion_.addInput(n);
  fusion_.addInput(m);
  fusion_.addOutput(ops::add(x, ops::reshape(y, {n, m})));
  auto out = evaluateWith(fusion_, {makeTensor({2, 3}, counting(6)), makeTensor({2}, {10, 20}),
                                    int64_t{2}, int64_t{1}});
  expectValues(valuesOf(out[0]), {10, 11, 12, 23, 24, 25});
}

// expand stretches a size-1 dim of its input to the requested size.
TEST_F(ShapeConstraintsTest, ExpandStretchesSizeOne) {
  auto* x = input({-1, -1});
  auto* y = input({-1, 1});
  fusion_.addOutput(ops::add(x, ops::expand(y, {2, 3})));
  auto out = evaluateWith(fusion_, {makeTensor({2, 3}, counting(6)), makeTensor({2, 1}, {10, 20})});
  expectValues(valuesOf(out[0]), {10, 11, 12, 23, 24, 25});
}

// expand of a dim the fusion declares non-broadcast, whose size is known only at run time, to a
// size: the input must have that size, as in torch (size 1 included: no broadcast is declared).
// Before, the requested size was ignored and the output kept the input's size. The output dim
// keeps the input's extent and the size asked for is an extent requirement, checked by binding.
TEST_F(ShapeConstraintsTest, ExpandOfANonBroadcastDimMustMatch) {
  auto* x = input({-1, -1});
  auto* n = ir::IrBuilder::create<ir::Scalar>(DataType::Int64);
  fusion_.addInput(n);
  auto* e = ops::expand(x, {5, ops::Size(n)});
  fusion_.addOutput(e);
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{3, 2}, {1, 2}, {5, 4}}) {
    std::string msg = userErrorOf([&] {
      evaluateWith(fusion_, {makeTensor({rows, cols}, counting(rows * cols)), int64_t{2}});
    });
    if (rows != 5) {
      EXPECT_HAS(msg, "expand to " + e->toString() + ": dimension 0 of " + x->toString() +
                          " is not a broadcast dimension, so it must already have the size 5");
      EXPECT_HAS(msg, "the arguments make that extent " + std::to_string(rows));
    } else {
      EXPECT_HAS(msg, "expand to " + e->toString() + ": dimension 1 of " + x->toString() +
                          " is not a broadcast dimension, so it must already have the size " +
                          n->toString());
      EXPECT_HAS(msg, "the arguments make that extent 4 and " + n->toString() + " 2");
    }
  }
  auto out = evaluateWith(fusion_, {makeTensor({5, 2}, counting(10)), int64_t{2}});
  EXPECT_EQ(out[0].sizes(), (std::vector<int64_t>{5, 2}));
  expectValues(valuesOf(out[0]), counting(10));
}

}  // namespace
}  // namespace loom::eval::testing
