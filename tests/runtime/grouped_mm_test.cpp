// SPDX-License-Identifier: Apache-2.0
// grouped_mm (torch._grouped_mm) end to end: the four operand forms, run through the cache with
// the outputs poisoned and compared with a double-precision loop over the groups written here
// (independent of the composition) and with the reference evaluator; empty groups and rows past
// the last offset; argument errors. Built twice: host backend (emu) and CUDA (gpu).
#include "loom/ops/grouped_mm.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "loom/eval/compare.h"
#include "loom/eval/reference_evaluator.h"
#include "loom/ir/ir.h"
#include "loom/ops/ops.h"
#include "loom/runtime/fusion_executor_cache.h"
#include "runtime/runtime_test_backend.h"
#include "runtime/runtime_test_util.h"
#include "user_error_of.h"

namespace loom::runtime {
namespace {

using ir::Fusion;
using ir::FusionGuard;
using ir::TensorView;

Tensor offsetsTensor(const std::vector<int64_t>& ends, DataType dt) {
  Tensor t = Tensor::empty({int64_t(ends.size())}, dt);
  for (size_t i = 0; i < ends.size(); ++i) t.setDoubleLinear(int64_t(i), double(ends[i]));
  return t;
}

// The group of index j: the number of ends at or below it (ends.size() past the last end).
int64_t groupOf(const std::vector<int64_t>& ends, int64_t j) {
  int64_t g = 0;
  for (int64_t e : ends) g += e <= j ? 1 : 0;
  return g;
}

double at(const Tensor& t, std::initializer_list<int64_t> index) {
  std::vector<int64_t> i(index);
  return t.getDouble(i);
}

class GroupedMm : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = loom::test::backendUnavailable(testBackend())) GTEST_SKIP() << *why;
  }

  // Runs mat1 x mat2 (offsets when given) and compares with `want` (double) and the reference.
  static void check(const Tensor& a, const Tensor& b, const Tensor* offs, const Tensor& exact,
                    int64_t k) {
    // The double-precision result rounded once to the output's dtype (the operands').
    Tensor want = Tensor::empty(exact.sizes(), a.dtype());
    for (int64_t i = 0; i < exact.numel(); ++i) want.setDoubleLinear(i, exact.getDoubleLinear(i));
    auto fusion = std::make_unique<Fusion>();
    {
      FusionGuard g(fusion.get());
      TensorView* ta = ops::TensorBuilder().rank(a.dim()).dtype(a.dtype()).build();
      TensorView* tb = ops::TensorBuilder().rank(b.dim()).dtype(b.dtype()).build();
      fusion->addInput(ta);
      fusion->addInput(tb);
      TensorView* to = nullptr;
      if (offs != nullptr) {
        to = ops::TensorBuilder().rank(1).dtype(offs->dtype()).build();
        fusion->addInput(to);
      }
      fusion->addOutput(ops::groupedMm(ta, tb, to));
    }
    std::vector<eval::Argument> args{a, b};
    if (offs != nullptr) args.emplace_back(*offs);
    std::vector<Tensor> evaluated = eval::evaluateFusion(*fusion, args);
    FusionExecutorCache cache(std::move(fusion), poisonedOptions());
    std::vector<Tensor> got = cache.run(args);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].sizes(), want.sizes());
    const auto tol = eval::defaultTolerance(a.dtype(), k);
    auto problem = eval::expectClose(got[0], want, tol, "run");
    EXPECT_FALSE(problem.has_value()) << *problem;
    problem = eval::expectClose(evaluated[0], want, tol, "evaluated");
    EXPECT_FALSE(problem.has_value()) << *problem;
  }
};

// [m, k] x [g, k, n], offsets along m (nvFuser's test_column_parallel_grouped_mm): each row
// times its group's matrix; an empty group, and rows past the last offset are 0.
TEST_F(GroupedMm, RowsOfEachGroupTimesItsMatrix) {
  for (DataType dt : {DataType::Float32, DataType::BFloat16}) {
    for (DataType it : {DataType::Int32, DataType::Int64}) {
      SCOPED_TRACE(std::string(dataTypeName(dt)) + " offsets " + std::string(dataTypeName(it)));
      const int64_t m = 12, k = 5, n = 3;
      const std::vector<int64_t> ends{3, 3, 7, 10};  // group 1 empty; rows 10, 11 in none
      Tensor a = test::randomTensor({m, k}, dt, 1), b = test::randomTensor({4, k, n}, dt, 2);
      Tensor offs = offsetsTensor(ends, it);
      Tensor want = Tensor::empty({m, n}, DataType::Float64);
      for (int64_t i = 0; i < m; ++i) {
        const int64_t g = groupOf(ends, i);
        for (int64_t j = 0; j < n; ++j) {
          double s = 0;
          for (int64_t c = 0; g < 4 && c < k; ++c) s += at(a, {i, c}) * at(b, {g, c, j});
          want.setDouble(std::vector<int64_t>{i, j}, s);
        }
      }
      check(a, b, &offs, want, k);
    }
  }
}

