// SPDX-License-Identifier: Apache-2.0
// Ordinary fusions through the automatic path, each compared with the reference evaluator:
// the failure families of the general-core issue (fan-out, unrelated output groups, reshape,
// 16-bit grid reductions, log_softmax over dim 0, expanded intermediates, non-finite scalars,
// producers inlined across broadcasts). Built twice: host backend (emu) and CUDA (gpu).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "loom/eval/compare.h"
#include "loom/eval/reference_evaluator.h"
#include "loom/ir/ir.h"
#include "loom/ops/ops.h"
#include "loom/runtime/fusion_executor_cache.h"
#ifdef LOOM_HAVE_CUDA_BACKEND
#include "loom/backend/cuda/driver.h"
#endif

namespace loom::runtime {
namespace {

using ir::Fusion;
using ir::FusionGuard;
using ir::TensorView;

Tensor randomTensor(std::vector<int64_t> sizes, uint64_t seed, DataType dt = DataType::Float32) {
  Tensor t = Tensor::empty(std::move(sizes), dt);
  fillRandom(t, seed);
  return t;
}

class GeneralCore : public ::testing::Test {
 protected:
  void SetUp() override {
#ifdef LOOM_RUNTIME_TEST_CUDA
#ifdef LOOM_HAVE_CUDA_BACKEND
    if (!cuda::cudaAvailable()) GTEST_SKIP() << "no GPU: " << cuda::unavailableReason();
#else
    GTEST_SKIP() << "built without the CUDA backend";
#endif
#endif
  }

  static RuntimeOptions options() {
    RuntimeOptions o;
#ifdef LOOM_RUNTIME_TEST_CUDA
    o.backend = exec::Backend::Cuda;
#else
    o.backend = exec::Backend::Host;
#endif
    o.executor.poisonOutputs = true;
    return o;
  }

  // Runs `f` through a FusionExecutorCache (outputs poisoned first) and compares every output with
  // the reference evaluator; `reduction` is the largest number of elements one output reduces.
  static void runAndCheck(std::unique_ptr<Fusion> f, const std::vector<eval::Argument>& args,
                          int64_t reduction = 1) {
    FusionExecutorCache cache(std::move(f), options());
    std::vector<Tensor> got = cache.run(args);
    std::vector<Tensor> expected = eval::evaluateFusion(cache.fusion(), args);
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
      auto err = eval::expectClose(got[i], expected[i],
                                   eval::defaultTolerance(got[i].dtype(), reduction),
                                   "output " + std::to_string(i));
      EXPECT_FALSE(err.has_value()) << *err;
    }
  }
};

// An intermediate read by two outputs under the vectorized pointwise schedule is computed once,
// in the loop both outputs run in (it was read outside the loop that declares it).
TEST_F(GeneralCore, IntermediateFeedsTwoOutputs) {
  for (DataType dt : {DataType::Float32, DataType::BFloat16}) {
    auto f = std::make_unique<Fusion>();
    {
      FusionGuard g(f.get());
      TensorView* x = ops::TensorBuilder().rank(2).dtype(dt).build();
      f->addInput(x);
      TensorView* t = ops::add(x, 1.0);
      f->addOutput(ops::mul(t, 2.0));
      f->addOutput(ops::mul(t, 3.0));
    }
    runAndCheck(std::move(f), {randomTensor({64, 256}, 1, dt)});
  }
}

// Outputs in two groups that share no tensor: each group is its own kernel (a kernel's schedule
// propagates from one reference tensor), and the outputs reading a common input share one.
TEST_F(GeneralCore, OutputsOfUnrelatedShapes) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().rank(2).build();
    TensorView* y = ops::TensorBuilder().rank(1).build();
    f->addInput(x);
    f->addInput(y);
    f->addOutput(ops::exp(x));
    f->addOutput(ops::neg(y));
    f->addOutput(ops::add(x, 1.0));
    f->addOutput(ops::mul(y, 2.0));
  }
  runAndCheck(std::move(f), {randomTensor({64, 256}, 1), randomTensor({1000}, 2)});
}

// Squeeze then reduce, and unsqueeze of the squeezed tensor, in one fusion.
TEST_F(GeneralCore, SqueezeThenReduce) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().shape({-1, 1, -1}).build();
    f->addInput(x);
    TensorView* s = ops::squeeze(x, {1});
    f->addOutput(ops::sum(s, {1}));
    f->addOutput(ops::unsqueeze(ops::exp(s), 0));
  }
  runAndCheck(std::move(f), {randomTensor({64, 1, 256}, 1)}, 256);
}

