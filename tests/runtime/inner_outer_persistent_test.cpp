// SPDX-License-Identifier: Apache-2.0
// The inner-outer-persistent scheduler (issue 37) end to end: layer_norm and rms_norm backward
// (ops::layerNormBackward / rmsNormBackward, with and without weight and bias) in fp32 and bf16
// over odd and even widths, through FusionExecutorCache with outputs poisoned, against the
// reference evaluator; the registry's choice (one inner_outer_persistent kernel) asserted, and a
// row too wide for the chip rejected by the heuristic and still computed right by the segmenter's
// split. Built twice: host backend (emu) and CUDA (gpu).
#include "loom/scheduler/inner_outer_persistent.h"

#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "loom/eval/compare.h"
#include "loom/eval/reference_evaluator.h"
#include "loom/ir/ir.h"
#include "loom/ops/ops.h"
#include "loom/runtime/fusion_executor_cache.h"
#include "runtime/runtime_test_backend.h"
#include "runtime/runtime_test_util.h"
#ifdef LOOM_RUNTIME_TEST_CUDA
#include "loom/backend/cuda/memory.h"
#endif

namespace loom::runtime {
namespace {

using ir::Fusion;
using ir::FusionGuard;

enum class Family { LayerNorm, RmsNorm };

struct Variant {
  Family family;
  bool weight;
  bool bias;  // layer_norm only
  bool hasOuterReduction() const { return weight || bias; }
  std::string name() const {
    std::string n = family == Family::LayerNorm ? "layer_norm" : "rms_norm";
    return n + (weight ? "_weight" : "") + (bias ? "_bias" : "");
  }
};

// The backward of the family over the last dim of [rows, width]: inputs grad, x, (mean, rstd:
// [rows, 1] f32, layer_norm), (weight [width]); outputs grad_input, (grad_weight), (grad_bias).
// -1: symbolic sizes.
std::unique_ptr<Fusion> backwardFusion(Variant v, DataType dtype, int64_t rows = -1,
                                       int64_t width = -1) {
  auto f = std::make_unique<Fusion>();
  FusionGuard guard(f.get());
  auto* grad = ops::TensorBuilder().shape({rows, width}).dtype(dtype).build();
  auto* x = ops::TensorBuilder().shape({rows, width}).dtype(dtype).build();
  f->addInput(grad);
  f->addInput(x);
  ir::TensorView* mean = nullptr;
  ir::TensorView* rstd = nullptr;
  if (v.family == Family::LayerNorm) {
    mean = ops::TensorBuilder().shape({rows, 1}).dtype(DataType::Float32).build();
    rstd = ops::TensorBuilder().shape({rows, 1}).dtype(DataType::Float32).build();
    f->addInput(mean);
    f->addInput(rstd);
  }
  ir::TensorView* w = nullptr;
  if (v.weight) {
    w = ops::TensorBuilder().shape({width}).dtype(dtype).build();
    f->addInput(w);
  }
  ops::NormBackwardResult r = v.family == Family::LayerNorm
                                  ? ops::layerNormBackward(grad, x, 1, mean, rstd, w, v.bias)
                                  : ops::rmsNormBackward(grad, x, 1, w, 1e-6);
  f->addOutput(r.grad_input);
  if (r.grad_weight != nullptr) f->addOutput(r.grad_weight);
  if (r.grad_bias != nullptr) f->addOutput(r.grad_bias);
  return f;
}

std::vector<eval::Argument> backwardArgs(Variant v, DataType dtype, int64_t rows, int64_t width) {
  std::vector<eval::Argument> args{test::randomTensor({rows, width}, dtype, 31),
                                   test::randomTensor({rows, width}, dtype, 32)};
  if (v.family == Family::LayerNorm) {
    args.push_back(test::randomTensor({rows, 1}, DataType::Float32, 33));
    Tensor rstd = test::randomTensor({rows, 1}, DataType::Float32, 34);
    for (int64_t i = 0; i < rows; ++i)
      rstd.setDoubleLinear(i, 0.5 + std::abs(rstd.getDoubleLinear(i)));
    args.push_back(rstd);
  }
  if (v.weight) args.push_back(test::randomTensor({width}, dtype, 35));
  return args;
}

Tensor onHost(const Tensor& t) {
#ifdef LOOM_RUNTIME_TEST_CUDA
  return t.device().isCuda() ? cuda::toHost(t).contiguous() : t.contiguous();
#else
  return t.contiguous();
#endif
}

struct Outcome {
  std::string mismatch;                              ///< "" when every output matches the reference
  std::vector<scheduler::SchedulerType> schedulers;  ///< one per kernel segment
  const scheduler::InnerOuterPersistentParams* params = nullptr;  ///< of a single segment
  scheduler::InnerOuterPersistentParams params_copy;
};

Outcome runAndCompare(Variant v, DataType dtype, int64_t rows, int64_t width, bool constant,
                      std::vector<std::pair<std::string, int64_t>> overrides = {}) {
  RuntimeOptions options = poisonedOptions();
  options.paramOverrides = std::move(overrides);
  FusionExecutorCache cache(
      constant ? backwardFusion(v, dtype, rows, width) : backwardFusion(v, dtype), options);
  std::vector<eval::Argument> args = backwardArgs(v, dtype, rows, width);
  std::vector<Tensor> got = cache.run(args);
  std::vector<Tensor> expected = eval::evaluateFusion(cache.fusion(), args);
  Outcome o;
  const FusionKernelRuntime* rt = cache.lastRuntime();
  for (const auto& seg : rt->segmented().segments()) {
    if (const segmenter::KernelWork* k = seg.kernel()) o.schedulers.push_back(k->params->type());
  }
  if (rt->segmented().segments().size() == 1 && rt->segmented().segments().front().kernel()) {
    auto* p = dynamic_cast<const scheduler::InnerOuterPersistentParams*>(
        rt->segmented().segments().front().kernel()->params.get());
    if (p != nullptr) {
      o.params_copy = *p;
      o.params = &o.params_copy;
    }
  }
  for (size_t i = 0; i < got.size(); ++i) {
    // grad input reduces over the width, grad weight and bias over the rows.
    auto tol = eval::defaultTolerance(expected[i].dtype(), std::max(rows, width));
    if (auto msg =
            eval::expectClose(onHost(got[i]), expected[i], tol, "output " + std::to_string(i))) {
      o.mismatch = *msg + (o.params != nullptr ? "\n" + o.params->toString() : std::string());
      break;
    }
  }
  return o;
}

class InnerOuterPersistent : public ::testing::TestWithParam<std::tuple<Variant, DataType>> {
 protected:
  void SetUp() override {
    if (auto why = loom::test::backendUnavailable(testBackend())) GTEST_SKIP() << *why;
  }
  Variant variant() const { return std::get<0>(GetParam()); }
  DataType dtype() const { return std::get<1>(GetParam()); }
};

// Even and odd widths (vector and scalar rows), rows that do not divide the blocks' row groups
// and rows fewer than the blocks: one inner_outer_persistent kernel, every output right.
TEST_P(InnerOuterPersistent, OneKernelMatchesTheReference) {
  struct Shape {
    int64_t rows, width;
  };
  for (Shape s : {Shape{300, 256}, Shape{129, 768}, Shape{7, 1000}, Shape{37, 129}, Shape{1, 33},
                  Shape{2050, 64}}) {
    for (bool constant : {false, true}) {
      // Constant sizes (the vector copies unpredicated) on two shapes; a constant single row
      // would be a broadcast dim, with no per-column sum left to fuse.
      if (constant && s.width != 768 && s.width != 129) continue;
      SCOPED_TRACE(variant().name() + " " + std::string(dataTypeName(dtype())) + " [" +
                   std::to_string(s.rows) + ", " + std::to_string(s.width) + "]" +
                   (constant ? " constant sizes" : " symbolic sizes"));
      Outcome o = runAndCompare(variant(), dtype(), s.rows, s.width, constant);
      EXPECT_EQ(o.mismatch, "");
      if (!variant().hasOuterReduction()) {
        // rms_norm without a weight has no per-column gradient: the inner-persistent case.
        EXPECT_EQ(o.schedulers,
                  std::vector<scheduler::SchedulerType>{scheduler::SchedulerType::InnerPersistent});
        continue;
      }
      ASSERT_NE(o.params, nullptr)
          << "not one inner_outer_persistent kernel: " << o.schedulers.size() << " kernels";
      EXPECT_EQ(o.params->row_size, s.width);
      EXPECT_EQ(o.params->rows, s.rows);
    }
  }
}

// Blocks that walk several rows (the device's blocks are fewer than the rows): each thread's
// column partials accumulate over its block's rows before the grid reduction, including a last
// block with fewer rows than the others, a batch of several vectors a thread, and the held rows
// in shared memory (the plan for rows too wide for registers).
TEST_P(InnerOuterPersistent, BlocksWalkSeveralRows) {
  if (!variant().hasOuterReduction()) GTEST_SKIP() << "no outer reduction: not this scheduler's";
  struct Tuned {
    int64_t rows, width, rows_per_block, batch;
    bool shared = false;
  };
  for (Tuned t : {Tuned{300, 256, 7, 1}, Tuned{129, 768, 16, 2}, Tuned{37, 129, 5, 3},
                  Tuned{64, 1000, 64, 2}, Tuned{50, 520, 9, 2, true}}) {
    SCOPED_TRACE(variant().name() + " " + std::string(dataTypeName(dtype())) + " [" +
                 std::to_string(t.rows) + ", " + std::to_string(t.width) + "] rows_per_block " +
                 std::to_string(t.rows_per_block) + " batch " + std::to_string(t.batch) +
                 (t.shared ? " shared" : ""));
    // Shared buffers need constant sizes (the lowering sizes them from constants).
    Outcome o = runAndCompare(variant(), dtype(), t.rows, t.width, /*constant=*/t.shared,
                              {{"rows_per_block", t.rows_per_block},
                               {"persistent_batch", t.batch},
                               {"shared_memory", t.shared ? 1 : 0}});
    EXPECT_EQ(o.mismatch, "");
    ASSERT_NE(o.params, nullptr) << "not one inner_outer_persistent kernel";
    EXPECT_EQ(o.params->rows_per_block, t.rows_per_block);
    EXPECT_EQ(o.params->persistent_batch, t.batch);
    EXPECT_EQ(o.params->shared_memory, t.shared);
  }
}

// A row no register or shared-memory plan holds (65536 fp32 or bf16 elements, grad and x held:
// 256 or 128 KiB of rows a block besides the partials) is rejected with the reason, and the
// segmenter's kernels still compute the right values.
TEST_P(InnerOuterPersistent, TooWideRowIsSplitAndRight) {
  if (!variant().hasOuterReduction()) GTEST_SKIP() << "no outer reduction: not this scheduler's";
  const int64_t rows = 3, width = 262144;
  Outcome o = runAndCompare(variant(), dtype(), rows, width, /*constant=*/false);
  EXPECT_EQ(o.mismatch, "");
  EXPECT_GT(o.schedulers.size(), 1u);
  for (scheduler::SchedulerType t : o.schedulers) {
    EXPECT_NE(t, scheduler::SchedulerType::InnerOuterPersistent);
  }
}

// Rows and columns of several dims: layer_norm over the last dim of [batch, seq, hidden] (grad
// weight sums over batch and seq) and rms_norm over the last two dims of [batch, heads, dim]
// (grad weight [heads, dim]), fp32 and bf16: the dims merge into one row loop and one column
// loop, one kernel.
TEST(InnerOuterPersistentDims, BatchAndRowDimsMerge) {
  if (auto why = loom::test::backendUnavailable(testBackend())) GTEST_SKIP() << *why;
  for (DataType dtype : {DataType::Float32, DataType::BFloat16}) {
    for (bool layer : {true, false}) {
      SCOPED_TRACE(
          std::string(layer ? "layer_norm [3, 37, 96], 1 dim" : "rms_norm [5, 6, 40], 2 dims") +
          " " + std::string(dataTypeName(dtype)));
      const std::vector<int64_t> shape =
          layer ? std::vector<int64_t>{3, 37, 96} : std::vector<int64_t>{5, 6, 40};
      const int64_t n = layer ? 1 : 2;
      auto f = std::make_unique<Fusion>();
      {
        FusionGuard guard(f.get());
        auto* grad = ops::TensorBuilder().rank(3).dtype(dtype).build();
        auto* x = ops::TensorBuilder().rank(3).dtype(dtype).build();
        auto* w = ops::TensorBuilder().rank(n).dtype(dtype).build();
        f->addInput(grad);
        f->addInput(x);
        ops::NormBackwardResult r;
        if (layer) {
          auto* mean = ops::TensorBuilder().shape({-1, -1, 1}).build();
          auto* rstd = ops::TensorBuilder().shape({-1, -1, 1}).build();
          f->addInput(mean);
          f->addInput(rstd);
          f->addInput(w);
          r = ops::layerNormBackward(grad, x, n, mean, rstd, w, /*has_bias=*/true);
        } else {
          f->addInput(w);
          r = ops::rmsNormBackward(grad, x, n, w, 1e-6);
        }
        f->addOutput(r.grad_input);
        f->addOutput(r.grad_weight);
        if (r.grad_bias != nullptr) f->addOutput(r.grad_bias);
      }
      std::vector<eval::Argument> args{test::randomTensor(shape, dtype, 41),
                                       test::randomTensor(shape, dtype, 42)};
      if (layer) {
        args.push_back(test::randomTensor({shape[0], shape[1], 1}, DataType::Float32, 43));
        Tensor rstd = test::randomTensor({shape[0], shape[1], 1}, DataType::Float32, 44);
        for (int64_t i = 0; i < rstd.numel(); ++i) {
          rstd.setDoubleLinear(i, 0.5 + std::abs(rstd.getDoubleLinear(i)));
        }
        args.push_back(rstd);
      }
      args.push_back(
          test::randomTensor(std::vector<int64_t>(shape.end() - n, shape.end()), dtype, 45));
      FusionExecutorCache cache(std::move(f), poisonedOptions());
      std::vector<Tensor> got = cache.run(args);
      std::vector<Tensor> expected = eval::evaluateFusion(cache.fusion(), args);
      const auto& segments = cache.lastRuntime()->segmented().segments();
      ASSERT_EQ(segments.size(), 1u);
      ASSERT_NE(segments.front().kernel(), nullptr);
      EXPECT_EQ(segments.front().kernel()->params->type(),
                scheduler::SchedulerType::InnerOuterPersistent);
      for (size_t i = 0; i < got.size(); ++i) {
        auto tol = eval::defaultTolerance(expected[i].dtype(), shape[0] * shape[1] * shape[2]);
        EXPECT_EQ(
            eval::expectClose(onHost(got[i]), expected[i], tol, "output " + std::to_string(i)),
            std::nullopt);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Backward, InnerOuterPersistent,
    ::testing::Combine(::testing::Values(Variant{Family::LayerNorm, true, true},
                                         Variant{Family::LayerNorm, true, false},
                                         Variant{Family::LayerNorm, false, true},
                                         Variant{Family::RmsNorm, true, false},
                                         Variant{Family::RmsNorm, false, false}),
                       ::testing::Values(DataType::Float32, DataType::BFloat16)),
    [](const ::testing::TestParamInfo<std::tuple<Variant, DataType>>& info) {
      return std::get<0>(info.param).name() + "_" +
             std::string(dataTypeName(std::get<1>(info.param)));
    });

}  // namespace
}  // namespace loom::runtime
