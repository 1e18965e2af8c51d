// SPDX-License-Identifier: Apache-2.0
// In-place outputs into inputs that are not dense (issue 36): padded, column-major, transposed
// and sliced inputs take the output through their own strides, on the automatic path (the kernel's
// store, or the copy after it) and on a hand schedule; the bytes between the input's elements
// stay as they were; an input whose elements may share memory is a UserError naming its layout.
// Every case compares the updated input with the reference evaluator on copies of the inputs
// taken before the run, outputs poisoned. Built twice: host backend (emu) and CUDA (gpu).
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "loom/eval/compare.h"
#include "loom/eval/reference_evaluator.h"
#include "loom/exec/kernel_executor.h"
#include "loom/ir/ir.h"
#include "loom/ops/ops.h"
#include "loom/runtime/fusion_executor_cache.h"
#include "loom/transform/inlining.h"
#include "loom/transform/propagation.h"
#include "runtime/runtime_test_backend.h"
#include "user_error_of.h"

namespace loom::runtime {
namespace {

using ir::Fusion;
using ir::FusionGuard;
using ir::TensorView;
using Args = std::vector<eval::Argument>;

TensorView* input(Fusion& f, std::vector<int64_t> shape, DataType dt = DataType::Float32) {
  auto* t = ops::TensorBuilder().shape(std::move(shape)).dtype(dt).build();
  f.addInput(t);
  return t;
}

Tensor random(std::vector<int64_t> sizes, uint64_t seed, DataType dt = DataType::Float32) {
  Tensor t = Tensor::empty(std::move(sizes), dt);
  fillRandom(t, seed);
  return t;
}

// A view of `sizes` with `strides` into a fresh buffer of `span` random elements.
Tensor stridedView(int64_t span, std::vector<int64_t> sizes, std::vector<int64_t> strides,
                   uint64_t seed, DataType dt = DataType::Float32) {
  Tensor buffer = random({span}, seed, dt);
  return Tensor(buffer.storage(), dt, std::move(sizes), std::move(strides));
}

// The whole buffer under `t` (its storage from the start), as a 1-D tensor of `span` elements.
Tensor bufferOf(const Tensor& t, int64_t span) {
  return Tensor(t.storage(), t.dtype(), {span}, {1});
}

Args contiguousCopies(const Args& args) {
  Args out;
  for (const eval::Argument& a : args) {
    const auto* t = std::get_if<Tensor>(&a);
    out.push_back(t == nullptr ? a : eval::Argument(t->contiguous()));
  }
  return out;
}

// The positions of `buffer` (span elements) that no element of `view` addresses.
std::vector<int64_t> gapsOf(const Tensor& view, int64_t span) {
  std::vector<bool> used(size_t(span), false);
  for (int64_t i = 0; i < view.numel(); ++i) {
    int64_t offset = 0;
    int64_t rest = i;
    for (int64_t d = view.dim() - 1; d >= 0; --d) {
      offset += (rest % view.size(d)) * view.stride(d);
      rest /= view.size(d);
    }
    used[size_t(offset)] = true;
  }
  std::vector<int64_t> gaps;
  for (int64_t k = 0; k < span; ++k) {
    if (!used[size_t(k)]) gaps.push_back(k);
  }
  return gaps;
}

class InPlaceStrided : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = loom::test::backendUnavailable(testBackend())) GTEST_SKIP() << *why;
  }

  // Runs `cache` on `args`, whose input `written` (a view into a buffer of `span` elements) takes
  // output `out`: the returned output is that input, it holds the reference's values, and the
  // buffer's other elements are unchanged.
  static void runAndCheck(FusionExecutorCache& cache, const Args& args, size_t written, size_t out,
                          int64_t span, int64_t reduced = 1) {
    const Tensor& target = std::get<Tensor>(args[written]);
    const Tensor before_buffer = bufferOf(target, span).contiguous();
    const std::vector<Tensor> expected =
        eval::evaluateFusion(cache.fusion(), contiguousCopies(args));
    const std::vector<Tensor> outs = cache.run(args);
    ASSERT_EQ(outs.size(), expected.size());
    const std::string program = cache.lastRuntime()->hostProgram();
    EXPECT_EQ(outs[out].data(), target.data()) << "the output is not the input's tensor";
    EXPECT_EQ(outs[out].strides(), target.strides());
    auto msg = eval::expectClose(target, expected[out],
                                 eval::defaultTolerance(expected[out].dtype(), reduced),
                                 "the input after the run");
    EXPECT_FALSE(msg.has_value()) << *msg << "\n" << program;
    const Tensor after_buffer = bufferOf(target, span);
    for (int64_t k : gapsOf(target, span)) {
      EXPECT_EQ(std::memcmp(static_cast<const char*>(after_buffer.data()) + k * 4,
                            static_cast<const char*>(before_buffer.data()) + k * 4, 4),
                0)
          << "element " << k << " of the buffer, between the input's elements, was written";
    }
  }
};

// nvFuser's case: shape (2, 2) with strides (1, 3) in a buffer of 5 (element 2 is nobody's),
// relu written back into the input, which is also returned.
TEST_F(InPlaceStrided, PaddedColumnMajorInputTakesItsOutput) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = input(*f, {-1, -1});
    TensorView* y = ops::where(ops::gt(x, 0.0), x, 0.0);
    f->aliasOutputToInput(y, x);
  }
  FusionExecutorCache cache(std::move(f), poisonedOptions());
  runAndCheck(cache, {stridedView(5, {2, 2}, {1, 3}, 1)}, 0, 0, 5);
  // Again on the cached kernel, and with a larger padded layout of the same form.
  runAndCheck(cache, {stridedView(5, {2, 2}, {1, 3}, 2)}, 0, 0, 5);
  runAndCheck(cache, {stridedView(40 * 9, {33, 9}, {1, 40}, 3)}, 0, 0, 40 * 9);
}

