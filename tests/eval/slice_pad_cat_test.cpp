// SPDX-License-Identifier: Apache-2.0
// Reference evaluator on slice, pad and cat: values against hand-computed ones and straightforward
// loops, and the runtime size errors.
#include "eval/eval_test_utils.h"

namespace loom::eval::testing {
namespace {

using SlicePadCatEvalTest = EvalTest;

// 0, 1, 2, ... as doubles.
std::vector<double> counting(int64_t n, double from = 0.0) {
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(from + double(i));
  return v;
}

// slice reads in[i + start] along each sliced dim.
TEST_F(SlicePadCatEvalTest, Slice2D) {
  auto* x = input({3, 4});
  auto* y = ops::slice(x, {1, 1}, {3, -1});
  auto got = eval1(y, {makeTensor({3, 4}, counting(12))});
  expectValues(got, {5, 6, 9, 10});
}

// Empty slices (stop < start, or clamped away) evaluate to zero elements.
TEST_F(SlicePadCatEvalTest, EmptySlice) {
  auto* x = input({5});
  auto outs =
      run({ops::slice(x, {4}, {1}), ops::slice(x, {7}, {9})}, {makeTensor({5}, counting(5))});
  EXPECT_EQ(outs[0].sizes(), (std::vector<int64_t>{0}));
  EXPECT_EQ(outs[1].sizes(), (std::vector<int64_t>{0}));
}

// Scalar bounds are normalized at run time like constant ones: -3 wraps to extent - 3 and a stop
// past the end clamps.
TEST_F(SlicePadCatEvalTest, ScalarBounds) {
  auto* x = input({-1});
  auto* start = ir::IrBuilder::symbolic(DataType::Int64);
  auto* stop = ir::IrBuilder::symbolic(DataType::Int64);
  fusion_.addInput(start);
  fusion_.addInput(stop);
  auto* y = ops::slice(x, {start}, {stop});
  fusion_.addOutput(y);
  auto values = [&](int64_t n, int64_t a, int64_t b) {
    return valuesOf(evaluateWith(fusion_, {makeTensor({n}, counting(n)), a, b})[0]);
  };
  expectValues(values(8, -3, 100), {5, 6, 7});
  expectValues(values(8, 2, 4), {2, 3});
  expectValues(values(8, 6, 2), {});
  expectValues(values(4, -100, -2), {0, 1});
}

// pad fills with the value and crops with negative widths; widths pair from the last dim.
TEST_F(SlicePadCatEvalTest, PadValuesAndNegativeWidths) {
  auto* x = input({2, 3});
  auto* y = ops::pad(x, {1, -1, 1, 0}, 9.0);  // last dim: +1 left, -1 right; first: +1 left
  auto got = eval1(y, {makeTensor({2, 3}, counting(6))});
  // Rows: one new row of 9s, then each input row shifted right by one with its last element cut.
  expectValues(got, {9, 9, 9, 9, 0, 1, 9, 3, 4});
}

// A pad that crops everything but the middle, against a loop.
TEST_F(SlicePadCatEvalTest, PadCropLoop) {
  auto* x = input({6});
  auto* y = ops::pad(x, {-2, 3});
  auto got = eval1(y, {makeTensor({6}, counting(6, 1.0))});
  std::vector<double> want;
  for (int64_t i = 0; i < 7; ++i) {
    int64_t src = i + 2;
    want.push_back(src < 6 ? double(src + 1) : 0.0);
  }
  expectValues(got, want);
}

// An integer tensor padded with a fractional value gets the value cast to its dtype.
TEST_F(SlicePadCatEvalTest, PadIntegerValue) {
  auto* x = input({2}, DataType::Int32);
  auto outs = run({ops::pad(x, {1, 0}, 2.7)}, {makeTensor({2}, {5, 6}, DataType::Int32)});
  EXPECT_EQ(outs[0].dtype(), DataType::Int32);
  expectValues(valuesOf(outs[0]), {2, 5, 6});
}

// cat of three inputs along the middle dim, against a loop over the output.
TEST_F(SlicePadCatEvalTest, CatThreeInputs) {
  auto* a = input({2, 1, 2});
  auto* b = input({2, 3, 2});
  auto* c = input({2, 2, 2});
  auto* y = ops::cat({a, b, c}, 1);
  auto va = counting(4, 100);
  auto vb = counting(12, 200);
  auto vc = counting(8, 300);
  auto got =
      eval1(y, {makeTensor({2, 1, 2}, va), makeTensor({2, 3, 2}, vb), makeTensor({2, 2, 2}, vc)});
  std::vector<double> want;
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 6; ++j) {
      for (int64_t k = 0; k < 2; ++k) {
        if (j < 1) {
          want.push_back(va[size_t(i * 2 + j * 2 + k)]);
        } else if (j < 4) {
          want.push_back(vb[size_t(i * 6 + (j - 1) * 2 + k)]);
        } else {
          want.push_back(vc[size_t(i * 4 + (j - 4) * 2 + k)]);
        }
      }
    }
  }
  expectValues(got, want);
}

// cat promotes dtypes and accepts an empty input; symbolic extents take the runtime sizes.
TEST_F(SlicePadCatEvalTest, CatPromotedSymbolicAndEmpty) {
  auto* a = input({-1}, DataType::Int32);
  auto* b = input({-1}, DataType::Float32);
  auto* e = input({0}, DataType::Float32);
  auto outs =
      run({ops::cat({a, e, b}, 0)}, {makeTensor({2}, {1, 2}, DataType::Int32),
                                     makeTensor({3}, {0.5, 1.5, 2.5}), makeTensor({0}, {})});
  EXPECT_EQ(outs[0].dtype(), DataType::Float32);
  expectValues(valuesOf(outs[0]), {1, 2, 0.5, 1.5, 2.5});
}

// cat inputs whose symbolic non-cat sizes disagree at run time are a UserError naming the input.
TEST_F(SlicePadCatEvalTest, CatRuntimeMismatch) {
  auto* a = input({-1, 2});
  auto* b = input({-1, 3});
  auto* y = ops::cat({a, b}, 1);
  fusion_.addOutput(y);
  std::string msg = userErrorOf([&] {
    evaluateWith(fusion_, {makeTensor({2, 2}, counting(4)), makeTensor({3, 3}, counting(9))});
  });
  // Binding finds it (checkShapeConstraints), naming the input each size came from.
  EXPECT_HAS(msg, "shapes disagree in");
  EXPECT_HAS(msg, "has size 3 (extent");
  EXPECT_HAS(msg, "from input 1 (" + b->toString() + ") dimension 0");
  EXPECT_HAS(msg, "has size 2 (extent");
  EXPECT_HAS(msg, "from input 0 (" + a->toString() + ") dimension 0");
}

// A pad whose negative widths exceed the runtime size is a UserError (negative size).
TEST_F(SlicePadCatEvalTest, NegativeRuntimeSize) {
  auto* x = input({-1});
  auto* y = ops::pad(x, {-2, -2});
  fusion_.addOutput(y);
  std::string msg = userErrorOf([&] { evaluateWith(fusion_, {makeTensor({3}, counting(3))}); });
  EXPECT_HAS(msg, "pad: " + y->toString() + " would have the negative size -1 at dimension 0");
}

}  // namespace
}  // namespace loom::eval::testing
