// SPDX-License-Identifier: Apache-2.0
// Reductions and normalizations over inputs whose memory order is not their logical order (a
// permute of a row-major input, a stride_order input, a matmul rFactor's partial products) run
// end to end through the cache with outputs poisoned, against the reference evaluator; the
// reduction kernels are scheduled as the memory order says (utils::memoryOrder). Built twice:
// host backend (emu) and CUDA (gpu).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "loom/ir/ir.h"
#include "loom/ops/contraction_rfactor.h"
#include "loom/ops/ops.h"
#include "runtime/runtime_test_backend.h"
#include "runtime/runtime_test_util.h"

namespace loom::runtime {
namespace {

using ir::Fusion;
using ir::FusionGuard;
using ir::TensorView;

class MemoryOrder : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = loom::test::backendUnavailable(testBackend())) GTEST_SKIP() << *why;
  }
};

// A fusion of one input [-1, -1] (with `stride_order` when given) and the outputs `body` makes.
std::unique_ptr<Fusion> fusionOf(const std::vector<int64_t>& stride_order,
                                 const std::function<void(Fusion&, TensorView*)>& body) {
  auto f = std::make_unique<Fusion>();
  FusionGuard g(f.get());
  ops::TensorBuilder b;
  b.shape({-1, -1});
  if (!stride_order.empty()) b.strideOrder(stride_order);
  TensorView* x = b.build();
  f->addInput(x);
  body(*f, x);
  return f;
}

// The params of the run's reduction kernels ("Reduction: outer ...").
std::vector<std::string> reductionKernels(const test::CheckedRun& run) {
  std::vector<std::string> out;
  for (const std::string& k : run.kernels()) {
    if (k.rfind("reduction", 0) == 0) out.push_back(k);
  }
  return out;
}

bool allOuter(const test::CheckedRun& run) {
  const std::vector<std::string> reds = reductionKernels(run);
  return !reds.empty() && std::all_of(reds.begin(), reds.end(), [](const std::string& k) {
    return k.find("Reduction: outer") != std::string::npos;
  });
}

std::string describe(const test::CheckedRun& run) {
  std::string s;
  for (const std::string& k : run.kernels()) s += "  " + k + "\n";
  return s;
}

// x[k, n] row-major; y = permute(x) is [n, k]: reductions over y's last dim read x's rows.
TEST_F(MemoryOrder, SumAndMaxOverPermutedInput) {
  const std::vector<eval::Argument> args{test::randomTensor({300, 160}, 1)};
  for (bool max : {false, true}) {
    SCOPED_TRACE(max ? "max" : "sum");
    auto run = test::runAndCheck(fusionOf({}, [&](Fusion& f, TensorView* x) {
                                   TensorView* y = ops::permute(x, {1, 0});
                                   f.addOutput(max ? ops::max(y, {1}) : ops::sum(y, {1}));
                                 }),
                                 args, 300);
    EXPECT_TRUE(allOuter(run)) << describe(run);
  }
}

// The same sums with the layout declared on the input instead (stride_order [1, 0]: logical
// [n, k], k outermost), given a tensor with those strides; and the reduction over the logical
// outer dim, which is innermost in memory.
TEST_F(MemoryOrder, SumOverStrideOrderInput) {
  const std::vector<int64_t> perm{1, 0};
  const std::vector<eval::Argument> args{test::randomTensor({300, 160}, 2).permute(perm)};
  auto last = test::runAndCheck(
      fusionOf({1, 0}, [](Fusion& f, TensorView* x) { f.addOutput(ops::sum(x, {1})); }), args,
      300);
  EXPECT_TRUE(allOuter(last)) << describe(last);
  auto first = test::runAndCheck(
      fusionOf({1, 0}, [](Fusion& f, TensorView* x) { f.addOutput(ops::sum(x, {0})); }), args,
      160);
  const std::vector<std::string> reds = reductionKernels(first);
  ASSERT_EQ(reds.size(), 1u) << describe(first);
  EXPECT_NE(reds[0].find("Reduction: inner"), std::string::npos) << describe(first);
}

