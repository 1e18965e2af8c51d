// SPDX-License-Identifier: Apache-2.0
// scatter_add end to end through the scatter scheduler: large index extents take the atomic
// kernel (copy self, grid barrier, one atomic add per index element), small ones the per-element
// search; both against the reference evaluator on random inputs with many duplicate indices,
// outputs poisoned, for every dtype the atomics take (bf16 and f16 summed in an f32 scratch),
// 3-D tensors with an index smaller than self off the dim, an expanded index, and an
// out-of-range index reported as the search reports it. Built twice: host backend (emu) and CUDA
// (gpu).
#include <gtest/gtest.h>

#include <random>

#include "loom/eval/compare.h"
#include "loom/ir/builder.h"
#include "loom/ir/ir.h"
#include "loom/ops/ops.h"
#include "loom/runtime/fusion_executor_cache.h"
#include "loom/scheduler/scatter.h"
#include "loom/support/error.h"
#include "runtime/runtime_test_backend.h"
#include "runtime_test_util.h"

namespace loom::runtime {
namespace {

using ir::Fusion;
using ir::FusionGuard;
using ir::TensorView;

class ScatterExec : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = loom::test::backendUnavailable(testBackend())) GTEST_SKIP() << *why;
  }

  static Tensor randomTensor(std::vector<int64_t> sizes, uint64_t seed, DataType dt) {
    Tensor t = Tensor::empty(std::move(sizes), dt);
    fillRandom(t, seed);
    return t;
  }

  // Index values drawn uniformly from [0, hi).
  static Tensor indexTensor(std::vector<int64_t> sizes, int64_t hi, DataType dt, uint64_t seed) {
    return runtime::test::randomIndexTensor(std::move(sizes), 0, hi, dt, seed);
  }

  static TensorView* input(size_t rank, DataType dt) {
    return ops::TensorBuilder().rank(int64_t(rank)).dtype(dt).build();
  }

  // out = x.scatter_add(dim, idx, src) with the given sizes (idx's and src's the same).
  static test::CheckedRun scatterAdd(DataType dt, DataType it, int64_t dim, std::vector<int64_t> xs,
                                     std::vector<int64_t> is, eval::Tolerance tol) {
    Fusion f;
    FusionGuard g(&f);
    TensorView* x = input(xs.size(), dt);
    TensorView* idx = input(is.size(), it);
    TensorView* src = input(is.size(), dt);
    f.addInput(x);
    f.addInput(idx);
    f.addInput(src);
    f.addOutput(ops::scatterAdd(x, dim, idx, src));
    return test::runAndCheck(
        f.clone(),
        {randomTensor(xs, 1, dt), indexTensor(is, xs[size_t(dim)], it, 2), randomTensor(is, 3, dt)},
        tol);
  }
};

bool atomic(const std::string& params) { return params.find("atomic=1") != std::string::npos; }

// An index extent along the dim of kMinAtomicScatterExtent or more takes the atomic kernel; each
// position gets about a dozen contributions, added in any order (float sums within the
// reassociation bound, integer sums exact).
TEST_F(ScatterExec, LargeIndexExtentsAddWithAtomicsForEveryDtype) {
  for (DataType dt : {DataType::Float32, DataType::Float64, DataType::Int32, DataType::Int64}) {
    for (int64_t dim = 0; dim < 2; ++dim) {
      SCOPED_TRACE(std::string(dataTypeName(dt)) + " dim " + std::to_string(dim));
      std::vector<int64_t> xs{12, 9};
      std::vector<int64_t> is{5, 7};  // smaller than x off the dim
      is[size_t(dim)] = 160;
      xs[size_t(dim)] = 13;
      test::CheckedRun r = scatterAdd(dt, dim == 0 ? DataType::Int64 : DataType::Int32, dim, xs, is,
                                      eval::defaultTolerance(dt, 160));
      ASSERT_EQ(r.schedulers(), (std::vector<std::string>{"scatter"}));
      EXPECT_TRUE(atomic(r.segments[0].params)) << r.segments[0].params;
    }
  }
}