// [g, m, k] x [k, n], offsets along n: each column from its group's mat1.
TEST_F(GroupedMm, ColumnsOfEachGroupFromItsMatrix) {
  const int64_t m = 4, k = 6, n = 9;
  const std::vector<int64_t> ends{2, 5, 9};
  Tensor a = test::randomTensor({3, m, k}, DataType::Float32, 3),
         b = test::randomTensor({k, n}, DataType::Float32, 4);
  Tensor offs = offsetsTensor(ends, DataType::Int32);
  Tensor want = Tensor::empty({m, n}, DataType::Float64);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      const int64_t g = groupOf(ends, j);
      double s = 0;
      for (int64_t c = 0; c < k; ++c) s += at(a, {g, i, c}) * at(b, {c, j});
      want.setDouble(std::vector<int64_t>{i, j}, s);
    }
  }
  check(a, b, &offs, want, k);
}

// [m, k] x [k, n], offsets along k: group i's product over its part of k.
TEST_F(GroupedMm, EachGroupsPartOfK) {
  const int64_t m = 3, k = 10, n = 4;
  const std::vector<int64_t> ends{4, 4, 10};
  Tensor a = test::randomTensor({m, k}, DataType::BFloat16, 5),
         b = test::randomTensor({k, n}, DataType::BFloat16, 6);
  Tensor offs = offsetsTensor(ends, DataType::Int64);
  Tensor want = Tensor::empty({3, m, n}, DataType::Float64);
  for (int64_t g = 0; g < 3; ++g) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t c = 0; c < k; ++c) {
          if (groupOf(ends, c) == g) s += at(a, {i, c}) * at(b, {c, j});
        }
        want.setDouble(std::vector<int64_t>{g, i, j}, s);
      }
    }
  }
  check(a, b, &offs, want, k);
}

// [g, m, k] x [g, k, n]: one product per group.
TEST_F(GroupedMm, BatchedWithoutOffsets) {
  const int64_t m = 3, k = 4, n = 2;
  Tensor a = test::randomTensor({2, m, k}, DataType::Float32, 7),
         b = test::randomTensor({2, k, n}, DataType::Float32, 8);
  Tensor want = Tensor::empty({2, m, n}, DataType::Float64);
  for (int64_t g = 0; g < 2; ++g) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t c = 0; c < k; ++c) s += at(a, {g, i, c}) * at(b, {g, c, j});
        want.setDouble(std::vector<int64_t>{g, i, j}, s);
      }
    }
  }
  check(a, b, nullptr, want, k);
}

bool has(const std::string& message, const std::string& part) {
  if (message.find(part) != std::string::npos) return true;
  ADD_FAILURE() << "'" << part << "' not in: " << message;
  return false;
}

TEST(GroupedMmErrors, NameTheOperand) {
  Fusion fusion;
  FusionGuard guard(&fusion);
  auto* a2 = ops::TensorBuilder().shape({4, 8}).build();
  auto* b3 = ops::TensorBuilder().shape({2, 8, 3}).build();
  auto* a3 = ops::TensorBuilder().shape({2, 4, 8}).build();
  auto* v = ops::TensorBuilder().shape({8}).build();
  auto* offs = ops::TensorBuilder().shape({2}).dtype(DataType::Int32).build();
  auto* foffs = ops::TensorBuilder().shape({2}).build();
  auto err = [](const std::function<void()>& f) { return loom::test::userErrorOf(f); };
  EXPECT_TRUE(has(err([&] { ops::groupedMm(v, b3, offs); }), "mat1 T3 [8] has rank 1"));
  EXPECT_TRUE(has(err([&] { ops::groupedMm(a2, b3, nullptr); }), "need offsets"));
  EXPECT_TRUE(has(err([&] { ops::groupedMm(a3, b3, offs); }), "are only for a 2-D operand"));
  EXPECT_TRUE(
      has(err([&] { ops::groupedMm(a2, b3, foffs); }), "must be a 1-D Int32 or Int64 tensor"));
}

}  // namespace
}  // namespace loom::runtime
