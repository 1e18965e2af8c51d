// SPDX-License-Identifier: Apache-2.0
// Random numbers end to end: kernels draw exactly the reference evaluator's numbers (uniform
// bit-exact, normal within one ulp of its dtype, docs/ops.md) under different schedules (forced
// through parameter overrides), in different fusions (pointwise, as the producer of a reduction,
// dropout before a layer_norm), for the seed and offset given at run time. Built twice: host
// backend (emu) and CUDA (gpu).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "loom/eval/compare.h"
#include "loom/eval/reference_evaluator.h"
#include "loom/ir/builder.h"
#include "loom/ir/ir.h"
#include "loom/ops/ops.h"
#include "loom/runtime/fusion_executor_cache.h"
#include "runtime/runtime_test_backend.h"
#include "runtime/runtime_test_util.h"
#ifdef LOOM_HAVE_CUDA_BACKEND
#include "loom/backend/cuda/memory.h"
#endif

namespace loom::runtime {
namespace {

using ir::Fusion;
using ir::FusionGuard;
using ir::Scalar;
using ir::TensorView;
using Overrides = std::vector<std::pair<std::string, int64_t>>;

class RngExec : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = loom::test::backendUnavailable(testBackend())) GTEST_SKIP() << *why;
  }

  // Fusions without tensor inputs leave their outputs on the backend's device: host copies to
  // compare.
  static Tensor host(const Tensor& t) {
#ifdef LOOM_HAVE_CUDA_BACKEND
    if (t.device().isCuda()) return cuda::toHost(t);
#endif
    return t;
  }
  static std::vector<Tensor> host(const std::vector<Tensor>& ts) {
    std::vector<Tensor> out;
    for (const Tensor& t : ts) out.push_back(host(t));
    return out;
  }

  static RuntimeOptions options(Overrides overrides = {}) {
    RuntimeOptions o = poisonedOptions();
    o.paramOverrides = std::move(overrides);
    return o;
  }

  // A fusion whose first two inputs are the Int64 seed and offset.
  struct Built {
    std::unique_ptr<Fusion> fusion = std::make_unique<Fusion>();
    Scalar* seed = nullptr;
    Scalar* offset = nullptr;
  };
  template <typename Fn>
  static Built build(Fn&& body) {
    Built b;
    FusionGuard g(b.fusion.get());
    b.seed = ir::IrBuilder::symbolic(DataType::Int64);
    b.offset = ir::IrBuilder::symbolic(DataType::Int64);
    b.fusion->addInput(b.seed);
    b.fusion->addInput(b.offset);
    body(b);
    return b;
  }

  // Runs `f` through a FusionExecutorCache with `overrides` and checks every output against the
  // reference: outputs listed in `normal` within one ulp of their dtype, the others exactly
  // unless listed in `reduced` (then the tolerance of `reduction` elements). Returns the outputs
  // and each kernel's "scheduler: params" line (to tell schedules apart).
  static std::pair<std::vector<Tensor>, std::vector<std::string>> runAndCheck(
      const Fusion& f, const std::vector<eval::Argument>& args, Overrides overrides = {},
      std::vector<size_t> normal = {}, std::vector<size_t> reduced = {}, int64_t reduction = 1) {
    FusionExecutorCache cache(f.clone(), options(std::move(overrides)));
    auto in = [](const std::vector<size_t>& v, size_t i) {
      return std::find(v.begin(), v.end(), i) != v.end();
    };
    test::CheckedRun run =
        test::runAndCheck(cache, args, test::Tolerances::byOutput([&](size_t i, DataType dt) {
                            if (in(reduced, i)) return eval::defaultTolerance(dt, reduction);
                            if (in(normal, i)) return oneUlp(dt);
                            return eval::Tolerance{0.0, 0.0};
                          }));
    return {std::move(run.outputs), run.kernels()};
  }

  // Box-Muller's log and cos are the platform's: one ulp of the dtype (docs/ops.md).
  static eval::Tolerance oneUlp(DataType dt) {
    switch (dt) {
      case DataType::Float64: return {1e-13, 1e-13};
      case DataType::Float16: return {std::ldexp(1.0, -10), 0.0};
      case DataType::BFloat16: return {std::ldexp(1.0, -7), 0.0};
      default: return {std::ldexp(1.0, -23), 0.0};
    }
  }

  static void expectSame(const Tensor& a, const Tensor& b, const std::string& what) {
    auto err = eval::expectClose(a, b, {0.0, 0.0}, what);
    EXPECT_FALSE(err.has_value()) << *err;
  }

  static Tensor randomTensor(std::vector<int64_t> sizes, uint64_t seed) {
    Tensor t = Tensor::empty(std::move(sizes), DataType::Float32);
    fillRandom(t, seed);
    return t;
  }
};

