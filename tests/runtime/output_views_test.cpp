// SPDX-License-Identifier: Apache-2.0
// Outputs that are views of an input (issue 36, exec/output_views.h): a reshape of a contiguous
// input, a permute, a squeeze or unsqueeze and a slice come back as the input's memory with the
// view's sizes and strides, no kernel launched; a reshape the input's strides cannot express, a
// view of an input written in place and a view another segment reads keep their written copy.
// Every case compares with the reference evaluator (outputs poisoned). Built twice: host backend
// (emu) and CUDA (gpu, with CUDA tensors: a view of a host tensor copied in is a copy).
#include "loom/exec/output_views.h"

#include <gtest/gtest.h>

#include <string>

#include "loom/eval/compare.h"
#include "loom/eval/reference_evaluator.h"
#include "loom/ir/ir.h"
#include "loom/ops/ops.h"
#include "loom/runtime/fusion_executor_cache.h"
#include "runtime/runtime_test_backend.h"
#ifdef LOOM_HAVE_CUDA_BACKEND
#include "loom/backend/cuda/memory.h"
#endif

namespace loom::runtime {
namespace {

using ir::Fusion;
using ir::FusionGuard;
using ir::TensorView;
using Args = std::vector<eval::Argument>;

TensorView* input(Fusion& f, std::vector<int64_t> shape, bool contiguous = true) {
  auto* t = ops::TensorBuilder().shape(std::move(shape)).contiguous(contiguous).build();
  f.addInput(t);
  return t;
}

Tensor random(std::vector<int64_t> sizes, uint64_t seed) {
  Tensor t = Tensor::empty(std::move(sizes), DataType::Float32);
  fillRandom(t, seed);
  return t;
}

Tensor host(const Tensor& t) {
#ifdef LOOM_HAVE_CUDA_BACKEND
  if (t.device().isCuda()) return cuda::toHost(t);
#endif
  return t;
}

// `t` where the test's device computes, its layout kept.
Tensor onDevice(const Tensor& t) {
#ifdef LOOM_RUNTIME_TEST_CUDA
  return cuda::toDeviceSameLayout(t);
#else
  return t;
#endif
}

class OutputViews : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = loom::test::backendUnavailable(testBackend())) GTEST_SKIP() << *why;
  }

  // Runs `cache` on `args` (host tensors, moved to the device) and checks every output against
  // the reference evaluator; returns the outputs and the device arguments they may view.
  static std::pair<std::vector<Tensor>, Args> runAndCheck(FusionExecutorCache& cache,
                                                          const Args& args) {
    Args device_args;
    Args host_args;
    for (const eval::Argument& a : args) {
      const auto* t = std::get_if<Tensor>(&a);
      device_args.push_back(t == nullptr ? a : eval::Argument(onDevice(*t)));
      host_args.push_back(t == nullptr ? a : eval::Argument(t->contiguous()));
    }
    const std::vector<Tensor> expected = eval::evaluateFusion(cache.fusion(), host_args);
    std::vector<Tensor> outs = cache.run(device_args);
    EXPECT_EQ(outs.size(), expected.size());
    for (size_t o = 0; o < expected.size() && o < outs.size(); ++o) {
      EXPECT_EQ(outs[o].sizes(), expected[o].sizes()) << "output " << o;
      auto msg =
          eval::expectClose(host(outs[o]), expected[o], eval::defaultTolerance(expected[o].dtype()),
                            "output " + std::to_string(o));
      EXPECT_FALSE(msg.has_value()) << *msg;
    }
    return {outs, device_args};
  }
};

// Element [0, ...] of `view` in `of`'s memory, as an offset in elements (or -1 when the storage
// differs).
int64_t offsetIn(const Tensor& view, const Tensor& of) {
  if (view.storage() != of.storage()) return -1;
  return view.offset() - of.offset();
}

