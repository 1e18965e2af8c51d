// SPDX-License-Identifier: Apache-2.0
// Reference evaluator on full, iota and arange, with constant and runtime sizes.
#include "eval/eval_test_utils.h"

namespace loom::eval::testing {
namespace {

using FactoryEvalTest = EvalTest;

// full fills every element with the value rounded to the dtype; a scalar input gives the size.
TEST_F(FactoryEvalTest, FullScalarSize) {
  auto* n = ir::IrBuilder::symbolic(DataType::Int64);
  fusion_.addInput(n);
  auto* y = ops::full({n, 2}, 0.1, DataType::Float32);
  auto outs = run({y}, {int64_t{3}});
  EXPECT_EQ(outs[0].sizes(), (std::vector<int64_t>{3, 2}));
  expectValues(valuesOf(outs[0]), std::vector<double>(6, double(0.1f)));
}

// A negative runtime size is a UserError naming the tensor and the dim.
TEST_F(FactoryEvalTest, FullNegativeRuntimeSize) {
  auto* n = ir::IrBuilder::symbolic(DataType::Int64);
  fusion_.addInput(n);
  auto* y = ops::zeros({2, n});
  fusion_.addOutput(y);
  std::string msg = userErrorOf([&] { evaluateWith(fusion_, {int64_t{-4}}); });
  EXPECT_HAS(msg, "full: " + y->toString() + " would have the negative size -4 at dimension 1");
}

// iota: element i is start + i * step in the dtype.
TEST_F(FactoryEvalTest, Iota) {
  auto* a = ops::iota(4, 10, -3);
  auto* b = ops::iota(3, 0.5, 0.25, DataType::Float32);
  auto outs = run({a, b}, {});
  EXPECT_EQ(outs[0].dtype(), DataType::Int64);
  expectValues(valuesOf(outs[0]), {10, 7, 4, 1});
  expectValues(valuesOf(outs[1]), {0.5, 0.75, 1.0});
}

// arange with a fractional step: length ceil((end - start) / step) as torch, values
// start + i * step with start and step in the dtype first (torch on CUDA), rounded to float32.
TEST_F(FactoryEvalTest, ArangeFractionalStep) {
  auto* y = ops::arange(0.0, 1.0, 0.3);
  auto* z = ops::arange(1, -2, -0.5, DataType::Float64);
  auto outs = run({y, z}, {});
  std::vector<double> want;
  for (int i = 0; i < 4; ++i) want.push_back(double(float(i * double(0.3f))));
  expectValues(valuesOf(outs[0]), want);
  expectValues(valuesOf(outs[1]), {1.0, 0.5, 0.0, -0.5, -1.0, -1.5});
}

// arange with integer dtype casts start and step first (torch): step 1.5 becomes 1.
TEST_F(FactoryEvalTest, ArangeIntegerDtypeCastsStep) {
  auto* y = ops::arange(0, 5, 1.5, DataType::Int64);
  expectValues(eval1(y, {}), {0, 1, 2, 3});
}

// arange with a scalar end computes its length at run time.
TEST_F(FactoryEvalTest, ArangeScalarEnd) {
  auto* end = ir::IrBuilder::symbolic(DataType::Int64);
  fusion_.addInput(end);
  auto* y = ops::arange(1, end, 3);
  fusion_.addOutput(y);
  expectValues(valuesOf(evaluateWith(fusion_, {int64_t{11}})[0]), {1, 4, 7, 10});
  expectValues(valuesOf(evaluateWith(fusion_, {int64_t{1}})[0]), {});
  std::string msg = userErrorOf([&] { evaluateWith(fusion_, {int64_t{-5}}); });
  EXPECT_HAS(msg, "iota: " + y->toString() + " would have the negative length -2");
}

}  // namespace
}  // namespace loom::eval::testing