// 16-bit floats sum in an f32 scratch and are rounded once, as the search and reductions do:
// within the 16-bit tolerance of a sum, with a dozen terms (some cancelling) per element.
TEST_F(ScatterExec, SixteenBitFloatsSumInF32) {
  for (DataType dt : {DataType::BFloat16, DataType::Float16}) {
    SCOPED_TRACE(dataTypeName(dt));
    test::CheckedRun r =
        scatterAdd(dt, DataType::Int64, 1, {6, 8}, {6, 100}, eval::defaultTolerance(dt, 100));
    ASSERT_EQ(r.schedulers(), (std::vector<std::string>{"scatter"}));
    EXPECT_TRUE(atomic(r.segments[0].params)) << r.segments[0].params;
  }
}

// Three dims, the scatter along the middle one, every position of x hit many times.
TEST_F(ScatterExec, ThreeDimsAlongTheMiddleDim) {
  test::CheckedRun r = scatterAdd(DataType::Float32, DataType::Int64, 1, {3, 5, 4}, {2, 64, 3},
                                  eval::defaultTolerance(DataType::Float32, 64));
  EXPECT_TRUE(atomic(r.segments.at(0).params)) << r.segments.at(0).params;
}

// Below the threshold each out element searches the index in order: the sums are the
// deterministic ones, and the kernel has no atomics.
TEST_F(ScatterExec, SmallIndexExtentsSearch) {
  test::CheckedRun r = scatterAdd(
      DataType::Float32, DataType::Int64, 0, {4, 6}, {scheduler::kMinAtomicScatterExtent - 1, 6},
      eval::defaultTolerance(DataType::Float32, scheduler::kMinAtomicScatterExtent));
  ASSERT_EQ(r.schedulers(), (std::vector<std::string>{"scatter"}));
  EXPECT_FALSE(atomic(r.segments[0].params)) << r.segments[0].params;
}

// Embedding backward: token ids broadcast along the hidden dim index the rows of a zero weight
// gradient. The expanded index is computed in the fusion, so its kernel runs first.
TEST_F(ScatterExec, EmbeddingBackwardShape) {
  Fusion f;
  FusionGuard g(&f);
  TensorView* ids = input(1, DataType::Int64);
  TensorView* grad = input(2, DataType::Float32);
  TensorView* zeros = input(2, DataType::Float32);
  f.addInput(ids);
  f.addInput(grad);
  f.addInput(zeros);
  const int64_t tokens = 200, hidden = 16, vocab = 30;
  TensorView* wide =
      ops::expand(ops::broadcast(ids, {false, true}), std::vector<int64_t>{-1, hidden});
  f.addOutput(ops::scatterAdd(zeros, 0, wide, grad));
  Tensor zero = Tensor::empty({vocab, hidden}, DataType::Float32);
  zero.fill(0);
  test::CheckedRun r =
      test::runAndCheck(f.clone(),
                        {indexTensor({tokens}, vocab, DataType::Int64, 4),
                         randomTensor({tokens, hidden}, 5, DataType::Float32), zero},
                        eval::defaultTolerance(DataType::Float32, tokens));
  ASSERT_FALSE(r.segments.empty());
  EXPECT_EQ(r.segments.back().scheduler, "scatter");
  EXPECT_TRUE(atomic(r.segments.back().params)) << r.segments.back().params;
}

// An index value outside x's dim is the search's UserError, from the atomic kernel's check.
TEST_F(ScatterExec, OutOfRangeIndexIsAUserError) {
  Fusion f;
  FusionGuard g(&f);
  TensorView* x = input(2, DataType::Float32);
  TensorView* idx = input(2, DataType::Int64);
  TensorView* src = input(2, DataType::Float32);
  f.addInput(x);
  f.addInput(idx);
  f.addInput(src);
  f.addOutput(ops::scatterAdd(x, 0, idx, src));
  Tensor it = indexTensor({40, 3}, 10, DataType::Int64, 6);
  static_cast<int64_t*>(it.data())[37] = 10;
  EXPECT_EQ(test::runError(f, {randomTensor({10, 3}, 7, DataType::Float32), it,
                               randomTensor({40, 3}, 8, DataType::Float32)}),
            "scatter_add: index value 10 in T1 is out of range for dimension 0 of T0 (size 10); "
            "indices must lie in [0, 10)");
}

}  // namespace
}  // namespace loom::runtime