// nvFuser's case: a reshape of a contiguous input is the input itself, reshaped.
TEST_F(OutputViews, ReshapeOfAContiguousInputIsTheInput) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = input(*f, {2, 3, 4});
    f->addOutput(ops::reshape(x, std::vector<int64_t>{2, 12}));
  }
  FusionExecutorCache cache(std::move(f), poisonedOptions());
  auto [outs, args] = runAndCheck(cache, {random({2, 3, 4}, 1)});
  const Tensor& x = std::get<Tensor>(args[0]);
  EXPECT_EQ(outs[0].data(), x.data());
  EXPECT_EQ(outs[0].strides(), (std::vector<int64_t>{12, 1}));
  // The second run (a cached plan) views the new input.
  auto [outs2, args2] = runAndCheck(cache, {random({2, 3, 4}, 2)});
  EXPECT_EQ(outs2[0].data(), std::get<Tensor>(args2[0]).data());
}

// A permute, a squeeze of a dim of one, an unsqueeze and a slice, each an output of its own, and
// a chain of them: every one over the input's memory, with the view's strides and offset.
TEST_F(OutputViews, PermuteSqueezeUnsqueezeAndSliceAreViews) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = input(*f, {-1, 1, -1});
    f->addOutput(ops::permute(x, {2, 0, 1}));
    f->addOutput(ops::squeeze(x, {1}));
    f->addOutput(ops::unsqueeze(x, 0));
    f->addOutput(ops::slice(x, 2, int64_t{2}, int64_t{5}));
    f->addOutput(ops::reshape(ops::permute(ops::squeeze(x, {1}), {1, 0}), {-1}));
  }
  FusionExecutorCache cache(std::move(f), poisonedOptions());
  // x is [6, 1, 7]; the last output flattens it transposed to [7, 6], which its strides cannot
  // express (the kernel writes it).
  auto [outs, args] = runAndCheck(cache, {random({6, 1, 7}, 3)});
  const Tensor& x = std::get<Tensor>(args[0]);
  EXPECT_EQ(offsetIn(outs[0], x), 0);
  EXPECT_EQ(outs[0].strides()[0], 1);  // the strides of dims of more than one element
  EXPECT_EQ(outs[0].strides()[1], 7);
  EXPECT_EQ(offsetIn(outs[1], x), 0);
  EXPECT_EQ(outs[1].strides(), (std::vector<int64_t>{7, 1}));
  EXPECT_EQ(offsetIn(outs[2], x), 0);
  EXPECT_EQ(offsetIn(outs[3], x), 2);
  EXPECT_EQ(outs[3].sizes(), (std::vector<int64_t>{6, 1, 3}));
  EXPECT_EQ(outs[3].strides()[0], 7);
  EXPECT_EQ(outs[3].strides()[2], 1);
  EXPECT_EQ(offsetIn(outs[4], x), -1);
}

// A reshape merging dims that are not contiguous in the input (a transposed input) cannot be a
// view: the kernel writes it, with the right values.
TEST_F(OutputViews, ReshapeAcrossAGapIsWritten) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = input(*f, {-1, -1}, /*contiguous=*/false);
    f->addOutput(ops::reshape(x, {-1}));
  }
  FusionExecutorCache cache(std::move(f), poisonedOptions());
  Tensor t = random({5, 4}, 4).permute(std::vector<int64_t>{1, 0});
  auto [outs, args] = runAndCheck(cache, {t});
  EXPECT_EQ(offsetIn(outs[0], std::get<Tensor>(args[0])), -1);
  // The same fusion on a contiguous input views it.
  auto [outs2, args2] = runAndCheck(cache, {random({4, 5}, 5)});
  EXPECT_EQ(offsetIn(outs2[0], std::get<Tensor>(args2[0])), 0);
}

// A view next to computed outputs: the view is the input's memory, the others are written.
TEST_F(OutputViews, ViewBesideComputedOutputs) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = input(*f, {-1, -1});
    TensorView* y = input(*f, {-1, -1});
    f->addOutput(ops::add(x, y));
    f->addOutput(ops::reshape(x, {-1}));
    f->addOutput(ops::sum(ops::mul(x, y), {1}));
  }
  FusionExecutorCache cache(std::move(f), poisonedOptions());
  auto [outs, args] = runAndCheck(cache, {random({8, 33}, 6), random({8, 33}, 7)});
  EXPECT_EQ(offsetIn(outs[1], std::get<Tensor>(args[0])), 0);
  EXPECT_EQ(offsetIn(outs[0], std::get<Tensor>(args[0])), -1);
}

