// SPDX-License-Identifier: Apache-2.0
// Reference evaluator: element semantics of the unary, binary and ternary ops, casts and dtype
// rounding, broadcasting, and reading strided inputs.
#include <cmath>
#include <limits>

#include "eval/eval_test_utils.h"

namespace loom::eval::testing {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
double f32(double v) { return double(float(v)); }

using PointwiseTest = EvalTest;

// Simple unary ops give their textbook values on Float32 inputs, rounded to float.
TEST_F(PointwiseTest, UnaryBasics) {
  auto* x = input({4});
  std::vector<TensorView*> outs = {ops::neg(x),   ops::abs(x),  ops::floor(x), ops::ceil(x),
                                   ops::exp(x),   ops::sqrt(x), ops::rsqrt(x), ops::reciprocal(x),
                                   ops::log2(x),  ops::exp2(x), ops::tanh(x),  ops::erf(x)};
  auto res = run(outs, {makeTensor({4}, {4.0, 1.5, 0.25, 1.0})});
  expectValues(valuesOf(res[0]), {-4.0, -1.5, -0.25, -1.0});
  expectValues(valuesOf(res[1]), {4.0, 1.5, 0.25, 1.0});
  expectValues(valuesOf(res[2]), {4.0, 1.0, 0.0, 1.0});
  expectValues(valuesOf(res[3]), {4.0, 2.0, 1.0, 1.0});
  expectValues(valuesOf(res[4]), {f32(std::exp(4.0)), f32(std::exp(1.5)), f32(std::exp(0.25)),
                                  f32(std::exp(1.0))});
  expectValues(valuesOf(res[5]), {2.0, f32(std::sqrt(1.5)), 0.5, 1.0});
  expectValues(valuesOf(res[6]), {0.5, f32(1.0 / std::sqrt(1.5)), 2.0, 1.0});
  expectValues(valuesOf(res[7]), {0.25, f32(1.0 / 1.5), 4.0, 1.0});
  expectValues(valuesOf(res[8]), {2.0, f32(std::log2(1.5)), -2.0, 0.0});
  expectValues(valuesOf(res[9]), {16.0, f32(std::exp2(1.5)), f32(std::exp2(0.25)), 2.0});
  expectValues(valuesOf(res[10]), {f32(std::tanh(4.0)), f32(std::tanh(1.5)),
                                   f32(std::tanh(0.25)), f32(std::tanh(1.0))});
  expectValues(valuesOf(res[11]), {f32(std::erf(4.0)), f32(std::erf(1.5)), f32(std::erf(0.25)),
                                   f32(std::erf(1.0))});
}

// log, sin, cos, sigmoid and silu at points with known values.
TEST_F(PointwiseTest, UnaryKnownPoints) {
  auto* x = input({2});
  auto res = run({ops::log(x), ops::sin(x), ops::cos(x), ops::sigmoid(x), ops::silu(x)},
                 {makeTensor({2}, {1.0, 0.0})});
  expectValues(valuesOf(res[0]), {0.0, -kInf});
  expectValues(valuesOf(res[1]), {f32(std::sin(1.0)), 0.0});
  expectValues(valuesOf(res[2]), {f32(std::cos(1.0)), 1.0});
  expectValues(valuesOf(res[3]), {f32(1.0 / (1.0 + std::exp(-1.0))), 0.5});
  expectValues(valuesOf(res[4]), {f32(1.0 / (1.0 + std::exp(-1.0))), 0.0});
}

// erfcx and digamma (the ops with no C library function) at points whose values mpmath gives to
// 40 digits, rounded to double; the edges as torch.special gives them.
TEST_F(PointwiseTest, ErfcxAndDigammaKnownPoints) {
  auto* x = input({8}, DataType::Float64);
  auto* y = input({8}, DataType::Float64);
  const std::vector<TensorView*> outs = {ops::unaryOp(ir::UnaryOpType::Erfcx, x),
                                         ops::unaryOp(ir::UnaryOpType::Digamma, y)};
  auto close = [](const std::vector<double>& got, const std::vector<double>& want, double rtol) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_NEAR(got[i], want[i], rtol * std::fabs(want[i])) << "element " << i;
    }
  };
  auto res = run(
      outs, {makeTensor({8}, {0.5, 1.0, -1.0, 3.0, 12.5, -2.5, 0.001, -5.5}, DataType::Float64),
             makeTensor({8}, {0.5, 1.0, 2.0, -0.5, -2.5, 1e-3, 12.5, 100.0}, DataType::Float64)});
  close(valuesOf(res[0]),
        {0.6156903441929259, 0.427583576155807, 5.008980080762283, 0.17900115118138996,
         0.04499209900102792, 1035.814842972623, 0.9988726200811514, 27443409954929.71},
        4e-16);
  close(valuesOf(res[1]),
        {-1.9635100260214235, -0.5772156649015329, 0.42278433509846713, 0.03648997397857652,
         1.103156640645243, -1000.5755719318103, 2.4851956512749123, 4.600161852738087},
        1e-14);
  const Tensor edges =
      makeTensor({8}, {0.0, -0.0, kInf, -kInf, kNaN, -1.0, -1e30, 1e300}, DataType::Float64);
  res = run(outs, {edges, edges});
  expectValues(valuesOf(res[0]),
               {1.0, 1.0, 0.0, kInf, kNaN, 5.008980080762283, kInf, 5.641895835477563e-301});
  expectValues(valuesOf(res[1]),
               {-kInf, kInf, kInf, kNaN, kNaN, kNaN, kNaN, std::log(1e300) - 0.5e-300});
}