// Boolean ops feeding where, with the bool tensor an output too.
TEST_F(GeneralCore, BoolOpsWithWhere) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().rank(2).build();
    TensorView* y = ops::TensorBuilder().rank(2).build();
    f->addInput(x);
    f->addInput(y);
    TensorView* c = ops::logicalAnd(ops::gt(x, 0.0), ops::logicalNot(ops::lt(y, 0.5)));
    f->addOutput(c);
    f->addOutput(ops::where(c, x, y));
  }
  runAndCheck(std::move(f), {randomTensor({64, 256}, 1), randomTensor({64, 256}, 2)});
}

// A producer without the broadcast its consumer merges with a real dim (x[N] broadcast against
// y[M, N], flattened by the 1-D schedule) runs over the consumer's M * N loop: it is indexed at
// m % N, not m (it computed wrong values silently), for divisible and odd N.
TEST_F(GeneralCore, ProducerInlinedAcrossABroadcast) {
  for (int64_t n : {16, 6, 5}) {
    auto f = std::make_unique<Fusion>();
    {
      FusionGuard g(f.get());
      TensorView* x = ops::TensorBuilder().rank(1).build();
      TensorView* y = ops::TensorBuilder().rank(2).build();
      f->addInput(x);
      f->addInput(y);
      f->addOutput(ops::add(ops::broadcast(ops::exp(x), {true, false}), y));
    }
    runAndCheck(std::move(f), {randomTensor({n}, 1), randomTensor({1000, n}, 2)});
  }
}

// The same with the broadcast inner (x[N] against y[N, M]): the merged index splits as m / M.
TEST_F(GeneralCore, ProducerInlinedAcrossAnInnerBroadcast) {
  for (int64_t m : {3, 8}) {
    auto f = std::make_unique<Fusion>();
    {
      FusionGuard g(f.get());
      TensorView* x = ops::TensorBuilder().rank(1).build();
      TensorView* y = ops::TensorBuilder().rank(2).build();
      f->addInput(x);
      f->addInput(y);
      f->addOutput(ops::mul(ops::broadcast(ops::sigmoid(x), {false, true}), y));
    }
    runAndCheck(std::move(f), {randomTensor({700}, 1), randomTensor({700, m}, 2)});
  }
}

// An intermediate read by an output of its own shape and, broadcast, by a larger output: the
// smaller output's loops sit inside the larger one's thread/block loops (not loops: it is
// computed redundantly and written once), with the larger output also reduced.
TEST_F(GeneralCore, IntermediateReadAtTwoBroadcastLevels) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().rank(1).build();
    TensorView* y = ops::TensorBuilder().rank(3).build();
    f->addInput(x);
    f->addInput(y);
    TensorView* e = ops::exp(x);
    TensorView* s = ops::mul(ops::broadcast(e, {true, true, false}), y);
    f->addOutput(s);
    f->addOutput(ops::sum(s, {0, 1}));
    f->addOutput(ops::neg(e));
  }
  runAndCheck(std::move(f), {randomTensor({37}, 1), randomTensor({5, 6, 37}, 2)}, 30);
}

// Reshape runs in kernels: merges and splits of dims, through the pointwise, reduction and
// normalization schedulers, before and after a reduction, and around a transpose.
TEST_F(GeneralCore, ReshapeThroughEveryScheduler) {
  auto run = [&](std::vector<int64_t> in, auto build, int64_t reduction) {
    auto f = std::make_unique<Fusion>();
    {
      FusionGuard g(f.get());
      TensorView* x = ops::TensorBuilder().shape(in).build();
      f->addInput(x);
      f->addOutput(build(x));
    }
    runAndCheck(std::move(f), {randomTensor(in, 1)}, reduction);
  };
  run({8, 12, 16}, [](TensorView* x) { return ops::relu(ops::reshape(ops::exp(x), {96, 16})); }, 1);
  run({8, 12, 16}, [](TensorView* x) { return ops::sum(ops::reshape(x, {96, 16}), {1}); }, 16);
  run({8, 12, 16}, [](TensorView* x) { return ops::sum(ops::reshape(ops::exp(x), {8, 192}), {1}); },
      192);
  run({8, 12, 16}, [](TensorView* x) { return ops::softmax(ops::reshape(x, {8, 192}), 1); }, 192);
  run({96, 16}, [](TensorView* x) { return ops::sum(ops::reshape(x, {8, 12, 16}), {2}); }, 16);
  run({8, 12, 16}, [](TensorView* x) { return ops::add(ops::reshape(ops::sum(x, {2}), {96}), 1.0); },
      16);
  run({4, 6, 10},
      [](TensorView* x) {
        return ops::reshape(ops::transpose(ops::reshape(x, {24, 10}), 0, 1), {10, 4, 6});
      },
      1);
}