TEST_F(MemoryOrder, VarMeanOverPermutedInput) {
  const std::vector<eval::Argument> args{test::randomTensor({257, 96}, 3)};
  auto run = test::runAndCheck(fusionOf({}, [](Fusion& f, TensorView* x) {
                                 auto vm = ops::varMean(ops::permute(x, {1, 0}), {1});
                                 f.addOutput(vm.var);
                                 f.addOutput(vm.mean);
                               }),
                               args, 257);
  EXPECT_TRUE(allOuter(run)) << describe(run);
}

// Normalizations over the dim that is outermost in memory: whichever schedulers take them, the
// numbers match, and every reduction kernel among them is an outer one.
TEST_F(MemoryOrder, SoftmaxAndLayerNormOverPermutedInput) {
  const std::vector<eval::Argument> args{test::randomTensor({200, 64}, 4)};
  auto softmax = test::runAndCheck(fusionOf({}, [](Fusion& f, TensorView* x) {
                                     f.addOutput(ops::softmax(ops::permute(x, {1, 0}), 1));
                                   }),
                                   args, 200);
  for (const std::string& k : reductionKernels(softmax)) {
    EXPECT_NE(k.find("Reduction: outer"), std::string::npos) << describe(softmax);
  }
  auto ln = test::runAndCheck(fusionOf({}, [](Fusion& f, TensorView* x) {
                                auto r = ops::layerNorm(ops::permute(x, {1, 0}), 1, nullptr,
                                                        nullptr);
                                f.addOutput(r.y);
                              }),
                              args, 200);
  for (const std::string& k : reductionKernels(ln)) {
    EXPECT_NE(k.find("Reduction: outer"), std::string::npos) << describe(ln);
  }
}

// The same with the layout declared on the input (stride_order [1, 0]): logically an inner
// normalization, in memory an outer one.
TEST_F(MemoryOrder, SoftmaxAndLayerNormOverStrideOrderInput) {
  const std::vector<int64_t> perm{1, 0};
  const std::vector<eval::Argument> args{test::randomTensor({200, 64}, 5).permute(perm)};
  auto softmax = test::runAndCheck(fusionOf({1, 0}, [](Fusion& f, TensorView* x) {
                                     f.addOutput(ops::softmax(x, 1));
                                   }),
                                   args, 200);
  // One outer-persistent kernel whose threads run along n, the dim that is dense in memory.
  const std::vector<std::string> kernels = softmax.kernels();
  ASSERT_EQ(kernels.size(), 1u) << describe(softmax);
  EXPECT_EQ(kernels[0].rfind("outer_persistent: OuterPersistent: inner_reduced=0", 0), 0u)
      << describe(softmax);
  auto ln = test::runAndCheck(fusionOf({1, 0}, [](Fusion& f, TensorView* x) {
                                auto r = ops::layerNorm(x, 1, nullptr, nullptr);
                                f.addOutput(r.y);
                              }),
                              args, 200);
  for (const std::string& k : ln.schedulers()) {
    EXPECT_NE(k, "inner_persistent") << describe(ln);
  }
}

// The matmul rFactor's partial sum: [512, 256] x [256, 256] with k in 4 blocks; the partials
// [4, 512, 256] are summed over their leading dim after a permute to [512, 256, 4].
TEST_F(MemoryOrder, MatmulRFactorPartialSum) {
  auto fusion = std::make_unique<Fusion>();
  {
    FusionGuard g(fusion.get());
    TensorView* a = ops::TensorBuilder().shape({512, 256}).build();
    TensorView* b = ops::TensorBuilder().shape({256, 256}).build();
    fusion->addInput(a);
    fusion->addInput(b);
    TensorView* out = ops::matmul(a, b);
    fusion->addOutput(out);
    out->split(-1, 4, /*inner_split=*/false);
    (void)ops::rFactorContraction(out, {-1});
  }
  const std::vector<eval::Argument> args{test::randomTensor({512, 256}, 6),
                                         test::randomTensor({256, 256}, 7)};
  auto run = test::runAndCheck(std::move(fusion), args, 256);
  EXPECT_TRUE(allOuter(run)) << describe(run);
}

}  // namespace
}  // namespace loom::runtime