// round is half to even, including negative halves.
TEST_F(PointwiseTest, RoundHalfToEven) {
  auto* x = input({8});
  auto got = eval1(ops::round(x),
                   {makeTensor({8}, {0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4, -3.7})});
  expectValues(got, {0.0, 2.0, 2.0, -0.0, -2.0, -2.0, 2.0, -4.0});
}

// sign and relu: -1/0/1, and NaN stays NaN.
TEST_F(PointwiseTest, SignAndRelu) {
  auto* x = input({5});
  auto res = run({ops::sign(x), ops::relu(x)}, {makeTensor({5}, {-2.0, 0.0, 3.0, kNaN, -kInf})});
  expectValues(valuesOf(res[0]), {-1.0, 0.0, 1.0, kNaN, -1.0});
  expectValues(valuesOf(res[1]), {0.0, 0.0, 3.0, kNaN, 0.0});
}

// isnan / isinf classify NaN and both infinities and return Bool.
TEST_F(PointwiseTest, IsNanIsInf) {
  auto* x = input({4});
  auto res = run({ops::isNan(x), ops::isInf(x)}, {makeTensor({4}, {1.0, kNaN, kInf, -kInf})});
  EXPECT_EQ(res[0].dtype(), DataType::Bool);
  expectValues(valuesOf(res[0]), {0, 1, 0, 0});
  expectValues(valuesOf(res[1]), {0, 0, 1, 1});
}

// maximum / minimum propagate NaN from either side and handle infinities.
TEST_F(PointwiseTest, MaximumMinimumNaN) {
  auto* a = input({4});
  auto* b = input({4});
  auto res = run({ops::maximum(a, b), ops::minimum(a, b)},
                 {makeTensor({4}, {1.0, kNaN, 3.0, -kInf}), makeTensor({4}, {2.0, 1.0, kNaN, 5.0})});
  expectValues(valuesOf(res[0]), {2.0, kNaN, kNaN, 5.0});
  expectValues(valuesOf(res[1]), {1.0, kNaN, kNaN, -kInf});
}

// Arithmetic, pow and fmod (sign of the dividend) on floats.
TEST_F(PointwiseTest, BinaryArithmetic) {
  auto* a = input({3});
  auto* b = input({3});
  auto res = run({ops::add(a, b), ops::sub(a, b), ops::mul(a, b), ops::div(a, b), ops::pow(a, b),
                  ops::fmod(a, b)},
                 {makeTensor({3}, {5.5, -5.5, 9.0}), makeTensor({3}, {2.0, 2.0, -0.5})});
  expectValues(valuesOf(res[0]), {7.5, -3.5, 8.5});
  expectValues(valuesOf(res[1]), {3.5, -7.5, 9.5});
  expectValues(valuesOf(res[2]), {11.0, -11.0, -4.5});
  expectValues(valuesOf(res[3]), {2.75, -2.75, -18.0});
  expectValues(valuesOf(res[4]), {30.25, 30.25, f32(1.0 / 3.0)});
  expectValues(valuesOf(res[5]), {1.5, -1.5, 0.0});
}

