// SPDX-License-Identifier: Apache-2.0
// The inner-outer-persistent scheduler's choice, rejection reasons and launch limits (threads,
// registers and shared memory of the H100/H200) on the sweep's shapes; the kernels themselves
// run in loom_inner_outer_persistent_emu_tests.
#include "loom/scheduler/inner_outer_persistent.h"

#include <gtest/gtest.h>

#include "loom/lower/lower.h"
#include "scheduler/scheduler_test_utils.h"

namespace loom::scheduler::testing {
namespace {

// layer_norm backward (weight and bias) or rms_norm backward (weight) over the last dim of
// [rows, width]; -1: symbolic.
BuildFn normBackwardFusion(bool layer, DataType dtype, int64_t rows = -1, int64_t width = -1) {
  return [=](ir::Fusion& f) {
    auto* grad = ops::TensorBuilder().shape({rows, width}).dtype(dtype).build();
    auto* x = ops::TensorBuilder().shape({rows, width}).dtype(dtype).build();
    auto* w = ops::TensorBuilder().shape({width}).dtype(dtype).build();
    f.addInput(grad);
    f.addInput(x);
    ops::NormBackwardResult r;
    if (layer) {
      auto* mean = ops::TensorBuilder().shape({rows, 1}).build();
      auto* rstd = ops::TensorBuilder().shape({rows, 1}).build();
      f.addInput(mean);
      f.addInput(rstd);
      f.addInput(w);
      r = ops::layerNormBackward(grad, x, 1, mean, rstd, w, /*has_bias=*/true);
    } else {
      f.addInput(w);
      r = ops::rmsNormBackward(grad, x, 1, w, 1e-6);
    }
    f.addOutput(r.grad_input);
    f.addOutput(r.grad_weight);
    if (r.grad_bias != nullptr) f.addOutput(r.grad_bias);
  };
}

std::string choice(const BuildFn& build) {
  auto f = makeFusion(build);
  SchedulerRuntimeInfo info(*f, eval::ExpressionEvaluator{});
  return explainSchedulerChoice(*f, info);
}

// The backward goes to this scheduler (the only one that takes two reduction directions); the
// inner-persistent scheduler says why not.
TEST(InnerOuterPersistentScheduler, ChosenForNormBackward) {
  for (bool layer : {true, false}) {
    std::string why = choice(normBackwardFusion(layer, DataType::BFloat16, 512, 1024));
    EXPECT_HAS(why, "  inner_outer_persistent: chosen\n");
    EXPECT_HAS(why, "  inner_persistent: compile-time: reductions ");
    EXPECT_HAS(why, " reduce different dims");
  }
}

// Rejections name the reason: an outer reduction's result read back into the rows (batch-norm
// style: the outer-persistent case), a reduction over a middle dim, a Welford, a row too wide for
// registers and shared memory, a symbolic row too wide for registers.
TEST(InnerOuterPersistentScheduler, RejectionReasons) {
  std::string reused = choice([](ir::Fusion& f) {
    auto* x = ops::TensorBuilder().shape({64, 128}).build();
    f.addInput(x);
    auto* col = ops::sum(x, {0}, /*keepdim=*/true);
    auto* row = ops::sum(ops::sub(x, col), {1}, /*keepdim=*/true);
    f.addOutput(ops::mul(x, row));
  });
  EXPECT_HAS(reused, "  inner_outer_persistent: compile-time: the result of an outer reduction");
  std::string middle = choice([](ir::Fusion& f) {
    auto* x = ops::TensorBuilder().shape({4, 8, 16}).build();
    f.addInput(x);
    f.addOutput(ops::sum(x, {1}));
  });
  EXPECT_HAS(middle, "  inner_outer_persistent: compile-time: reduction ");
  EXPECT_HAS(middle, " reduces neither the innermost dims nor the leading dims");
  std::string welford = choice([](ir::Fusion& f) {
    auto* x = ops::TensorBuilder().shape({64, 128}).build();
    f.addInput(x);
    auto vm = ops::varMean(x, {1});
    f.addOutput(vm.var);
    f.addOutput(ops::sum(x, {0}));
  });
  EXPECT_HAS(welford, "  inner_outer_persistent: compile-time: reduction ");
  EXPECT_HAS(welford, "is not a ReductionOp (a Welford)");
  std::string wide = choice(normBackwardFusion(true, DataType::Float32, 1024, 65536));
  EXPECT_HAS(wide,
             "  inner_outer_persistent: run-time: rows of 65536 elements need 20 bytes a "
             "row element (held rows 8, weights 4, outer partials 8): neither registers");
  std::string symbolic = [] {
    auto f = makeFusion(normBackwardFusion(false, DataType::Float32));
    eval::ExpressionEvaluator ee;
    for (ir::Val* in : f->inputs()) {
      auto* tv = in->as<ir::TensorView>();
      for (size_t d = 0; d < tv->logical().size(); ++d) {
        ee.bind(tv->logical()[d]->extent(), tv->logical().size() == 1 || d == 1 ? 16384 : 4096);
      }
    }
    SchedulerRuntimeInfo info(*f, ee);
    return explainSchedulerChoice(*f, info);
  }();
  EXPECT_HAS(symbolic, "rows of a symbolic width cannot be held in shared memory");
}

// The sweep's shapes (R x H = 2^26, widths 256..65536 and the model widths), fp32 and bf16, on
// the H200 and the H100: what fits one kernel stays within the device's threads, registers,
// shared memory and grid, lowers, and covers every row; the rest is rejected (the segmenter's
// split computes it: TooWideRowIsSplitAndRight in the emu tests).
TEST(InnerOuterPersistentScheduler, LaunchLimitsOnTheSweepShapes) {
  DeviceInfo h100;
  h100.l2_bytes = 50 * 1024 * 1024;
  const std::vector<int64_t> widths = {256,  512,  768,  1024,  1536,  2048,  3072,
                                       4096, 5120, 8192, 12288, 16384, 32768, 65536};
  for (const DeviceInfo& dev : {DeviceInfo::h200(), h100}) {
    for (bool layer : {true, false}) {
      for (DataType dtype : {DataType::Float32, DataType::BFloat16}) {
        for (int64_t width : widths) {
          const int64_t rows = (int64_t(1) << 26) / width;
          SCOPED_TRACE(std::string(layer ? "layer_norm" : "rms_norm") + " " +
                       std::string(dataTypeName(dtype)) + " [" + std::to_string(rows) + ", " +
                       std::to_string(width) + "] l2 " + std::to_string(dev.l2_bytes));
          auto f = makeFusion(normBackwardFusion(layer, dtype, rows, width));
          SchedulerRuntimeInfo info(*f, eval::ExpressionEvaluator{}, dev);
          std::string why;
          const bool fits = innerOuterPersistentRunTimeCheck(*f, info, &why);
          // Rows up to 16384 fit (registers, then shared memory); 32768 only for bf16 rms_norm
          // (one outer reduction: 4 bytes of partials a row element, against layer_norm's 8),
          // 65536 never.
          const bool expected =
              width <= 16384 || (width == 32768 && dtype == DataType::BFloat16 && !layer);
          EXPECT_EQ(fits, expected) << why;
          if (!fits) {
            EXPECT_HAS(why, "the segmenter splits the fusion");
            continue;
          }
          auto p = innerOuterPersistentHeuristics(*f, info);
          EXPECT_LE(p->threads_per_row, dev.max_threads_per_block) << p->toString();
          EXPECT_LE(p->registers_per_thread, dev.max_registers_per_thread) << p->toString();
          EXPECT_LE(p->registers_per_thread * ((p->threads_per_row + 31) / 32 * 32),
                    dev.registers_per_sm)
              << p->toString();
          EXPECT_GE(p->blocks * p->rows_per_block, rows) << p->toString();
          EXPECT_LT((p->blocks - 1) * p->rows_per_block, rows) << p->toString();
          EXPECT_LE(p->blocks, dev.max_grid_x) << p->toString();
          // At most the blocks the SMs hold at once: every block walks several rows.
          EXPECT_LE(p->blocks, dev.sm_count * dev.max_threads_per_sm / 32) << p->toString();
          EXPECT_GT(p->rows_per_block, 1) << p->toString();
          EXPECT_EQ(p->vectorize * int64_t(dataTypeSize(dtype)), 16) << p->toString();
          // Rows up to 8192 in registers, from 16384 in shared memory.
          if (width <= 8192) {
            EXPECT_FALSE(p->shared_memory) << p->toString();
          } else if (width >= 16384) {
            EXPECT_TRUE(p->shared_memory) << p->toString();
          }
          scheduleInnerOuterPersistent(*f, *p);
          auto kernel = lower::lowerFusion(*f);
          EXPECT_LE(kernel->sharedTensorBytes, dev.shared_memory_per_block) << p->toString();
          if (!p->shared_memory) {
            EXPECT_EQ(kernel->sharedTensorBytes, 0) << p->toString();
          }
        }
      }
    }
  }
}

// Params print, compare and tune by name.
TEST(InnerOuterPersistentScheduler, Params) {
  InnerOuterPersistentParams a;
  a.vectorize = 8;
  a.persistent_batch = 2;
  a.rows_per_block = 64;
  a.blocks = 512;
  InnerOuterPersistentParams b = a;
  b.blocks = 7;  // informational: not part of the schedule
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.hash(), b.hash());
  b.rows_per_block = 32;
  EXPECT_NE(a, b);
  EXPECT_HAS(a.toString(),
             "InnerOuterPersistent: vectorize=8 persistent_batch=2 rows_per_block=64");
  EXPECT_TRUE(b.setField("rows_per_block", 64));
  EXPECT_EQ(a, b);
}

}  // namespace
}  // namespace loom::scheduler::testing