// A reshaped tensor combined with another input of its new shape, and reduced over dim 0.
TEST_F(GeneralCore, ReshapeMeetsAnotherInput) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().shape({6, 20}).build();
    TensorView* y = ops::TensorBuilder().shape({12, 10}).build();
    f->addInput(x);
    f->addInput(y);
    TensorView* r = ops::add(ops::reshape(x, {12, 10}), y);
    f->addOutput(r);
    f->addOutput(ops::sum(r, {0}));
  }
  runAndCheck(std::move(f), {randomTensor({6, 20}, 1), randomTensor({12, 10}, 2)}, 12);
}

// max and min over every element of a 16-bit tensor: the grid reduction the scheduler picks
// accumulates in f32 (lowering refused 16-bit grid reductions).
TEST_F(GeneralCore, MaxMinOverAllOf16BitTensors) {
  for (DataType dt : {DataType::BFloat16, DataType::Float16}) {
    for (int64_t n : {256, 16384}) {
      auto f = std::make_unique<Fusion>();
      {
        FusionGuard g(f.get());
        TensorView* x = ops::TensorBuilder().rank(2).dtype(dt).build();
        f->addInput(x);
        f->addOutput(ops::max(x, {0, 1}));
        f->addOutput(ops::min(x, {0, 1}));
      }
      runAndCheck(std::move(f), {randomTensor({64, n}, 1, dt)});
    }
  }
}

// log_softmax over dim 0: its outer reductions read a row statistic broadcast along the vector
// lane, which keeps scalar loads (the scheduler vectorized a symbolic extent).
TEST_F(GeneralCore, LogSoftmaxOverDimZero) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().rank(2).build();
    f->addInput(x);
    TensorView* m = ops::max(x, {0}, true);
    TensorView* s = ops::sub(x, m);
    f->addOutput(ops::sub(s, ops::log(ops::sum(ops::exp(s), {0}, true))));
  }
  runAndCheck(std::move(f), {randomTensor({100, 300}, 1)}, 100);
}

// An expanded (stride-0) intermediate written by one segment and read by two others keeps its
// layout across the boundary (it was written densely but declared expanded).
TEST_F(GeneralCore, ExpandedIntermediateAcrossSegments) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().shape({-1, 1}).build();
    f->addInput(x);
    TensorView* e = ops::expand(ops::exp(x), {-1, 64});
    f->addOutput(e);
    f->addOutput(ops::sum(e, {1}));
    f->addOutput(ops::sum(e, {0}));
  }
  runAndCheck(std::move(f), {randomTensor({32, 1}, 1)}, 64);
}

// Non-finite and extreme scalars in a fusion compile and flow through (inf, -inf, nan, a
// denormal, f64 and f32 constants).
TEST_F(GeneralCore, NonFiniteScalars) {
  const double inf = std::numeric_limits<double>::infinity();
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().rank(2).build();
    TensorView* d = ops::TensorBuilder().rank(2).dtype(DataType::Float64).build();
    f->addInput(x);
    f->addInput(d);
    f->addOutput(ops::minimum(ops::add(x, inf), std::nan("")));
    f->addOutput(ops::maximum(x, -inf));
    f->addOutput(ops::add(ops::mul(d, inf), std::numeric_limits<double>::denorm_min()));
    f->addOutput(ops::where(ops::gt(x, 0.0), inf, -inf));
  }
  runAndCheck(std::move(f), {randomTensor({8, 16}, 1), randomTensor({8, 16}, 2, DataType::Float64)});
}

// The fuzzer's finds (tests/fuzz), each cut down to the pattern that failed.

// A reduction over the outer and inner dims of [N, 56, 2] reshaped to [2, 4, 1, 7] in the same
// kernel: the reshape's split dims, flattened back by the schedule, are one loop with the
// reduction's kept dim (they were a second loop outside the block's threads).
TEST_F(GeneralCore, ReshapeOfAReductionOverOuterAndInnerDims) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().shape({-1, 56, 2}).build();
    f->addInput(x);
    f->addOutput(ops::reshape(ops::varMean(x, {0, 2}).var, {2, 4, 1, 7}));
  }
  runAndCheck(std::move(f), {randomTensor({36, 56, 2}, 1)}, 72);
}