// Every distribution and dtype in one pointwise fusion, under two schedules (vectorized by 2 with
// 128 threads; scalar with 32 threads unrolled by 2): both equal the reference and each other.
TEST_F(RngExec, PointwiseUnderTwoSchedules) {
  Built b = build([](Built& b) {
    b.fusion->addOutput(ops::rand({37, 128}, b.seed, b.offset));
    b.fusion->addOutput(ops::uniform({37, 128}, -2.0, 3.0, b.seed, b.offset, DataType::Float64));
    b.fusion->addOutput(ops::rand({37, 128}, b.seed, b.offset, DataType::BFloat16));
    b.fusion->addOutput(ops::uniform({37, 128}, 1.0, 9.0, b.seed, b.offset, DataType::Float16));
    b.fusion->addOutput(ops::randn({37, 128}, b.seed, b.offset));
    b.fusion->addOutput(ops::normal({37, 128}, 1.0, 2.0, b.seed, b.offset, DataType::Float64));
  });
  const std::vector<eval::Argument> args{int64_t{0x5eed}, int64_t{3}};
  auto [v4, p4] = runAndCheck(*b.fusion, args, {{"vectorize", 2}, {"bdimx", 128}}, {4, 5});
  auto [v1, p1] =
      runAndCheck(*b.fusion, args, {{"vectorize", 1}, {"bdimx", 32}, {"unroll", 2}}, {4, 5});
  EXPECT_NE(p4, p1);
  // The outputs share no tensor: one pointwise kernel each, all under the forced parameters.
  ASSERT_EQ(p4.size(), 6u);
  for (size_t k = 0; k < p4.size(); ++k) {
    EXPECT_NE(p4[k].find("vectorize=2 unroll=1 bdimx=128"), std::string::npos) << p4[k];
    EXPECT_NE(p1[k].find("vectorize=1 unroll=2 bdimx=32"), std::string::npos) << p1[k];
  }
  ASSERT_EQ(v4.size(), v1.size());
  for (size_t i = 0; i < 4; ++i) expectSame(v4[i], v1[i], "output " + std::to_string(i));
}

// The seed and offset are run-time inputs of one compiled fusion: another offset (or seed) draws
// other numbers, each the reference's; the same pair draws the same numbers again.
TEST_F(RngExec, SeedAndOffsetAtRunTime) {
  Built b = build([](Built& b) { b.fusion->addOutput(ops::rand({1000}, b.seed, b.offset)); });
  FusionExecutorCache cache(b.fusion->clone(), options());
  std::vector<std::vector<eval::Argument>> runs = {{int64_t{1}, int64_t{0}},
                                                   {int64_t{1}, int64_t{1}},
                                                   {int64_t{2}, int64_t{0}},
                                                   {int64_t{-1}, int64_t{-7}},
                                                   {int64_t{1}, int64_t{0}}};
  std::vector<Tensor> outs;
  for (const auto& args : runs) {
    outs.push_back(host(cache.run(args).at(0)));
    expectSame(outs.back(), eval::evaluateFusion(cache.fusion(), args).at(0), "rand");
  }
  EXPECT_EQ(cache.numRuntimes(), 1);
  expectSame(outs[0], outs[4], "the same seed and offset");
  for (size_t i = 1; i < 4; ++i) {
    int64_t equal = 0;
    for (int64_t k = 0; k < 1000; ++k)
      equal += outs[0].getDoubleLinear(k) == outs[i].getDoubleLinear(k);
    EXPECT_LT(equal, 5) << "run " << i << " repeats run 0";
  }
}

// The same rand in different fusions, computed inside one kernel of each: alone (pointwise), as
// the producer of a sum (reduction) and as dropout's mask before a layer_norm (normalization).
// The masks are bit-identical; the sum and the normalized output match the reference.
TEST_F(RngExec, SameRandInDifferentFusions) {
  const int64_t rows = 24, cols = 320;
  Built alone = build([&](Built& b) {
    TensorView* r = ops::rand({rows, cols}, b.seed, b.offset);
    b.fusion->addOutput(r);
    b.fusion->addOutput(ops::lt(r, 0.9));
  });
  Built reduce = build([&](Built& b) {
    TensorView* x = ops::TensorBuilder().shape({rows, cols}).build();
    b.fusion->addInput(x);
    b.fusion->addOutput(ops::sum(ops::mul(x, ops::rand({rows, cols}, b.seed, b.offset)), {1}));
  });
  Built norm = build([&](Built& b) {
    TensorView* x = ops::TensorBuilder().shape({rows, cols}).build();
    b.fusion->addInput(x);
    auto [y, mask] = ops::dropout(x, 0.1, b.seed, b.offset);
    b.fusion->addOutput(mask);
    b.fusion->addOutput(ops::layerNorm(y, 1, nullptr, nullptr).y);
  });
  const Tensor x = randomTensor({rows, cols}, 4);
  auto [a, pa] = runAndCheck(*alone.fusion, {int64_t{77}, int64_t{5}});
  auto [r, pr] = runAndCheck(*reduce.fusion, {int64_t{77}, int64_t{5}, x}, {}, {}, {0}, cols);
  auto [n, pn] = runAndCheck(*norm.fusion, {int64_t{77}, int64_t{5}, x}, {}, {}, {1}, cols);
  // One kernel each, of the scheduler the fusion's kind calls for: the rand is computed inside
  // the reduction and the normalization kernels.
  const std::pair<const std::vector<std::string>*, std::string> kinds[] = {
      {&pa, "pointwise: "}, {&pr, "reduction: "}, {&pn, "inner_persistent: "}};
  for (const auto& [kernels, scheduler] : kinds) {
    ASSERT_EQ(kernels->size(), 1u) << scheduler;
    EXPECT_EQ(kernels->at(0).rfind(scheduler, 0), 0u) << kernels->at(0);
  }
  expectSame(a[1], n[0], "mask alone and in dropout before layer_norm");
}

// A rand broadcast against an input (a rank-1 rand inlined into a [rows, cols] loop nest, and a
// [1, cols] rand): indexed by its own logical index, not the consumer's.
TEST_F(RngExec, BroadcastRand) {
  Built b = build([](Built& b) {
    TensorView* x = ops::TensorBuilder().shape({-1, -1}).build();
    b.fusion->addInput(x);
    TensorView* row = ops::broadcast(ops::rand({96}, b.seed, b.offset), {true, false});
    b.fusion->addOutput(ops::add(x, row));
    b.fusion->addOutput(ops::mul(x, ops::rand({1, 96}, b.seed, b.offset)));
  });
  runAndCheck(*b.fusion, {int64_t{9}, int64_t{1}, randomTensor({40, 96}, 2)});
}

}  // namespace
}  // namespace loom::runtime
