// SPDX-License-Identifier: Apache-2.0
// Indexing ops end to end (index_select, gather, take_along_axis, scatter, scatter_add,
// embedding): kernels against the reference evaluator on random inputs and random in-range
// indices, outputs poisoned; every op along each dim, i32 and i64 indices, broadcast and expanded
// operands, pointwise producers and consumers fused in one kernel (scheduler and kernel count
// asserted), indexed operands computed in the fusion (a segment boundary), and out-of-range
// indices reported with the op, the tensors and the value. Built twice: host backend (emu) and
// CUDA (gpu).
#include <gtest/gtest.h>

#include <random>

#include "loom/eval/compare.h"
#include "loom/ir/builder.h"
#include "loom/ir/ir.h"
#include "loom/ops/ops.h"
#include "loom/runtime/fusion_executor_cache.h"
#include "loom/support/error.h"
#include "runtime/runtime_test_backend.h"
#include "runtime_test_util.h"

namespace loom::runtime {
namespace {

using ir::Fusion;
using ir::FusionGuard;
using ir::TensorView;

class IndexingExec : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = loom::test::backendUnavailable(testBackend())) GTEST_SKIP() << *why;
  }

  static Tensor randomTensor(std::vector<int64_t> sizes, uint64_t seed,
                             DataType dt = DataType::Float32) {
    Tensor t = Tensor::empty(std::move(sizes), dt);
    fillRandom(t, seed);
    return t;
  }

  // Index values drawn uniformly from [lo, hi).
  static Tensor indexTensor(std::vector<int64_t> sizes, int64_t lo, int64_t hi, DataType dt,
                            uint64_t seed) {
    return runtime::test::randomIndexTensor(std::move(sizes), lo, hi, dt, seed);
  }

  // Runs `f` and checks every output against the reference evaluator (exact unless `tol`);
  // returns the kernels' schedulers.
  static std::vector<std::string> runAndCheck(const Fusion& f,
                                              const std::vector<eval::Argument>& args,
                                              eval::Tolerance tol = {0.0, 0.0}) {
    return test::runAndCheck(f.clone(), args, tol).schedulers();
  }

  static TensorView* input(std::vector<int64_t> shape, DataType dt = DataType::Float32) {
    return ops::TensorBuilder().shape(std::move(shape)).dtype(dt).build();
  }
};

const std::vector<std::string> kOnePointwise{"pointwise"};

TEST_F(IndexingExec, IndexSelectEachDimBothIndexTypes) {
  for (DataType it : {DataType::Int32, DataType::Int64}) {
    for (int64_t dim = 0; dim < 3; ++dim) {
      SCOPED_TRACE("dim " + std::to_string(dim) + " index " + std::string(dataTypeName(it)));
      const std::vector<int64_t> shape{5, 7, 33};
      Fusion f;
      FusionGuard g(&f);
      TensorView* x = input({-1, -1, -1});
      TensorView* idx = input({-1}, it);
      f.addInput(x);
      f.addInput(idx);
      f.addOutput(ops::indexSelect(x, dim, idx));
      Tensor xt = randomTensor(shape, 1);
      Tensor it_t = indexTensor({11}, 0, shape[size_t(dim)], it, 2 + uint64_t(dim));
      EXPECT_EQ(runAndCheck(f, {xt, it_t}), kOnePointwise);
    }
  }
}

