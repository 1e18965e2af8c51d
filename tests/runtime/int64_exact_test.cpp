// SPDX-License-Identifier: Apache-2.0
// Int64 exactly (issue 36): the reference evaluator keeps integer tensors as integers, so values
// past 2^53 (where a double skips odd numbers) come out exact through integer math (add, mul
// wrapping on overflow, div truncating, mod, shifts, bitwise ops, where, clamp), casts, sums,
// copies (slice, pad, cat, permute, reshape), full and iota. Each output is compared exactly with
// the same arithmetic done here in C++ (two's complement, as nvFuser and torch define it) and
// with the kernels of the automatic path, outputs poisoned. Built twice: host backend (emu) and
// CUDA (gpu).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>

#include "loom/eval/reference_evaluator.h"
#include "loom/ir/ir.h"
#include "loom/ops/ops.h"
#include "loom/runtime/fusion_executor_cache.h"
#include "runtime/runtime_test_backend.h"

namespace loom::runtime {
namespace {

using ir::BinaryOpType;
using ir::Fusion;
using ir::FusionGuard;
using ir::IrBuilder;
using ir::TensorView;
using Args = std::vector<eval::Argument>;

constexpr int64_t k2to53 = int64_t{1} << 53;

// Wrapping int64 arithmetic (through uint64, so the test itself has no overflow).
int64_t wrapAdd(int64_t a, int64_t b) { return int64_t(uint64_t(a) + uint64_t(b)); }
int64_t wrapMul(int64_t a, int64_t b) { return int64_t(uint64_t(a) * uint64_t(b)); }

Tensor int64Tensor(const std::vector<int64_t>& sizes, const std::vector<int64_t>& values) {
  Tensor t = Tensor::empty(sizes, DataType::Int64);
  std::memcpy(t.data(), values.data(), values.size() * sizeof(int64_t));
  return t;
}

std::vector<int64_t> valuesOf(const Tensor& t) {
  const Tensor dense = t.contiguous();
  std::vector<int64_t> out(size_t(dense.numel()));
  if (dense.dtype() == DataType::Int32) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = dense.dataAs<int32_t>()[i];
  } else {
    std::memcpy(out.data(), dense.data(), out.size() * sizeof(int64_t));
  }
  return out;
}

class Int64Exact : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = loom::test::backendUnavailable(testBackend())) GTEST_SKIP() << *why;
  }
};

// x and y [2, 3], values around 2^53 .. 2^63; one output per op, each checked against `expect`
// (element i of x and y in, the output's element i out; for the sum, row r).
TEST_F(Int64Exact, IntegerMathPast2To53) {
  const std::vector<int64_t> xs{k2to53 + 1,    -(k2to53 + 3), (int64_t{1} << 62) + 7,
                                INT64_MAX - 2, INT64_MIN + 5, 123456789012345679};
  const std::vector<int64_t> ys{3, k2to53 + 5, -7, 4, 1 << 20, -(k2to53 - 1)};
  auto f = std::make_unique<Fusion>();
  std::vector<std::function<int64_t(int64_t, int64_t)>> expect;
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().shape({2, 3}).dtype(DataType::Int64).build();
    TensorView* y = ops::TensorBuilder().shape({2, 3}).dtype(DataType::Int64).build();
    f->addInput(x);
    f->addInput(y);
    auto out = [&](TensorView* t, std::function<int64_t(int64_t, int64_t)> fn) {
      f->addOutput(t);
      expect.push_back(std::move(fn));
    };
    out(ops::binaryOp(BinaryOpType::Add, x, y), wrapAdd);
    out(ops::binaryOp(BinaryOpType::Mul, x, y), wrapMul);
    out(ops::binaryOp(BinaryOpType::Div, x, y), [](int64_t a, int64_t b) { return a / b; });
    out(ops::binaryOp(BinaryOpType::Mod, x, y), [](int64_t a, int64_t b) { return a % b; });
    out(ops::binaryOp(BinaryOpType::Sub, x, IrBuilder::constant(k2to53 + 1)),
        [](int64_t a, int64_t) { return int64_t(uint64_t(a) - uint64_t(k2to53 + 1)); });
    out(ops::binaryOp(BinaryOpType::Lshift, x, IrBuilder::constant(int64_t{3})),
        [](int64_t a, int64_t) { return int64_t(uint64_t(a) << 3); });
    out(ops::binaryOp(BinaryOpType::Rshift, x, IrBuilder::constant(int64_t{1})),
        [](int64_t a, int64_t) { return a >> 1; });
    out(ops::binaryOp(BinaryOpType::BitwiseXor, x, y), [](int64_t a, int64_t b) { return a ^ b; });
    out(ops::where(ops::gt(x, y), x, y), [](int64_t a, int64_t b) { return a > b ? a : b; });
    out(ops::neg(x), [](int64_t a, int64_t) { return int64_t(0 - uint64_t(a)); });
    out(ops::cast(ops::cast(x, DataType::Int32), DataType::Int64),
        [](int64_t a, int64_t) { return int64_t(int32_t(uint32_t(uint64_t(a)))); });
    // Copies: a permute and back, a slice padded back to its size with 2^53 + 1.
    out(ops::permute(ops::permute(x, {1, 0}), {1, 0}), [](int64_t a, int64_t) { return a; });
  }
  const Args args{int64Tensor({2, 3}, xs), int64Tensor({2, 3}, ys)};
  const std::vector<Tensor> reference = eval::evaluateFusion(*f, args);
  FusionExecutorCache cache(std::move(f), poisonedOptions());
  const std::vector<Tensor> kernels = cache.run(args);
  ASSERT_EQ(reference.size(), expect.size());
  ASSERT_EQ(kernels.size(), expect.size());
  for (size_t o = 0; o < expect.size(); ++o) {
    const std::vector<int64_t> ref = valuesOf(reference[o]);
    const std::vector<int64_t> ran = valuesOf(kernels[o]);
    for (size_t i = 0; i < xs.size(); ++i) {
      const int64_t want = expect[o](xs[i], ys[i]);
      EXPECT_EQ(ref[i], want) << "reference, output " << o << ", element " << i;
      EXPECT_EQ(ran[i], want) << "kernel, output " << o << ", element " << i;
    }
  }
}