// Comparisons are false with NaN except ne; logical ops treat nonzero as true.
TEST_F(PointwiseTest, ComparisonsAndLogical) {
  auto* a = input({4});
  auto* b = input({4});
  auto res = run({ops::eq(a, b), ops::ne(a, b), ops::lt(a, b), ops::le(a, b), ops::gt(a, b),
                  ops::ge(a, b), ops::logicalAnd(a, b), ops::logicalOr(a, b)},
                 {makeTensor({4}, {1.0, 2.0, 3.0, kNaN}), makeTensor({4}, {2.0, 2.0, 0.0, kNaN})});
  expectValues(valuesOf(res[0]), {0, 1, 0, 0});
  expectValues(valuesOf(res[1]), {1, 0, 1, 1});
  expectValues(valuesOf(res[2]), {1, 0, 0, 0});
  expectValues(valuesOf(res[3]), {1, 1, 0, 0});
  expectValues(valuesOf(res[4]), {0, 0, 1, 0});
  expectValues(valuesOf(res[5]), {0, 1, 1, 0});
  expectValues(valuesOf(res[6]), {1, 1, 0, 1});
  expectValues(valuesOf(res[7]), {1, 1, 1, 1});
}

// logical_not of a Bool tensor.
TEST_F(PointwiseTest, LogicalNot) {
  auto* x = input({2}, DataType::Bool);
  expectValues(eval1(ops::logicalNot(x), {makeTensor({2}, {1, 0}, DataType::Bool)}), {0, 1});
}

// Integer Div truncates toward zero, Mod and fmod take the dividend's sign, CeilDiv rounds up.
TEST_F(PointwiseTest, IntegerDivModTruncation) {
  using ir::BinaryOpType;
  auto* a = input({4}, DataType::Int32);
  auto* b = input({4}, DataType::Int32);
  auto res = run({binaryDirect(BinaryOpType::Div, a, b, DataType::Int32),
                  binaryDirect(BinaryOpType::Mod, a, b, DataType::Int32),
                  binaryDirect(BinaryOpType::CeilDiv, a, b, DataType::Int32), ops::fmod(a, b)},
                 {makeTensor({4}, {7, -7, 7, -7}, DataType::Int32),
                  makeTensor({4}, {2, 2, -2, -2}, DataType::Int32)});
  expectValues(valuesOf(res[0]), {3, -3, -3, 3});
  expectValues(valuesOf(res[1]), {1, -1, 1, -1});
  expectValues(valuesOf(res[2]), {4, -3, -3, 4});
  EXPECT_EQ(res[3].dtype(), DataType::Int32);
  expectValues(valuesOf(res[3]), {1, -1, 1, -1});
}

// True division of integers promotes to float; integer arithmetic wraps on overflow.
TEST_F(PointwiseTest, IntegerPromotionAndWrap) {
  auto* a = input({2}, DataType::Int32);
  auto res = run({ops::div(a, int64_t(2)), ops::add(a, a)},
                 {makeTensor({2}, {7, 2147483647}, DataType::Int32)});
  EXPECT_EQ(res[0].dtype(), DataType::Float32);
  expectValues(valuesOf(res[0]), {3.5, f32(2147483647.0 / 2.0)});
  expectValues(valuesOf(res[1]), {14, -2});
}

// Integer division, remainder and ceil_div are defined for every operand (docs/ops.md): by zero
// 0, the most negative value by -1 itself (remainder 0).
TEST_F(PointwiseTest, IntegerDivisionIsTotal) {
  auto* a = input({3}, DataType::Int64);
  auto* b = input({3}, DataType::Int64);
  const double lo = -9223372036854775808.0;
  auto res = run({binaryDirect(ir::BinaryOpType::Div, a, b, DataType::Int64),
                  binaryDirect(ir::BinaryOpType::Mod, a, b, DataType::Int64),
                  binaryDirect(ir::BinaryOpType::CeilDiv, a, b, DataType::Int64), ops::fmod(a, b)},
                 {makeTensor({3}, {7, lo, 0}, DataType::Int64),
                  makeTensor({3}, {0, -1, 0}, DataType::Int64)});
  expectValues(valuesOf(res[0]), {0, lo, 0});
  expectValues(valuesOf(res[1]), {0, 0, 0});
  expectValues(valuesOf(res[2]), {0, lo, 0});
  expectValues(valuesOf(res[3]), {0, 0, 0});
}

