// SPDX-License-Identifier: Apache-2.0
// argsort and topk (issues 30 and 36): fusions run through FusionExecutorCache with outputs
// poisoned, compared exactly with the reference evaluator and checked against torch's rule
// directly (each row's result is a permutation / selection of the row, in order, NaN the
// largest, ties in index order), along inner, outer and middle dims, odd lengths, rows shorter
// and longer than a block, every k from 0 to n, k known only at run time, producers and
// consumers in kernels of their own; rows around the powers of two that one block sorts in shared
// memory (bitonic) and rows too long for it (one thread each). Built twice: host backend (emu)
// and CUDA (gpu).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>

#include "loom/eval/compare.h"
#include "loom/ir/ir.h"
#include "loom/ops/ops.h"
#include "loom/runtime/fusion_executor_cache.h"
#include "runtime/runtime_test_backend.h"
#include "runtime/runtime_test_util.h"

namespace loom::runtime {
namespace {

using ir::Fusion;
using ir::FusionGuard;
using ir::TensorView;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A tensor of `shape` and `dt` with values from a small set (many ties) and, for floats, a NaN in
// about one element of 11 and some -0.0 next to 0.0.
Tensor tiesInput(DataType dt, const std::vector<int64_t>& shape, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> v(-3, 3);
  std::uniform_int_distribution<int> pick(0, 10);
  Tensor t = Tensor::empty(shape, dt);
  for (int64_t i = 0; i < t.numel(); ++i) {
    double x = dt == DataType::Bool ? double(v(rng) > 0) : double(v(rng));
    if (isFloatingType(dt)) {
      const int p = pick(rng);
      if (p == 0) x = kNaN;
      if (p == 1 && x == 0.0) x = -0.0;
    }
    t.setDoubleLinear(i, x);
  }
  return t;
}

// Element `j` of row `r` of `t` along `dim` (rows numbered row-major over the other dims).
struct Rows {
  const Tensor& t;
  int64_t dim;
  int64_t outer = 1, len = 1, inner = 1;
  Rows(const Tensor& tensor, int64_t d) : t(tensor), dim(d) {
    for (int64_t k = 0; k < t.dim(); ++k) {
      if (k < dim) outer *= t.size(k);
      if (k == dim) len = t.size(k);
      if (k > dim) inner *= t.size(k);
    }
  }
  int64_t count() const { return outer * inner; }
  double at(int64_t r, int64_t j) const {
    return t.getDoubleLinear(((r / inner) * len + j) * inner + r % inner);
  }
};

// torch's order: a before b (ascending, or descending), NaN largest, ties by index.
bool before(double a, int64_t ia, double b, int64_t ib, bool descending) {
  const bool an = std::isnan(a), bn = std::isnan(b);
  if (an || bn) return an == bn ? ia < ib : (descending ? an : bn);
  if (a == b) return ia < ib;
  return descending ? a > b : a < b;
}

// The rule, checked without sorting: every index of a row's result is distinct and in range,
// each value is the input's at its index, consecutive entries are in order, and (topk) no
// element left out comes before the last one kept.
void expectSortedSelection(const Tensor& x, const Tensor* values, const Tensor& indices,
                           int64_t dim, bool descending) {
  Rows in(x, dim), idx(indices, dim);
  const int64_t k = idx.len;
  ASSERT_EQ(in.count(), idx.count());
  for (int64_t r = 0; r < in.count(); ++r) {
    std::vector<bool> seen(size_t(in.len), false);
    for (int64_t j = 0; j < k; ++j) {
      const auto i = int64_t(idx.at(r, j));
      ASSERT_TRUE(i >= 0 && i < in.len) << "row " << r << " entry " << j << " index " << i;
      ASSERT_FALSE(seen[size_t(i)]) << "row " << r << " repeats index " << i;
      seen[size_t(i)] = true;
      if (values != nullptr) {
        const double v = Rows(*values, dim).at(r, j), w = in.at(r, i);
        ASSERT_TRUE((std::isnan(v) && std::isnan(w)) || v == w) << "row " << r << " entry " << j;
      }
      if (j > 0) {
        const auto p = int64_t(idx.at(r, j - 1));
        ASSERT_TRUE(before(in.at(r, p), p, in.at(r, i), i, descending))
            << "row " << r << ": entries " << j - 1 << " and " << j << " out of order";
      }
    }
    if (k == 0 || k == in.len) continue;
    const auto last = int64_t(idx.at(r, k - 1));
    for (int64_t i = 0; i < in.len; ++i) {
      if (seen[size_t(i)]) continue;
      ASSERT_FALSE(before(in.at(r, i), i, in.at(r, last), last, descending))
          << "row " << r << ": element " << i << " belongs in the top " << k;
    }
  }
}

class Sort : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = loom::test::backendUnavailable(testBackend())) GTEST_SKIP() << *why;
  }

  // Runs `f` on `args` (outputs poisoned), checks every output exactly against the reference
  // and the text form's round trip; returns the outputs and the schedulers of the kernels.
  static std::pair<std::vector<Tensor>, std::vector<std::string>> run(
      std::unique_ptr<Fusion> f, const std::vector<eval::Argument>& args) {
    test::expectTextRoundTrip(*f, "sort.fus");
    test::CheckedRun run = test::runAndCheck(std::move(f), args, eval::Tolerance{0.0, 0.0});
    lastParams().clear();
    for (const SegmentRecord& r : run.segments) lastParams().push_back(r.params);
    return {std::move(run.outputs), run.schedulers()};
  }

  // The parameters of the kernels of the last run().
  static std::vector<std::string>& lastParams() {
    static std::vector<std::string> params;
    return params;
  }

  // Every kernel of the last run() sorted with one block per row of `capacity` keys (0: one
  // thread per row).
  static void expectBlockRow(int64_t capacity) {
    for (const std::string& p : lastParams()) {
      EXPECT_NE(p.find("block_row=" + std::to_string(capacity)), std::string::npos) << p;
    }
  }

  // argsort of `shape` along `dim`, both directions, against the reference and the rule.
  static void argsortCase(DataType dt, const std::vector<int64_t>& shape, int64_t dim) {
    SCOPED_TRACE(std::string(dataTypeName(dt)) + " " + std::to_string(shape.size()) + "-D dim " +
                 std::to_string(dim) + " size " + std::to_string(shape[size_t(dim)]));
    auto f = std::make_unique<Fusion>();
    {
      FusionGuard g(f.get());
      TensorView* x = ops::TensorBuilder().rank(int64_t(shape.size())).dtype(dt).build();
      f->addInput(x);
      f->addOutput(ops::argsort(x, dim));
      f->addOutput(ops::argsort(x, dim - int64_t(shape.size()), /*descending=*/true));
    }
    Tensor x = tiesInput(dt, shape, uint64_t(shape[0] * 131 + shape.back() * 7 + dim));
    auto [got, kernels] = run(std::move(f), {x});
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].dtype(), DataType::Int64);
    expectSortedSelection(x, nullptr, got[0], dim, false);
    expectSortedSelection(x, nullptr, got[1], dim, true);
    for (const std::string& k : kernels) EXPECT_EQ(k, "sort");
  }

  // topk of a [rows, n] or [n, cols] input for every k in `ks`, largest and smallest.
  static void topkCase(DataType dt, const std::vector<int64_t>& shape, int64_t dim,
                       const std::vector<int64_t>& ks) {
    for (int64_t k : ks) {
      SCOPED_TRACE(std::string(dataTypeName(dt)) + " dim " + std::to_string(dim) + " of size " +
                   std::to_string(shape[size_t(dim)]) + ", k " + std::to_string(k));
      auto f = std::make_unique<Fusion>();
      {
        FusionGuard g(f.get());
        TensorView* x = ops::TensorBuilder().rank(int64_t(shape.size())).dtype(dt).build();
        f->addInput(x);
        ops::TopKResult hi = ops::topk(x, k, dim);
        ops::TopKResult lo = ops::topk(x, k, dim, /*largest=*/false);
        for (TensorView* t : {hi.values, hi.indices, lo.values, lo.indices}) f->addOutput(t);
      }
      Tensor x = tiesInput(dt, shape, uint64_t(k * 17 + dim + shape[0]));
      auto [got, kernels] = run(std::move(f), {x});
      ASSERT_EQ(got.size(), 4u);
      EXPECT_EQ(got[0].dtype(), dt);
      EXPECT_EQ(got[1].dtype(), DataType::Int64);
      EXPECT_EQ(got[1].size(dim), k);
      expectSortedSelection(x, &got[0], got[1], dim, true);
      expectSortedSelection(x, &got[2], got[3], dim, false);
    }
  }
};

