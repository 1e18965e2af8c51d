// SPDX-License-Identifier: Apache-2.0
// ExpressionEvaluator: scalar math, binding, and validation of runtime inputs.
#include "loom/eval/expression_evaluator.h"

#include <limits>

#include "eval/eval_test_utils.h"
#include "loom/ir/parser.h"
#include "loom/ir/printer.h"
#include "loom/ops/ops.h"

namespace loom::eval::testing {
namespace {

using ir::IrBuilder;
using ir::Scalar;
namespace sm = ir::scalar_math;

using ExpressionEvaluatorTest = EvalTest;

// Constants evaluate to themselves; unbound symbols to nullopt; bound ones to their value.
TEST_F(ExpressionEvaluatorTest, ConstantsAndBindings) {
  ExpressionEvaluator ee;
  Scalar* s = IrBuilder::symbolic(kIndexType);
  EXPECT_EQ(ee.evaluateInt(IrBuilder::index(7)), 7);
  EXPECT_FALSE(ee.evaluate(s).has_value());
  ee.bind(s, int64_t(5));
  EXPECT_EQ(ee.evaluateInt(s), 5);
  EXPECT_EQ(ee.evaluateInt(sm::add(sm::mul(s, IrBuilder::index(3)), IrBuilder::index(1))), 16);
}

// Integer Div truncates, Mod takes the dividend's sign, CeilDiv is the exact ceiling.
TEST_F(ExpressionEvaluatorTest, IntegerIndexMath) {
  Scalar* a = IrBuilder::symbolic(kIndexType);
  Scalar* b = IrBuilder::symbolic(kIndexType);
  Scalar* q = sm::div(a, b);
  Scalar* r = sm::mod(a, b);
  Scalar* c = sm::ceilDiv(a, b);
  struct Case {
    int64_t a, b, q, r, c;
  };
  for (Case k : {Case{7, 2, 3, 1, 4}, Case{-7, 2, -3, -1, -3}, Case{7, -2, -3, 1, -3},
                 Case{-7, -2, 3, -1, 4}, Case{8, 4, 2, 0, 2}}) {
    ExpressionEvaluator ee;
    ee.bind(a, k.a);
    ee.bind(b, k.b);
    EXPECT_EQ(ee.evaluateInt(q), k.q) << k.a << " / " << k.b;
    EXPECT_EQ(ee.evaluateInt(r), k.r) << k.a << " % " << k.b;
    EXPECT_EQ(ee.evaluateInt(c), k.c) << "ceilDiv(" << k.a << ", " << k.b << ")";
  }
}

// Integer scalar math is exact beyond 2^53.
TEST_F(ExpressionEvaluatorTest, LargeIntegersExact) {
  ExpressionEvaluator ee;
  Scalar* a = IrBuilder::symbolic(DataType::Int64);
  ee.bind(a, int64_t(1) << 60);
  EXPECT_EQ(ee.evaluateInt(sm::add(a, IrBuilder::index(1))), (int64_t(1) << 60) + 1);
}

// Integer division in scalar math is defined for every operand, as in kernels (docs/ops.md):
// by zero 0, the most negative value by -1 itself.
TEST_F(ExpressionEvaluatorTest, ScalarDivisionIsTotal) {
  ExpressionEvaluator ee;
  Scalar* a = IrBuilder::symbolic(kIndexType);
  Scalar* b = IrBuilder::symbolic(kIndexType);
  Scalar* q = sm::div(a, b);
  ee.bind(a, int64_t(4));
  ee.bind(b, int64_t(0));
  EXPECT_EQ(ee.evaluateInt(q), 0);
  ExpressionEvaluator ee2;
  ee2.bind(a, std::numeric_limits<int64_t>::min());
  ee2.bind(b, int64_t(-1));
  EXPECT_EQ(ee2.evaluateInt(q), std::numeric_limits<int64_t>::min());
}

// A Float32 scalar holds its value rounded to float.
TEST_F(ExpressionEvaluatorTest, FloatScalarsRoundToDtype) {
  ExpressionEvaluator ee;
  Scalar* s = IrBuilder::symbolic(DataType::Float32);
  ee.bind(s, 0.1);
  EXPECT_EQ(ee.evaluateDouble(s), double(0.1f));
}

// Rebinding a symbol to another value, or binding a constant, is a UserError.
TEST_F(ExpressionEvaluatorTest, RebindingIsAnError) {
  ExpressionEvaluator ee;
  Scalar* s = IrBuilder::symbolic(kIndexType);
  ee.bind(s, int64_t(3));
  EXPECT_NO_THROW(ee.bind(s, int64_t(3)));
  EXPECT_HAS(userErrorOf([&] { ee.bind(s, int64_t(4)); }), "already bound to 3");
  EXPECT_HAS(userErrorOf([&] { ee.bind(IrBuilder::index(2), int64_t(5)); }), "constant");
}

// An unknown value is a UserError naming the extent and its tensor.
TEST_F(ExpressionEvaluatorTest, UnboundExtentMessage) {
  auto* x = input({-1, 4});
  ExpressionEvaluator ee;
  Scalar* e = x->logical()[0]->extent();
  EXPECT_HAS(userErrorOf([&] { ee.evaluateInt(e); }), e->toString() + " is not bound");
  std::string msg = userErrorOf([&] { ee.logicalSizes(x); });
  EXPECT_HAS(msg, "extent " + e->toString() + " of " + x->toString() + " is not bound");
}

// bindInputs binds symbolic extents to the tensor sizes and scalar inputs to their values.
TEST_F(ExpressionEvaluatorTest, BindInputsBindsExtents) {
  auto* x = input({-1, 4, 1});
  Scalar* s = IrBuilder::symbolic(DataType::Int64);
  fusion_.addInput(s);
  ExpressionEvaluator ee;
  std::vector<Argument> args = {Tensor::empty({3, 4, 1}, DataType::Float32), int64_t(9)};
  ee.bindInputs(fusion_, args);
  EXPECT_EQ(ee.logicalSizes(x), (std::vector<int64_t>{3, 4, 1}));
  EXPECT_EQ(ee.evaluateInt(s), 9);
}

class InputValidationTest : public EvalTest {
 protected:
  std::string bindError(std::vector<Argument> args) {
    return userErrorOf([&] { ExpressionEvaluator().bindInputs(fusion_, args); });
  }
};

// The argument count must match the fusion's inputs.
TEST_F(InputValidationTest, WrongCount) {
  input({2});
  input({2});
  std::string msg = bindError({Tensor::empty({2}, DataType::Float32)});
  EXPECT_HAS(msg, "takes 2 inputs");
  EXPECT_HAS(msg, "1 arguments");
}

// A tensor input needs a tensor and a scalar input a scalar of a matching kind.
TEST_F(InputValidationTest, TensorVersusScalar) {
  input({2});
  Scalar* s = IrBuilder::symbolic(DataType::Int64);
  fusion_.addInput(s);
  EXPECT_HAS(bindError({2.0, int64_t(1)}), "Expected input 0, T0, to be a tensor but got double");
  std::string msg = bindError({Tensor::empty({2}, DataType::Float32), 1.5});
  EXPECT_HAS(msg, "input 1 (" + s->toString() + ") is a i64 scalar");
  EXPECT_HAS(msg, "double 1.5");
}

// The rank must be the logical rank without reductions.
TEST_F(InputValidationTest, WrongRank) {
  input({2, 3});
  std::string msg = bindError({Tensor::empty({2, 3, 1}, DataType::Float32)});
  EXPECT_HAS(msg,
             "Expected input 0, T0, to be bound to a tensor of rank 2, but got a tensor of rank 3");
}

// The dtype must match exactly.
TEST_F(InputValidationTest, WrongDtype) {
  input({2});
  std::string msg = bindError({Tensor::empty({2}, DataType::BFloat16)});
  EXPECT_HAS(msg, "to be bound to a tensor of dtype f32, but got a tensor of dtype");
  EXPECT_HAS(msg, "bf16");
}

// A constant extent must equal the runtime size.
TEST_F(InputValidationTest, ConstantExtentMismatch) {
  input({2, 4});
  std::string msg = bindError({Tensor::empty({2, 5}, DataType::Float32)});
  EXPECT_HAS(msg, "input 0 (T0) dimension 1: expected size 4 (a constant extent), got size 5");
}

// A broadcast dimension must have size 1; an expanded one needs stride 0.
TEST_F(InputValidationTest, BroadcastSize) {
  input({1, 3});
  std::string msg = bindError({Tensor::empty({2, 3}, DataType::Float32)});
  EXPECT_HAS(msg, "dimension 0 is a broadcast dimension: expected size 1, got size 2");
}

// Two inputs sharing a symbolic extent must agree on its size.
TEST_F(InputValidationTest, SharedSymbolicExtentDisagrees) {
  auto* x = input({-1});
  auto* shared = ir::IterDomain::create(x->logical()[0]->extent());
  auto* y = IrBuilder::create<ir::TensorView>(
      IrBuilder::create<ir::TensorDomain>(std::vector<ir::IterDomain*>{shared}),
      DataType::Float32, ir::MemoryType::Global);
  fusion_.addInput(y);
  EXPECT_NO_THROW(ExpressionEvaluator().bindInputs(
      fusion_, std::vector<Argument>{Tensor::empty({3}, DataType::Float32),
                                     Tensor::empty({3}, DataType::Float32)}));
  std::string msg = bindError(
      {Tensor::empty({3}, DataType::Float32), Tensor::empty({4}, DataType::Float32)});
  EXPECT_HAS(msg, "input 1 (" + y->toString() + ") dimension 0: got size 4");
  EXPECT_HAS(msg, "input 0 (T0) dimension 0 gave extent");
  EXPECT_HAS(msg, "the size 3");
}

// An expanded broadcast dimension of size > 1 must have stride 0.
TEST_F(InputValidationTest, ExpandedNeedsStrideZero) {
  auto* bcast = IrBuilder::create<ir::IterDomain>(IrBuilder::index(0), IrBuilder::index(1),
                                                  ir::IterType::Broadcast, ir::ParallelType::Serial,
                                                  IrBuilder::symbolic(kIndexType));
  auto* tv = IrBuilder::create<ir::TensorView>(
      IrBuilder::create<ir::TensorDomain>(std::vector<ir::IterDomain*>{bcast}), DataType::Float32,
      ir::MemoryType::Global);
  fusion_.addInput(tv);
  std::string msg = bindError({Tensor::empty({4}, DataType::Float32)});
  EXPECT_HAS(msg, "expanded broadcast dimension: expected stride 0");
  Tensor one = Tensor::empty({1}, DataType::Float32);
  ExpressionEvaluator ee;
  ee.bindInputs(fusion_, std::vector<Argument>{Tensor(one.storage(), DataType::Float32, {4}, {0})});
  EXPECT_EQ(ee.logicalSizes(tv), (std::vector<int64_t>{4}));
}

// Binding reads metadata only, so a tensor on any device binds; the reference evaluator reads
// host memory only and says so.
TEST_F(InputValidationTest, NonCpuDevice) {
  auto* x = input({2});
  fusion_.addOutput(ops::neg(x));
  float data[2] = {0, 0};
  Tensor t = Tensor::fromBlob(data, {2}, {1}, DataType::Float32, Device::cuda(0));
  ExpressionEvaluator ee;
  ee.bindInputs(fusion_, std::vector<Argument>{t});
  EXPECT_EQ(ee.logicalSizes(x), (std::vector<int64_t>{2}));
  EXPECT_HAS(userErrorOf([&] { evaluateFusion(fusion_, std::vector<Argument>{t}); }),
             "input 0 (" + x->toString() + "): the reference evaluator needs a host (cpu) tensor");
}

// Validation errors reach evaluateFusion callers.
TEST_F(InputValidationTest, EvaluateFusionValidates) {
  auto* x = input({2});
  fusion_.addOutput(ops::neg(x));
  std::vector<Argument> args = {Tensor::empty({3}, DataType::Float32)};
  EXPECT_HAS(userErrorOf([&] { evaluateFusion(fusion_, args); }), "expected size 2");
}

// A chain of 15,000 scalar ops (out = x + (s + 1 + 1 + ...)) is printed, parsed back, cloned and
// evaluated without recursing per op (each had overflowed the stack), and the reference
// evaluator computes the tensor that uses it.
TEST(ExpressionEvaluatorDeep, ScalarChainOf15000Ops) {
  ir::Fusion fusion;
  ir::FusionGuard guard(&fusion);
  ir::TensorView* x = ops::TensorBuilder().shape({4}).build();
  Scalar* in = IrBuilder::symbolic(kIndexType);
  fusion.addInput(x);
  fusion.addInput(in);
  Scalar* s = in;
  for (int i = 0; i < 15000; ++i) s = sm::add(s, IrBuilder::constant(int64_t(1)));
  fusion.addOutput(ops::add(x, s));
  ExpressionEvaluator ee;
  ee.bind(in, int64_t(7));
  EXPECT_EQ(ee.evaluateInt(s), 15007);
  std::string text = ir::printFusion(fusion);
  auto parsed = ir::parseFusion(text);
  EXPECT_EQ(ir::printFusion(*parsed), text);
  auto cloned = fusion.clone();
  EXPECT_EQ(ir::printFusion(*cloned), text);
  Tensor t = makeTensor({4}, {1, 2, 3, 4});
  std::vector<Argument> args{t, int64_t(7)};
  std::vector<Tensor> out = evaluateFusion(*parsed, args);
  expectValues(valuesOf(out[0]), {15008, 15009, 15010, 15011});
}

}  // namespace
}  // namespace loom::eval::testing
