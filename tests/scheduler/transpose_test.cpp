// SPDX-License-Identifier: Apache-2.0
// The transpose scheduler's choice, rejection reasons, parameters and launch limits (threads and
// shared memory per block of the H100/H200) on the shapes, plus LOOM_DUMP=scheduler_choice.
#include "loom/scheduler/transpose.h"

#include <gtest/gtest.h>

#include <sstream>

#include "loom/lower/lower.h"
#include "loom/support/dump_sink.h"
#include "loom/support/options.h"
#include "scheduler/scheduler_test_utils.h"

namespace loom::scheduler::testing {
namespace {

// out = permute(x[I, J] * 2, {1, 0}) of `dtype`.
BuildFn transposeFusion(DataType dtype = DataType::Float32) {
  return [dtype](ir::Fusion& f) {
    auto* x = ops::TensorBuilder().shape({-1, -1}).dtype(dtype).build();
    f.addInput(x);
    f.addOutput(ops::transpose(ops::mul(x, 2.0), 0, 1));
  };
}

// A transpose goes to the transpose scheduler (last in the list); the pointwise scheduler, tried
// first, says why not.
TEST(TransposeScheduler, ChosenForTransposes) {
  auto p = propose(transposeFusion(), {randomTensor({64, 96}, 1)});
  ASSERT_NE(p.scheduler, nullptr);
  EXPECT_EQ(p.scheduler->type(), SchedulerType::Transpose);
  EXPECT_EQ(p.scheduler->name(), "transpose");
  ASSERT_FALSE(p.rejections.empty());
  EXPECT_EQ(p.rejections.front().first, SchedulerType::Pointwise);
  EXPECT_HAS(p.rejectionSummary(),
             "pointwise: run-time: a transpose: the transpose scheduler tiles it");
}

// Rejections name the reason: no transpose, a narrow transposed dim (pointwise takes it), a
// reduction, an op reading other positions.
TEST(TransposeScheduler, RejectionReasons) {
  auto why = [](const BuildFn& build, const std::vector<eval::Argument>& args) {
    auto f = makeFusion(build);
    SchedulerRuntimeInfo info(*f, args);
    return explainSchedulerChoice(*f, info);
  };
  std::string add = why(addFusion(), {randomTensor({64, 64}, 1), randomTensor({64, 64}, 2)});
  EXPECT_HAS(add, "  pointwise: chosen\n");
  EXPECT_HAS(add,
             "  transpose: compile-time: no input or output has another innermost dim than "
             "the largest output");
  std::string narrow = why(transposeFusion(), {randomTensor({8, 1000}, 1)});
  EXPECT_HAS(narrow, "  pointwise: chosen\n");
  EXPECT_HAS(narrow,
             "  transpose: run-time: the transposed dims have 1000 and 8 elements; a "
             "tile needs at least 32 of each");
  // Channels last with a 3 x 5 image: even H and W merged (15) are narrower than a tile.
  std::string small_image = why(
      [](ir::Fusion& f) {
        auto* x = ops::TensorBuilder().shape({-1, -1, -1, -1}).build();
        f.addInput(x);
        f.addOutput(ops::permute(x, {0, 2, 3, 1}));
      },
      {randomTensor({2, 64, 3, 5}, 1)});
  EXPECT_HAS(small_image, "  pointwise: chosen\n");
  EXPECT_HAS(small_image, "  transpose: run-time: the transposed dims have 15 and 64 elements");
  std::string reduced = why(
      [](ir::Fusion& f) {
        auto* x = ops::TensorBuilder().shape({-1, -1, -1}).build();
        f.addInput(x);
        f.addOutput(ops::sum(ops::permute(x, {0, 2, 1}), {0}));
      },
      {randomTensor({4, 64, 64}, 1)});
  EXPECT_HAS(reduced, "  reduction: chosen\n");
  EXPECT_HAS(reduced, "  transpose: compile-time: the fusion has a reduction");
  std::string padded = why(
      [](ir::Fusion& f) {
        auto* x = ops::TensorBuilder().shape({-1, -1}).build();
        f.addInput(x);
        f.addOutput(ops::transpose(ops::pad(x, {1, 1}), 0, 1));
      },
      {randomTensor({64, 64}, 1)});
  EXPECT_HAS(padded,
             "  transpose: compile-time: the tile holds pointwise, broadcast, expand and "
             "permute ops only");
  EXPECT_HAS(padded, "  pointwise: chosen\n");
}

// LOOM_DUMP=scheduler_choice prints every scheduler's answer where scheduleFusion schedules.
TEST(TransposeScheduler, SchedulerChoiceDump) {
  ScopedOptions dump(DumpOptions::parse("scheduler_choice"), DebugOptions{}, {});
  std::ostringstream log;
  ScopedDumpSink into(log);
  scheduleAndCheck(transposeFusion(), {randomTensor({64, 64}, 1)});
  EXPECT_HAS(log.str(), "scheduler_choice:\n");
  EXPECT_HAS(log.str(), "  transpose: chosen\n");
  EXPECT_HAS(log.str(), "  pointwise: run-time: a transpose");
  EXPECT_HAS(log.str(), "  reduction: compile-time:");
  EXPECT_HAS(log.str(), "  sort: compile-time:");
}

// The shapes ([64, 64] to [16384, 16384], [8192, 8192], model widths, a batch), fp32 and
// bf16, on the H200 defaults and an H100: threads per block and grid within the limits, and the
// lowered kernel's shared tiles within the 48 KiB a block gets without opting in.
TEST(TransposeScheduler, LaunchLimits) {
  DeviceInfo h100;
  h100.sm_count = 132;
  h100.l2_bytes = 50 * 1024 * 1024;
  struct Shape {
    int64_t batch, rows, cols;
  };
  for (const DeviceInfo& dev : {DeviceInfo::h200(), h100}) {
    for (DataType dtype : {DataType::Float32, DataType::BFloat16}) {
      for (auto [batch, rows, cols] : std::vector<Shape>{{1, 64, 64},
                                                         {1, 8192, 8192},
                                                         {1, 16384, 16384},
                                                         {1, 4096, 768},
                                                         {1, 8192, 12288},
                                                         {1, 50257, 768},
                                                         {32, 2048, 128}}) {
        SCOPED_TRACE(std::to_string(batch) + "x" + std::to_string(rows) + "x" +
                     std::to_string(cols));
        auto f = makeFusion([dtype](ir::Fusion& fu) {
          auto* x = ops::TensorBuilder().shape({-1, -1, -1}).dtype(dtype).build();
          fu.addInput(x);
          fu.addOutput(ops::cast(ops::permute(ops::relu(x), {0, 2, 1}), dtype));
        });
        eval::ExpressionEvaluator ee;
        auto* x = f->inputs()[0]->as<ir::TensorView>();
        ee.bind(x->logical()[0]->extent(), batch);
        ee.bind(x->logical()[1]->extent(), rows);
        ee.bind(x->logical()[2]->extent(), cols);
        SchedulerRuntimeInfo info(*f, ee, dev);
        SchedulerProposal p = proposeScheduler(*f, info);
        ASSERT_NE(p.scheduler, nullptr);
        ASSERT_EQ(p.scheduler->type(), SchedulerType::Transpose) << p.rejectionSummary();
        auto params = transposeHeuristics(*f, info);
        // Tile rows of at most 32 banks (the bank-conflict rule); 16-bit tiles of 64 where the
        // dims fill them.
        EXPECT_LE(params->tile * int64_t(dataTypeSize(dtype)), 128) << params->toString();
        if (dtype == DataType::BFloat16 && std::min(rows, cols) >= 64) {
          EXPECT_EQ(params->tile, 64) << params->toString();
        }
        const int64_t threads = params->bdimx() * params->bdimy;
        EXPECT_LE(threads, dev.max_threads_per_block) << params->toString();
        EXPECT_GE(threads, 128) << params->toString();
        const int64_t grid =
            batch * utils::ceilDiv(rows, params->tile) * utils::ceilDiv(cols, params->tile);
        EXPECT_LE(grid, dev.max_grid_x);
        // 16-byte vectors where both rows start on a 16-byte boundary (50257 columns do not).
        if (rows % 16 == 0 && cols % 16 == 0) {
          EXPECT_EQ(params->vectorize * int64_t(dataTypeSize(dtype)), 16) << params->toString();
        } else {
          EXPECT_EQ(params->vectorize, 1) << params->toString();
        }
        scheduleTranspose(*f, *params);
        auto kernel = lower::lowerFusion(*f);
        EXPECT_GT(kernel->sharedTensorBytes, 0);
        EXPECT_LE(kernel->sharedTensorBytes, 48 * 1024);
        EXPECT_LE(kernel->sharedTensorBytes, dev.shared_memory_per_block);
      }
    }
  }
}

// Params print, compare and tune by name; a combination the schedule cannot make is a UserError.
TEST(TransposeScheduler, Params) {
  TransposeParams a;
  a.tile = 64;
  a.vectorize = 4;
  a.bdimy = 16;
  EXPECT_EQ(a.toString(),
            "Transpose: tile=64 vectorize=4 bdimy=16 inner_dims=1 outer_dims=1\n  inner_extent=0 "
            "outer_extent=0\n");
  TransposeParams b = a;
  b.inner_extent = 7;  // info only
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.hash(), b.hash());
  EXPECT_TRUE(b.setField("tile", 32));
  EXPECT_NE(a, b);
  EXPECT_FALSE(b.setField("inner_extent", 3));
  TransposeParams merged = a;
  EXPECT_TRUE(merged.setField("outer_dims", 2));
  EXPECT_NE(a, merged);
  b.tile = 48;
  auto f = makeFusion(transposeFusion());
  EXPECT_HAS(userErrorOf([&] { scheduleTranspose(*f, b); }), "need powers of two");
  // A 2-D transpose has one dim on each side to tile.
  auto g = makeFusion(transposeFusion());
  EXPECT_HAS(userErrorOf([&] { scheduleTranspose(*g, merged); }),
             "tile more dims than the fusion has on a side (1 on the reference's, 1 on the "
             "tile's)");
}

}  // namespace
}  // namespace loom::scheduler::testing