TEST_F(Sort, ArgsortEveryDtypeInnerAndOuterDims) {
  for (DataType dt : {DataType::Float32, DataType::Float64, DataType::Float16, DataType::BFloat16,
                      DataType::Int32, DataType::Int64, DataType::Bool}) {
    argsortCase(dt, {5, 33}, 1);
    argsortCase(dt, {33, 5}, 0);
  }
}

// Odd lengths and row counts around a block: 1, 7, 130 and 1000 elements; 1 and 300 rows.
TEST_F(Sort, ArgsortLengthsAndRowCounts) {
  for (int64_t n : {1, 7, 130, 1000}) argsortCase(DataType::Float32, {3, n}, 1);
  argsortCase(DataType::Float32, {300, 9}, 1);
  argsortCase(DataType::Float32, {9, 300}, 0);
  argsortCase(DataType::Float32, {1, 1}, 0);
  argsortCase(DataType::Int64, {17}, 0);  // 1-D: one row, one thread
}

TEST_F(Sort, ArgsortMiddleDimOf3DAndTransposedInput) {
  argsortCase(DataType::Float32, {4, 37, 6}, 1);
  argsortCase(DataType::Float64, {4, 5, 6}, 2);
  // A transposed (column-major) input: rows of the sort are strided in memory.
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().shape({-1, -1}).contiguity({false, false}).build();
    f->addInput(x);
    f->addOutput(ops::argsort(x, 1, true));
    ops::TopKResult r = ops::topk(x, 3, 0);
    f->addOutput(r.values);
    f->addOutput(r.indices);
  }
  Tensor base = tiesInput(DataType::Float32, {11, 7}, 5);
  const std::vector<int64_t> swap{1, 0};
  Tensor x = base.permute(swap);  // [7, 11], strides [1, 7]
  auto [got, kernels] = run(std::move(f), {x});
  expectSortedSelection(x, nullptr, got[0], 1, true);
  expectSortedSelection(x, &got[1], got[2], 0, true);
}