// A sum of large values wraps exactly; full and iota make values past 2^53; slice, pad and cat
// copy them.
TEST_F(Int64Exact, SumsFactoriesAndCopies) {
  const std::vector<int64_t> xs{INT64_MAX - 1, 5, k2to53 + 1, k2to53 + 3, 7, -(k2to53 + 1)};
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().shape({2, 3}).dtype(DataType::Int64).build();
    f->addInput(x);
    f->addOutput(ops::sum(x, {1}));
    f->addOutput(ops::full({3}, IrBuilder::constant(k2to53 + 1), DataType::Int64));
    f->addOutput(ops::iota(int64_t{4}, IrBuilder::constant(k2to53 + 1),
                           IrBuilder::constant(int64_t{3}), DataType::Int64));
    TensorView* row = ops::slice(x, 0, int64_t{1}, int64_t{2});  // [1, 3]
    f->addOutput(ops::pad(row, {1, 1}, IrBuilder::constant(k2to53 + 1)));
    f->addOutput(ops::cat({row, row}, 1));
  }
  const Args args{int64Tensor({2, 3}, xs)};
  const std::vector<Tensor> reference = eval::evaluateFusion(*f, args);
  FusionExecutorCache cache(std::move(f), poisonedOptions());
  const std::vector<Tensor> kernels = cache.run(args);
  const int64_t row0 = wrapAdd(wrapAdd(xs[0], xs[1]), xs[2]);
  const int64_t row1 = wrapAdd(wrapAdd(xs[3], xs[4]), xs[5]);
  const std::vector<std::vector<int64_t>> want{{row0, row1},
                                               {k2to53 + 1, k2to53 + 1, k2to53 + 1},
                                               {k2to53 + 1, k2to53 + 4, k2to53 + 7, k2to53 + 10},
                                               {k2to53 + 1, xs[3], xs[4], xs[5], k2to53 + 1},
                                               {xs[3], xs[4], xs[5], xs[3], xs[4], xs[5]}};
  ASSERT_EQ(reference.size(), want.size());
  ASSERT_EQ(kernels.size(), want.size());
  for (size_t o = 0; o < want.size(); ++o) {
    EXPECT_EQ(valuesOf(reference[o]), want[o]) << "reference, output " << o;
    EXPECT_EQ(valuesOf(kernels[o]), want[o]) << "kernel, output " << o;
  }
}

}  // namespace
}  // namespace loom::runtime
