// SPDX-License-Identifier: Apache-2.0
// Reference evaluator on dynamic (unconcretized) reshapes and expands: row-major results for
// runtime sizes, and the runtime errors.
#include "eval/eval_test_utils.h"

namespace loom::eval::testing {
namespace {

using DynamicReshapeEvalTest = EvalTest;

std::vector<double> counting(int64_t n) {
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(double(i));
  return v;
}

// A reshape with -1 of a symbolic input is the row-major reinterpretation at every size.
TEST_F(DynamicReshapeEvalTest, InferredSize) {
  auto* x = input({-1, -1});
  auto* y = ops::reshape(x, {-1, 2});
  fusion_.addOutput(ops::exp(y));
  fusion_.addOutput(y);
  for (auto shape : {std::vector<int64_t>{3, 4}, std::vector<int64_t>{1, 6}}) {
    auto outs = evaluateWith(fusion_, {makeTensor(shape, counting(shape[0] * shape[1]))});
    EXPECT_EQ(outs[1].sizes(), (std::vector<int64_t>{shape[0] * shape[1] / 2, 2}));
    expectValues(valuesOf(outs[1]), counting(shape[0] * shape[1]));
  }
}

// Scalar sizes from fusion inputs; a size that is 1 at run time broadcasts in a later add.
TEST_F(DynamicReshapeEvalTest, ScalarSizesBroadcastAtRunTime) {
  auto* x = input({-1});
  auto* n = ir::IrBuilder::symbolic(DataType::Int64);
  fusion_.addInput(n);
  auto* r = ops::reshape(x, {n, -1});  // [n, numel / n]
  auto* other = input({-1, -1});
  auto* y = ops::add(r, other);
  auto outs = run(
      {y}, {makeTensor({3}, {1, 2, 3}), int64_t{1}, makeTensor({2, 3}, {10, 20, 30, 40, 50, 60})});
  EXPECT_EQ(outs[0].sizes(), (std::vector<int64_t>{2, 3}));
  expectValues(valuesOf(outs[0]), {11, 22, 33, 41, 52, 63});
}

// Element counts that do not match at run time, and negative sizes, are UserErrors.
TEST_F(DynamicReshapeEvalTest, RuntimeErrors) {
  auto* x = input({-1});
  auto* n = ir::IrBuilder::symbolic(DataType::Int64);
  fusion_.addInput(n);
  auto* y = ops::reshape(x, {n, 2});
  fusion_.addOutput(y);
  std::string msg = userErrorOf([&] {
    evaluateWith(fusion_, {makeTensor({6}, counting(6)), int64_t{2}});
  });
  EXPECT_HAS(msg, "reshape: cannot reshape " + x->toString() +
                      " of shape [6] (6 elements) to shape [2, 2] (4 elements)");
  msg = userErrorOf([&] { evaluateWith(fusion_, {makeTensor({6}, counting(6)), int64_t{-3}}); });
  EXPECT_HAS(msg, "negative requested size -3 at dimension 0");
}

// A -1 whose runtime product does not divide the element count is a UserError.
TEST_F(DynamicReshapeEvalTest, InferredDoesNotDivide) {
  auto* x = input({-1});
  auto* y = ops::reshape(x, {-1, 4});
  fusion_.addOutput(y);
  std::string msg = userErrorOf([&] { evaluateWith(fusion_, {makeTensor({6}, counting(6))}); });
  EXPECT_HAS(msg, "(6 elements) to shape [1, 4] (4 elements)");
}

// Zero-element tensors reshape dynamically (the static path rejects them).
TEST_F(DynamicReshapeEvalTest, ZeroElements) {
  auto* x = input({-1, 3});
  auto* y = ops::reshape(x, {3, -1});
  auto outs = run({y}, {makeTensor({0, 3}, {})});
  EXPECT_EQ(outs[0].sizes(), (std::vector<int64_t>{3, 0}));
}

// expand of a Symbolic dim that is 1 at run time stretches it to the requested size.
TEST_F(DynamicReshapeEvalTest, ExpandSymbolic) {
  auto* x = input({-1});
  auto* y = ops::expand(ops::reshape(x, {x->logical()[0]->extent(), 1}), {-1, 3});
  auto* z = ops::expand(ops::reshape(x, {1, -1}), {4, -1});
  auto outs = run({y, z}, {makeTensor({2}, {7, 8})});
  expectValues(valuesOf(outs[0]), {7, 7, 7, 8, 8, 8});
  EXPECT_EQ(outs[1].sizes(), (std::vector<int64_t>{4, 2}));
}

}  // namespace
}  // namespace loom::eval::testing