TEST_F(Sort, TopKEveryKFromZeroToN) {
  topkCase(DataType::Float32, {6, 9}, 1, {0, 1, 4, 8, 9});
  topkCase(DataType::Float32, {9, 6}, 0, {1, 5, 9});
  topkCase(DataType::Int32, {4, 130}, 1, {1, 64, 130});
  topkCase(DataType::BFloat16, {3, 21}, 1, {1, 21});
  topkCase(DataType::Bool, {3, 10}, 1, {4});
  topkCase(DataType::Float64, {2, 3, 40}, 2, {7});
}

// k from a scalar input: any value in [0, n] runs; a larger one is an error before the launch.
TEST_F(Sort, TopKWithKAtRunTime) {
  auto make = [] {
    auto f = std::make_unique<Fusion>();
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().rank(2).build();
    ir::Scalar* k = ir::IrBuilder::symbolic(DataType::Int64);
    f->addInput(x);
    f->addInput(k);
    ops::TopKResult r = ops::topk(x, k, -1);
    f->addOutput(r.values);
    f->addOutput(r.indices);
    return f;
  };
  Tensor x = tiesInput(DataType::Float32, {5, 12}, 3);
  for (int64_t k : {int64_t(0), int64_t(5), int64_t(12)}) {
    SCOPED_TRACE("k " + std::to_string(k));
    auto [got, kernels] = run(make(), {x, k});
    EXPECT_EQ(got[0].size(1), k);
    expectSortedSelection(x, &got[0], got[1], 1, true);
  }
  FusionExecutorCache cache(make(), poisonedOptions());
  try {
    const std::vector<eval::Argument> args{x, int64_t(13)};
    cache.run(args);
    ADD_FAILURE() << "k = 13 of 12 elements ran";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("topk: k = 13"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("is outside [0, 12]"), std::string::npos) << e.what();
  }
}