// The same in Int32: INT32_MIN / -1 wraps to itself.
TEST_F(PointwiseTest, Int32DivisionIsTotal) {
  auto* a = input({2}, DataType::Int32);
  auto* b = input({2}, DataType::Int32);
  auto res = run({binaryDirect(ir::BinaryOpType::Div, a, b, DataType::Int32)},
                 {makeTensor({2}, {-2147483648.0, 5}, DataType::Int32),
                  makeTensor({2}, {-1, 0}, DataType::Int32)});
  expectValues(valuesOf(res[0]), {-2147483648.0, 0});
}

// where picks by condition, clamp saturates (NaN propagates), lerp = a + w * (b - a).
TEST_F(PointwiseTest, Ternary) {
  auto* c = input({3}, DataType::Bool);
  auto* a = input({3});
  auto* b = input({3});
  auto res = run({ops::where(c, a, b), ops::clamp(a, 0.0, 2.0), ops::lerp(a, b, 0.25)},
                 {makeTensor({3}, {1, 0, 1}, DataType::Bool), makeTensor({3}, {-2.0, 1.5, kNaN}),
                  makeTensor({3}, {10.0, 20.0, 30.0})});
  expectValues(valuesOf(res[0]), {-2.0, 20.0, kNaN});
  expectValues(valuesOf(res[1]), {0.0, 1.5, kNaN});
  expectValues(valuesOf(res[2]), {1.0, 6.125, kNaN});
}

// A cast to bf16 / f16 really rounds (to nearest, ties to even) before the next op reads it.
TEST_F(PointwiseTest, CastRoundsToHalfTypes) {
  auto* x = input({4});
  auto* bf = ops::cast(ops::cast(x, DataType::BFloat16), DataType::Float32);
  auto* hf = ops::cast(ops::cast(x, DataType::Float16), DataType::Float32);
  Tensor in = makeTensor({4}, {1.0 + 0x1p-8, 1.0 + 3 * 0x1p-8, 1.0 + 0x1p-11, 65520.0});
  auto res = run({bf, hf}, {in});
  expectValues(valuesOf(res[0]), {1.0, 1.015625, 1.0, 65536.0});
  expectValues(valuesOf(res[1]), {1.0 + 0x1p-8, 1.01171875, 1.0, kInf});
}

// Float -> int casts truncate and saturate, NaN -> 0; casts to Bool test against zero.
TEST_F(PointwiseTest, CastSaturationAndBool) {
  auto* x = input({5});
  auto res = run({ops::cast(x, DataType::Int32), ops::cast(x, DataType::Bool)},
                 {makeTensor({5}, {3e9, -3e9, kNaN, 2.9, -0.0})});
  EXPECT_EQ(res[0].dtype(), DataType::Int32);
  expectValues(valuesOf(res[0]), {2147483647.0, -2147483648.0, 0.0, 2.0, 0.0});
  expectValues(valuesOf(res[1]), {1, 1, 1, 1, 0});
}

// A Float32 op rounds its result to float before the next op: (x + 1e-10) - x is 0 in Float32
// but not in Float64.
TEST_F(PointwiseTest, Float32OpsRoundEachResult) {
  auto* x32 = input({1});
  auto* x64 = input({1}, DataType::Float64);
  auto res = run({ops::sub(ops::add(x32, 1e-10), x32), ops::sub(ops::add(x64, 1e-10), x64)},
                 {makeTensor({1}, {1.0}), makeTensor({1}, {1.0}, DataType::Float64)});
  expectValues(valuesOf(res[0]), {0.0});
  EXPECT_NEAR(valuesOf(res[1])[0], 1e-10, 1e-16);
}

// Size-1 dims stretch and lower-rank operands align from the right.
TEST_F(PointwiseTest, Broadcasting) {
  auto* col = input({-1, 1});
  auto* row = input({1, -1});
  auto* vec = input({-1});
  auto res = run({ops::add(col, row), ops::mul(ops::add(col, row), vec)},
                 {makeTensor({2, 1}, {10, 20}), makeTensor({1, 3}, {1, 2, 3}),
                  makeTensor({3}, {1, 0, -1})});
  EXPECT_EQ(res[0].sizes(), (std::vector<int64_t>{2, 3}));
  expectValues(valuesOf(res[0]), {11, 12, 13, 21, 22, 23});
  expectValues(valuesOf(res[1]), {11, 0, -13, 21, 0, -23});
}