TEST_F(IndexingExec, GatherAndTakeAlongAxisEachDim) {
  for (bool exact : {false, true}) {
    for (DataType it : {DataType::Int32, DataType::Int64}) {
      for (int64_t dim = 0; dim < 2; ++dim) {
        SCOPED_TRACE(std::string(exact ? "take_along_axis" : "gather") + " dim " +
                     std::to_string(dim) + " index " + std::string(dataTypeName(it)));
        Fusion f;
        FusionGuard g(&f);
        TensorView* x = input({-1, -1});
        TensorView* idx = input({-1, -1}, it);
        f.addInput(x);
        f.addInput(idx);
        f.addOutput(exact ? ops::takeAlongAxis(x, idx, dim) : ops::gather(x, dim, idx));
        const std::vector<int64_t> xs{9, 40};
        // gather: at most x's size off dim; take_along_axis: x's size there.
        std::vector<int64_t> is = exact ? xs : std::vector<int64_t>{6, 25};
        is[size_t(dim)] = 13;
        EXPECT_EQ(runAndCheck(f, {randomTensor(xs, 3), indexTensor(is, 0, xs[size_t(dim)], it, 4)}),
                  kOnePointwise);
      }
    }
  }
}

// An expanded input (one row of values for every row of x) gathered along its real dim, and a
// pointwise consumer with x in the same kernel.
TEST_F(IndexingExec, TakeAlongAxisOfAnExpandedInput) {
  Fusion f;
  FusionGuard g(&f);
  TensorView* x = input({7, 20});
  TensorView* row = input({1, 20});
  TensorView* idx = input({7, 20}, DataType::Int32);
  f.addInput(x);
  f.addInput(row);
  f.addInput(idx);
  // The expanded tensor is computed here, so the indexed read has a kernel of its own.
  TensorView* rows = ops::expand(row, std::vector<int64_t>{7, 20});
  f.addOutput(ops::add(ops::takeAlongAxis(rows, idx, 1), x));
  EXPECT_EQ(runAndCheck(f,
                        {randomTensor({7, 20}, 20), randomTensor({1, 20}, 21),
                         indexTensor({7, 20}, 0, 20, DataType::Int32, 22)},
                        eval::defaultTolerance(DataType::Float32, 1)),
            (std::vector<std::string>{"pointwise", "pointwise"}));
}

TEST_F(IndexingExec, ScatterAndScatterAddEachDim) {
  for (DataType it : {DataType::Int32, DataType::Int64}) {
    for (int64_t dim = 0; dim < 2; ++dim) {
      SCOPED_TRACE("dim " + std::to_string(dim) + " index " + std::string(dataTypeName(it)));
      Fusion f;
      FusionGuard g(&f);
      TensorView* x = input({-1, -1});
      TensorView* idx = input({-1, -1}, it);
      TensorView* src = input({-1, -1});
      TensorView* idx2 = input({-1, -1}, it);
      TensorView* src2 = input({-1, -1});
      for (TensorView* tv : {x, idx, src, idx2, src2}) f.addInput(tv);
      f.addOutput(ops::scatterAdd(x, dim, idx, src));
      const std::vector<int64_t> xs{6, 10};
      std::vector<int64_t> is{4, 7};  // duplicates along dim: every contribution is added
      is[size_t(dim)] = 12;
      std::vector<int64_t> ss{5, 9};
      ss[size_t(dim)] = 12;
      // scatter: one permutation of the positions along dim, so no two writes meet.
      std::vector<int64_t> ps = xs;
      Tensor perm = Tensor::empty(ps, it);
      for (int64_t i = 0; i < xs[0]; ++i) {
        for (int64_t j = 0; j < xs[1]; ++j) {
          const int64_t v = dim == 0 ? (i * 5 + j) % xs[0] : (j * 3 + i) % xs[1];
          if (it == DataType::Int32) {
            static_cast<int32_t*>(perm.data())[i * xs[1] + j] = int32_t(v);
          } else {
            static_cast<int64_t*>(perm.data())[i * xs[1] + j] = v;
          }
        }
      }
      f.addOutput(ops::scatter(x, dim, idx2, src2));
      std::vector<eval::Argument> args{randomTensor(xs, 6),
                                       indexTensor(is, 0, xs[size_t(dim)], it, 7),
                                       randomTensor(ss, 8), perm, randomTensor(xs, 9)};
      // Sums of up to 12 floats in index order: exact up to reassociation. scatter_add is a
      // kernel of the scatter scheduler (an index extent of 12 searches); scatter is pointwise.
      auto kernels = runAndCheck(f, args, eval::defaultTolerance(DataType::Float32, 12));
      EXPECT_EQ(kernels, (std::vector<std::string>{"scatter", "pointwise"}));
    }
  }
}