// The kernel beside views does not compute or write them: the segment launches its kernel
// without the view outputs (executorWithoutViews), and the results are those of the reference.
TEST_F(OutputViews, KernelBesideViewsSkipsThem) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = input(*f, {-1, -1}, /*contiguous=*/false);
    TensorView* y = input(*f, {-1, -1});
    f->addOutput(ops::broadcast(x, {true, false, false}));  // unsqueeze(x, 0)
    f->addOutput(ops::add(x, y));
    f->addOutput(ops::broadcast(x, {false, false, true}));  // unsqueeze(x, 2)
  }
  FusionExecutorCache cache(std::move(f), poisonedOptions());
  // x: columns 0..39 of a [6, 48] tensor (strided rows).
  Tensor wide = random({6, 48}, 9);
  Tensor x = Tensor::fromBlob(wide.data(), {6, 40}, {48, 1}, wide.dtype(), wide.device());
  auto [outs, args] = runAndCheck(cache, {x, random({6, 40}, 10)});
  EXPECT_EQ(offsetIn(outs[0], std::get<Tensor>(args[0])), 0);
  EXPECT_EQ(offsetIn(outs[2], std::get<Tensor>(args[0])), 0);
  EXPECT_EQ(offsetIn(outs[1], std::get<Tensor>(args[0])), -1);
  const FusionKernelRuntime* runtime = cache.lastRuntime();
  ASSERT_EQ(runtime->numSegments(), 1);
  const auto& segment = dynamic_cast<const KernelSegmentExecutor&>(runtime->segmentExecutor(0));
  ASSERT_NE(segment.executorWithoutViews(), nullptr);
  // Kernel parameters: the inputs and outputs (no intermediates here): x, y and x + y alone.
  EXPECT_EQ(segment.executorWithoutViews()->kernel().params.size(), 3u);
  EXPECT_EQ(segment.executor().kernel().params.size(), 5u);
  EXPECT_EQ(segment.executorWithoutViews()->planMisses(), 1);
  EXPECT_EQ(segment.executor().planMisses(), 0) << "the whole kernel ran";
}

// A view of an input that an output is written into in place would show the new values: it is a
// copy holding the old ones.
TEST_F(OutputViews, ViewOfAnInputWrittenInPlaceIsACopy) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = input(*f, {-1, -1});
    f->addOutput(ops::reshape(x, {-1}));
    f->aliasOutputToInput(ops::mul(x, 2.0), x);
  }
  FusionExecutorCache cache(std::move(f), poisonedOptions());
  auto [outs, args] = runAndCheck(cache, {random({3, 5}, 8)});
  EXPECT_EQ(offsetIn(outs[0], std::get<Tensor>(args[0])), -1);
}

// The layout of a view, directly: reshapes that split and merge contiguous runs, across size-1
// dims, and the ones a gap forbids.
TEST(ReshapeStrides, SplitsAndMergesContiguousRuns) {
  using V = std::vector<int64_t>;
  EXPECT_EQ(exec::reshapeStrides(V{2, 3, 4}, V{12, 4, 1}, V{6, 4}), (V{4, 1}));
  EXPECT_EQ(exec::reshapeStrides(V{6, 4}, V{4, 1}, V{2, 3, 2, 2}), (V{12, 4, 2, 1}));
  // A padded row (stride 5 for 4 elements): its dims split, never merge.
  EXPECT_EQ(exec::reshapeStrides(V{3, 4}, V{5, 1}, V{3, 2, 2}), (V{5, 2, 1}));
  EXPECT_EQ(exec::reshapeStrides(V{3, 4}, V{5, 1}, V{12}), std::nullopt);
  // Transposed: the two dims are not one run.
  EXPECT_EQ(exec::reshapeStrides(V{4, 5}, V{1, 4}, V{20}), std::nullopt);
  // Size-1 dims come and go anywhere (their strides do not matter).
  std::optional<V> s = exec::reshapeStrides(V{4, 1, 5}, V{5, 99, 1}, V{1, 20, 1});
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ((*s)[1], 1);
  // Column-major dims split by the inner one.
  EXPECT_EQ(exec::reshapeStrides(V{6}, V{3}, V{2, 3}), (V{9, 3}));
}

}  // namespace
}  // namespace loom::runtime