// An optimizer step into a transposed parameter (the pointwise kernel cannot store it where it
// writes a dense output) and into rows sliced from a wider buffer.
TEST_F(InPlaceStrided, PointwiseUpdateIntoTransposedAndSlicedInputs) {
  auto make = [] {
    auto f = std::make_unique<Fusion>();
    FusionGuard g(f.get());
    TensorView* p = input(*f, {-1, -1});
    TensorView* grad = input(*f, {-1, -1});
    f->aliasOutputToInput(ops::sub(p, ops::mul(grad, 0.125)), p);
    return f;
  };
  {
    FusionExecutorCache cache(make(), poisonedOptions());
    runAndCheck(cache, {stridedView(70 * 33, {33, 70}, {1, 33}, 4), random({33, 70}, 5)}, 0, 0,
                70 * 33);
  }
  {
    FusionExecutorCache cache(make(), poisonedOptions());
    runAndCheck(cache, {stridedView(33 * 80, {33, 70}, {80, 1}, 6), random({33, 70}, 7)}, 0, 0,
                33 * 80);
  }
}

// A 3-D input with every dim strided differently (a permuted, padded buffer) and a fusion whose
// reduction reads the input, so the output is computed aside and copied in after the kernels.
TEST_F(InPlaceStrided, CopyAfterAReductionWritesThroughStrides) {
  auto f = std::make_unique<Fusion>();
  {
    FusionGuard g(f.get());
    TensorView* x = input(*f, {-1, -1, -1});
    TensorView* mean = ops::div(ops::sum(x, {2}), 24.0);
    f->aliasOutputToInput(ops::sub(x, ops::broadcast(mean, {false, false, true})), x);
  }
  FusionExecutorCache cache(std::move(f), poisonedOptions());
  // Sizes (4, 5, 24): dim 2 innermost-but-one, dim 0 innermost, rows of 5 padded to 7.
  runAndCheck(cache, {stridedView(4 * 7 * 24 + 3, {4, 5, 24}, {1, 4 * 24 + 2, 4}, 8)}, 0, 0,
              4 * 7 * 24 + 3, 24);
}

// A hand-scheduled kernel computes the output aside; the executor writes it through the input's
// strides after the launch.
TEST_F(InPlaceStrided, HandScheduleWritesThroughStrides) {
  Fusion f;
  {
    FusionGuard g(&f);
    // A kernel compiled by hand reads its input as declared: strided, not contiguous.
    TensorView* x = ops::TensorBuilder().shape({-1, -1}).contiguous(false).build();
    f.addInput(x);
    TensorView* y = ops::exp(ops::mul(x, 0.5));
    f.aliasOutputToInput(y, x);
    y->merge(0);
    y->split(0, 64);
    y->axis(0)->parallelize(ir::ParallelType::BIDx);
    y->axis(1)->parallelize(ir::ParallelType::TIDx);
    transform::propagateTransforms(y);
    transform::parallelizeAllLike(y);
    transform::inlineMost(f);
  }
  exec::KernelExecutor ke;
  exec::ExecutorOptions options;
  options.poisonOutputs = true;
  ke.compile(f, testBackend(), options);
  const int64_t span = 30 * 21;
  Tensor x = stridedView(span, {20, 30}, {1, 21}, 9);
  const Tensor before = bufferOf(x, span).contiguous();
  const std::vector<Tensor> expected = eval::evaluateFusion(f, Args{x.contiguous()});
  std::vector<Tensor> outs = ke.run(Args{x});
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_EQ(outs[0].data(), x.data());
  auto msg = eval::expectClose(x, expected[0], eval::defaultTolerance(DataType::Float32), "x");
  EXPECT_FALSE(msg.has_value()) << *msg;
  const Tensor after = bufferOf(x, span);
  for (int64_t k : gapsOf(x, span)) {
    EXPECT_EQ(after.getDoubleLinear(k), before.getDoubleLinear(k)) << "gap element " << k;
  }
}

// An input whose elements may share memory cannot hold an output: the message names the written
// input and its layout, before anything runs.
TEST_F(InPlaceStrided, OverlappingInputsAreRefused) {
  auto make = [] {
    auto f = std::make_unique<Fusion>();
    FusionGuard g(f.get());
    TensorView* x = input(*f, {-1, -1});
    f->aliasOutputToInput(ops::add(x, 1.0), x);
    return f;
  };
  {
    FusionExecutorCache cache(make(), poisonedOptions());
    Tensor overlapping = stridedView(16, {3, 4}, {2, 1}, 10);  // rows overlap by two elements
    const Tensor before = bufferOf(overlapping, 16).contiguous();
    const std::string msg = test::userErrorOf([&] { cache.run(Args{overlapping}); });
    EXPECT_NE(msg.find("written into input 0 (T0)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("the input (sizes [3, 4], strides [2, 1]) may address one element twice"),
              std::string::npos)
        << msg;
    const Tensor after = bufferOf(overlapping, 16);
    for (int64_t k = 0; k < 16; ++k) {
      EXPECT_EQ(after.getDoubleLinear(k), before.getDoubleLinear(k)) << "element " << k;
    }
  }
  {
    FusionExecutorCache cache(make(), poisonedOptions());
    const std::string msg = test::userErrorOf([&] {
      cache.run(Args{stridedView(4, {3, 4}, {0, 1}, 11)});
    });
    EXPECT_NE(msg.find("the input (sizes [3, 4], strides [0, 1]) has stride 0 on dimension 0 "
                       "(an expanded broadcast)"),
              std::string::npos)
        << msg;
  }
}

}  // namespace
}  // namespace loom::runtime