// One tensor as the input and the source of scatter_add (x.scatter_add(1, i, x)): ops copy the
// source, whose kernel then runs first.
TEST_F(IndexingExec, ScatterAddOfATensorIntoItself) {
  Fusion f;
  FusionGuard g(&f);
  TensorView* x = input({-1, -1});
  TensorView* idx = input({-1, -1}, DataType::Int64);
  f.addInput(x);
  f.addInput(idx);
  f.addOutput(ops::scatterAdd(x, 1, idx, x));
  EXPECT_EQ(
      runAndCheck(f, {randomTensor({4, 6}, 30), indexTensor({4, 6}, 0, 6, DataType::Int64, 31)},
                  eval::defaultTolerance(DataType::Float32, 6)),
      (std::vector<std::string>{"pointwise", "scatter"}));
}

TEST_F(IndexingExec, EmbeddingWithPointwiseFusedAround) {
  Fusion f;
  FusionGuard g(&f);
  TensorView* ids = input({-1, -1}, DataType::Int64);
  TensorView* w = input({-1, -1});
  f.addInput(ids);
  f.addInput(w);
  // The index is computed in the kernel (ids + 1), the rows are scaled after the lookup.
  TensorView* shifted = ops::add(ids, int64_t{1});
  TensorView* rows = ops::embedding(shifted, w);
  f.addOutput(ops::mul(ops::relu(rows), 2.0));
  Tensor wt = randomTensor({50, 24}, 10);
  EXPECT_EQ(runAndCheck(f, {indexTensor({3, 8}, 0, 49, DataType::Int64, 11), wt}), kOnePointwise);
}

TEST_F(IndexingExec, ComputedLookupIsASegmentBoundary) {
  Fusion f;
  FusionGuard g(&f);
  TensorView* x = input({-1, -1});
  TensorView* idx = input({-1, -1}, DataType::Int32);
  f.addInput(x);
  f.addInput(idx);
  // exp(x) is read at gathered positions: it is computed first, in a kernel of its own.
  f.addOutput(ops::add(ops::gather(ops::exp(x), 1, idx), 1.0));
  auto kernels =
      runAndCheck(f, {randomTensor({8, 30}, 12), indexTensor({8, 30}, 0, 30, DataType::Int32, 13)},
                  eval::defaultTolerance(DataType::Float32, 1));
  EXPECT_EQ(kernels, (std::vector<std::string>{"pointwise", "pointwise"}));
}

TEST_F(IndexingExec, OutOfRangeIndexIsAUserError) {
  Fusion f;
  FusionGuard g(&f);
  TensorView* x = input({-1, -1});
  TensorView* idx = input({-1, -1}, DataType::Int64);
  f.addInput(x);
  f.addInput(idx);
  f.addOutput(ops::gather(x, 1, idx));
  Tensor it = indexTensor({4, 6}, 0, 6, DataType::Int64, 14);
  static_cast<int64_t*>(it.data())[9] = 6;
  EXPECT_EQ(test::runError(f, {randomTensor({4, 6}, 15), it}),
            "gather: index value 6 in T1 is out of range for dimension 1 of T0 (size 6); "
            "indices must lie in [0, 6)");
  static_cast<int64_t*>(it.data())[9] = -1;
  EXPECT_EQ(test::runError(f, {randomTensor({4, 6}, 15), it}),
            "gather: index value -1 in T1 is out of range for dimension 1 of T0 (size 6); "
            "indices must lie in [0, 6) (negative ones are not wrapped)");
}

}  // namespace
}  // namespace loom::runtime