// An input that meets the row only through a broadcast (its [C] against a row of [R, C]) is not
// checked by the normalization heuristic's vector width, so it is read element by element: here
// it starts 2 bytes past a 4-byte boundary.
TEST_F(GeneralCore, MisalignedInputOnlyBroadcastAgainstTheRow) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().shape({2, 6, 34}).build();
    TensorView* w = ops::TensorBuilder().shape({34}).dtype(DataType::BFloat16).build();
    f->addInput(x);
    f->addInput(w);
    ops::LayerNormResult ln = ops::layerNorm(x, 1, nullptr, nullptr, 0.5);
    f->addOutput(ln.y);
    f->addOutput(ops::maximum(w, ln.rstd));  // [34] against [2, 6, 1]
  }
  Tensor storage = randomTensor({35}, 2, DataType::BFloat16);
  Tensor w = Tensor::fromBlob(static_cast<char*>(storage.data()) + 2, {34}, {1}, DataType::BFloat16,
                              storage.device());
  runAndCheck(std::move(f), {randomTensor({2, 6, 34}, 1), w}, 34);
}

// A [R, 1] output of a reduction over a dim of size 0 is still written (sum = 0) although the
// kernel's row loop is empty: an output's broadcast axis is not run as the row loop.
TEST_F(GeneralCore, BroadcastOutputOfAnEmptyReduction) {
  for (int64_t n : {0, 5}) {
    auto f = std::make_unique<Fusion>();
    {
      FusionGuard g(f.get());
      TensorView* y = ops::TensorBuilder().rank(2).build();
      TensorView* z = ops::TensorBuilder().rank(2).build();
      f->addInput(y);
      f->addInput(z);
      TensorView* a = ops::abs(ops::sum(y, {1}, /*keepdim=*/true));
      f->addOutput(a);
      f->addOutput(ops::add(a, z));  // a is read again in the reduction's kernel
    }
    runAndCheck(std::move(f), {randomTensor({7, n}, 2), randomTensor({7, n}, 3)}, 5);
  }
}

// An input covering only part of the normalization row ([1, H, 1] against rows of H x W) is read
// per element in the row's loops, not held in registers across rows in its own layout.
TEST_F(GeneralCore, InputSpanningPartOfTheRow) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = ops::TensorBuilder().shape({15, -1, 16}).build();
    TensorView* c = ops::TensorBuilder().shape({15, 13, 1}).build();
    TensorView* m = ops::TensorBuilder().shape({1, 13, 1}).build();
    f->addInput(x);
    f->addInput(c);
    f->addInput(m);
    TensorView* ss = ops::sum(ops::mul(x, x), {1, 2}, /*keepdim=*/true);
    TensorView* y = ops::mul(x, ops::rsqrt(ops::add(ss, 1.0)));
    f->addOutput(ops::where(ops::le(c, 0.0), y, m));
  }
  runAndCheck(std::move(f), {randomTensor({15, 13, 16}, 1), randomTensor({15, 13, 1}, 2),
                             randomTensor({1, 13, 1}, 3)},
              208);
}

// Two outputs read inside the fusion (their vectorized stores are forked copies, so their
// producers keep their own inner loops): inlining keeps every loop orderable (a tensor feeding
// the second output would otherwise share a loop with a reader of it).
TEST_F(GeneralCore, InliningKeepsLoopsOrderable) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* a = ops::TensorBuilder().shape({-1, -1, 4, 1}).dtype(DataType::Int64).build();
    TensorView* b = ops::TensorBuilder().shape({-1, 1, 4, -1}).dtype(DataType::Int64).build();
    f->addInput(a);
    f->addInput(b);
    TensorView* ne = ops::ne(a, b);
    TensorView* m = ops::maximum(a, ops::cast(ne, DataType::Int64));
    TensorView* ab = ops::abs(m);
    f->addOutput(m);
    f->addOutput(ab);
    TensorView* gt = ops::cast(ops::gt(ab, ops::cast(ne, DataType::Int64)), DataType::Float32);
    ops::VarMeanResult r = ops::varMean(gt, {0, 1, 2, 3}, 0.0, /*keepdim=*/true);
    f->addOutput(ops::mul(ops::sub(gt, r.mean), ops::rsqrt(ops::add(r.var, 0.1))));
  }
  runAndCheck(std::move(f), {randomTensor({6, 4, 4, 1}, 1, DataType::Int64),
                             randomTensor({6, 1, 4, 4}, 2, DataType::Int64)},
              384);
}

}  // namespace
}  // namespace loom::runtime