// A scalar fusion input takes part in pointwise math.
TEST_F(PointwiseTest, ScalarInput) {
  auto* x = input({2});
  auto* s = ir::IrBuilder::symbolic(DataType::Float64);
  fusion_.addInput(s);
  expectValues(eval1(ops::mul(x, s), {makeTensor({2}, {1, 2}), 2.5}), {2.5, 5.0});
}

// Scalar math inside the fusion (a scalar input plus a constant) feeds tensor math.
TEST_F(PointwiseTest, ScalarExprInFusion) {
  auto* x = input({2});
  auto* s = ir::IrBuilder::symbolic(DataType::Float64);
  fusion_.addInput(s);
  auto* t = ir::IrBuilder::symbolic(DataType::Float64);
  ir::IrBuilder::create<ir::BinaryOp>(ir::BinaryOpType::Add, t, s, ir::IrBuilder::constant(1.0));
  expectValues(eval1(ops::mul(x, t), {makeTensor({2}, {1, 2}), 2.5}), {3.5, 7.0});
}

// Permuted (non-contiguous) and offset inputs are read through their strides and offset.
TEST_F(PointwiseTest, StridedAndOffsetInputs) {
  auto* x = input({2, 3});
  auto* y = input({2});
  Tensor base = makeTensor({3, 2}, {0, 1, 2, 3, 4, 5});
  std::vector<int64_t> perm = {1, 0};
  Tensor permuted = base.permute(perm);  // permuted[i][j] = base[j][i]
  Tensor offset(base.storage(), DataType::Float32, {2}, {2}, 1);  // elements 1 and 3
  auto res = run({ops::mul(x, 2.0), ops::neg(y)}, {permuted, offset});
  expectValues(valuesOf(res[0]), {0, 4, 8, 2, 6, 10});
  expectValues(valuesOf(res[1]), {-1, -3});
}

// A stride-0 (expanded) tensor works for an ordinary input and for an expanded broadcast ID,
// which keeps its expanded size in the output.
TEST_F(PointwiseTest, ExpandedStrideZeroInputs) {
  auto* x = input({-1, 3});
  auto* bcast = ir::IrBuilder::create<ir::IterDomain>(
      ir::IrBuilder::index(0), ir::IrBuilder::index(1), ir::IterType::Broadcast,
      ir::ParallelType::Serial, ir::IrBuilder::symbolic(kIndexType));
  auto* inner = ir::IterDomain::create(ir::IrBuilder::index(3));
  auto* e = ir::IrBuilder::create<TensorView>(
      ir::IrBuilder::create<ir::TensorDomain>(std::vector<ir::IterDomain*>{bcast, inner}),
      DataType::Float32, ir::MemoryType::Global);
  fusion_.addInput(e);
  Tensor row = makeTensor({3}, {1, 2, 3});
  Tensor expanded(row.storage(), DataType::Float32, {4, 3}, {0, 1});
  auto res = run({ops::add(x, 1.0), ops::mul(e, 2.0), ops::sum(e, {0})}, {expanded, expanded});
  EXPECT_EQ(res[0].sizes(), (std::vector<int64_t>{4, 3}));
  expectValues(valuesOf(res[0]), {2, 3, 4, 2, 3, 4, 2, 3, 4, 2, 3, 4});
  EXPECT_EQ(res[1].sizes(), (std::vector<int64_t>{4, 3}));
  expectValues(valuesOf(res[1]), {2, 4, 6, 2, 4, 6, 2, 4, 6, 2, 4, 6});
  expectValues(valuesOf(res[2]), {4, 8, 12});
}

// expand stretches size-1 dims to the requested sizes.
TEST_F(PointwiseTest, ExpandOp) {
  auto* x = input({1, 3});
  auto outs = run({ops::expand(x, {2, -1})}, {makeTensor({1, 3}, {1, 2, 3})});
  EXPECT_EQ(outs[0].sizes(), (std::vector<int64_t>{2, 3}));
  expectValues(valuesOf(outs[0]), {1, 2, 3, 1, 2, 3});
}

}  // namespace
}  // namespace loom::eval::testing