// A sort of a computed tensor and a consumer of its result: the sort is a kernel of its own
// between two pointwise kernels; topk's indices, read by nothing, still get memory.
TEST_F(Sort, ProducersAndConsumersRunInKernelsOfTheirOwn) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().rank(2).build();
    f->addInput(x);
    TensorView* y = ops::argsort(ops::neg(x), 1);
    f->addOutput(ops::add(y, int64_t(1)));
    f->addOutput(ops::mul(ops::topk(x, 2, 0).values, 3.0));
  }
  Tensor x = tiesInput(DataType::Float32, {7, 13}, 11);
  auto [got, kernels] = run(std::move(f), {x});
  EXPECT_EQ(std::count(kernels.begin(), kernels.end(), "sort"), 2)
      << ::testing::PrintToString(kernels);
  EXPECT_EQ(kernels.size(), 5u) << ::testing::PrintToString(kernels);
}

// Rows longer than kMaxThreadRow that fit in shared memory are sorted by one block, a bitonic
// sort of the next power of two of keys: lengths just below, at and above powers of two, in both
// directions, with ties, NaN and -0.0 (the order is exactly the thread-per-row sort's).
TEST_F(Sort, BlockSortAroundPowersOfTwo) {
  for (int64_t n : {17, 31, 32, 33, 63, 64, 65, 255, 256, 257, 1023, 1024, 1025, 2049}) {
    argsortCase(DataType::Float32, {2, n}, 1);
    int64_t capacity = 1;
    while (capacity < n) capacity *= 2;
    expectBlockRow(capacity);
  }
  argsortCase(DataType::Float32, {3, 16}, 1);  // short rows: one thread each
  expectBlockRow(0);
  argsortCase(DataType::Float32, {40, 3, 5}, 0);  // an outer sort dim, rows strided
  expectBlockRow(64);
  argsortCase(DataType::Int64, {300}, 0);  // 1-D: one block
  expectBlockRow(512);
}

TEST_F(Sort, BlockSortEveryDtypeAndTopK) {
  for (DataType dt : {DataType::Float64, DataType::Float16, DataType::BFloat16, DataType::Int32,
                      DataType::Int64, DataType::Bool}) {
    argsortCase(dt, {3, 100}, 1);
    expectBlockRow(128);
  }
  topkCase(DataType::Float32, {4, 100}, 1, {1, 37, 100});
  expectBlockRow(128);
  topkCase(DataType::BFloat16, {3, 70}, 1, {1, 70});
  topkCase(DataType::Int64, {70, 2}, 0, {1, 70});
  topkCase(DataType::Bool, {2, 33}, 1, {1, 33});
  expectBlockRow(64);
}

// A row whose keys and indices exceed a block's shared memory (f64: 32768 keys need 384 KiB)
// keeps one thread per row.
TEST_F(Sort, RowsBeyondSharedMemoryKeepOneThreadPerRow) {
  argsortCase(DataType::Float64, {1, 20000}, 1);
  expectBlockRow(0);
}

// Kernels compare Int64 exactly (the reference evaluator reads values as doubles, which
// cannot tell 2^62 from 2^62 + 1): checked against the hand-sorted answer.
TEST_F(Sort, Int64ValuesBeyondDoublePrecision) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().rank(1).dtype(DataType::Int64).build();
    f->addInput(x);
    f->addOutput(ops::argsort(x, 0));
  }
  Tensor x = Tensor::empty({4}, DataType::Int64);
  const int64_t big = int64_t(1) << 62;
  int64_t* p = x.dataAs<int64_t>();
  p[0] = big + 1;
  p[1] = big;
  p[2] = big + 2;
  p[3] = -big;
  FusionExecutorCache cache(std::move(f), poisonedOptions());
  const std::vector<eval::Argument> args{x};
  Tensor out = cache.run(args).at(0);
  const std::vector<int64_t> want{3, 1, 0, 2};
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(int64_t(out.getDoubleLinear(i)), want[size_t(i)]);
}

}  // namespace
}  // namespace loom::runtime
