// SPDX-License-Identifier: Apache-2.0
// Transpose-scheduled fusions run on the host backend (emu) and the GPU (its gpu twin): every
// shape class of the transpose scheduler against the reference evaluator, outputs poisoned, fp32
// and bf16, with the registry's choice asserted.
#include <gtest/gtest.h>

#include "backend_available.h"
#include "loom/exec/kernel_executor.h"
#include "loom/scheduler/transpose.h"
#include "scheduler/scheduler_test_utils.h"

namespace loom::scheduler::testing {
namespace {

// Schedules build's fusion for `args` through the registry, expects the transpose scheduler,
// runs the kernel on the suite's backend with poisoned outputs and compares with the reference
// evaluator on the unscheduled fusion. Returns the params (null on failure).
std::unique_ptr<TransposeParams> runTransposed(const BuildFn& build,
                                               const std::vector<eval::Argument>& args) {
  Scheduled s = scheduleAndCheck(build, args);
  auto* p = dynamic_cast<TransposeParams*>(s.params.get());
  EXPECT_NE(p, nullptr) << "chosen: " << s.params->toString();
  if (p == nullptr) return nullptr;
  exec::KernelExecutor ke;
  std::vector<Tensor> actual;
  try {
    ke.compile(*s.fusion, test::suiteBackend(), exec::ExecutorOptions{.poisonOutputs = true});
    actual = ke.run(args);
  } catch (const std::exception& e) {
    ADD_FAILURE() << e.what() << "\n" << p->toString() << s.fusion->toString();
    return nullptr;
  }
  std::vector<Tensor> expected = eval::evaluateFusion(*s.original, args);
  EXPECT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size() && i < expected.size(); ++i) {
    auto mismatch =
        eval::expectClose(actual[i], expected[i], eval::defaultTolerance(expected[i].dtype(), 1),
                          "output " + std::to_string(i));
    EXPECT_FALSE(mismatch.has_value()) << *mismatch << "\n" << p->toString();
  }
  s.params.release();
  return std::unique_ptr<TransposeParams>(p);
}

// out = permute(x[I, J] * 2 + 1, {1, 0}), of `dtype`.
BuildFn transposePointwise(DataType dtype) {
  return [dtype](ir::Fusion& f) {
    auto* x = ops::TensorBuilder().shape({-1, -1}).dtype(dtype).build();
    f.addInput(x);
    auto* y = ops::add(ops::mul(ops::cast(x, DataType::Float32), 2.0), 1.0);
    f.addOutput(ops::cast(ops::transpose(y, 0, 1), dtype));
  };
}

// Square, odd, non-divisible and very flat shapes (up to 16384 rows or columns), fp32 and bf16:
// the width follows the rule.
TEST(TransposeExec, ShapesAndDtypes) {
  struct Case {
    int64_t rows, cols;
    DataType dtype;
    int64_t vectorize;
  };
  for (auto [rows, cols, dtype, v] : std::vector<Case>{{64, 64, DataType::Float32, 4},
                                                       {64, 64, DataType::BFloat16, 8},
                                                       {256, 320, DataType::Float32, 4},
                                                       {97, 131, DataType::Float32, 1},
                                                       {130, 66, DataType::BFloat16, 2},
                                                       {33, 4099, DataType::Float32, 1},
                                                       {4096, 40, DataType::BFloat16, 8},
                                                       {16384, 64, DataType::Float32, 4},
                                                       {64, 16383, DataType::BFloat16, 1}}) {
    SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols) + " " +
                 std::string(dataTypeName(dtype)));
    auto p = runTransposed(transposePointwise(dtype), {randomTensor({rows, cols}, 1, dtype)});
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->vectorize, v);
  }
}

// Tuned parameters (`--params`): other tiles, widths and block heights schedule and compute the
// same numbers, the 64-wide f32 tile and a 16-wide one included.
TEST(TransposeExec, TunedParams) {
  struct Tune {
    int64_t tile, vectorize, bdimy;
  };
  for (auto [tile, v, bdimy] : std::vector<Tune>{{64, 4, 16}, {64, 2, 8}, {64, 1, 4}, {16, 4, 16}}) {
    SCOPED_TRACE("tile " + std::to_string(tile) + " v " + std::to_string(v));
    auto original = makeFusion(transposePointwise(DataType::Float32));
    auto fusion = original->clone();
    std::vector<eval::Argument> args{randomTensor({100, 132}, 11)};
    SchedulerRuntimeInfo info(*fusion, args);
    auto p = transposeHeuristics(*fusion, info);
    ASSERT_TRUE(p->setField("tile", tile) && p->setField("vectorize", v) &&
                p->setField("bdimy", bdimy));
    scheduleTranspose(*fusion, *p);
    exec::KernelExecutor ke;
    ke.compile(*fusion, test::suiteBackend(), exec::ExecutorOptions{.poisonOutputs = true});
    std::vector<Tensor> actual = ke.run(args);
    std::vector<Tensor> expected = eval::evaluateFusion(*original, args);
    auto mismatch = eval::expectClose(actual[0], expected[0],
                                      eval::defaultTolerance(DataType::Float32, 1), "output 0");
    EXPECT_FALSE(mismatch.has_value()) << *mismatch << "\n" << p->toString();
  }
}

// A batch dim around the tile, the tile dims at both ends and the middle.
TEST(TransposeExec, BatchDims) {
  runTransposed(
      [](ir::Fusion& f) {
        auto* x = ops::TensorBuilder().shape({-1, -1, -1}).build();
        f.addInput(x);
        f.addOutput(ops::exp(ops::permute(x, {0, 2, 1})));
      },
      {randomTensor({3, 70, 45}, 2)});
  runTransposed(
      [](ir::Fusion& f) {
        auto* x = ops::TensorBuilder().shape({-1, -1, -1}).build();
        f.addInput(x);
        f.addOutput(ops::permute(x, {2, 1, 0}));
      },
      {randomTensor({40, 3, 36}, 3)});
}

// NCHW -> NHWC and back (channels last as a permuted input allocation).
TEST(TransposeExec, ChannelsLast) {
  runTransposed(
      [](ir::Fusion& f) {
        auto* x = ops::TensorBuilder().shape({-1, -1, -1, -1}).build();
        f.addInput(x);
        f.addOutput(ops::relu(ops::permute(x, {0, 2, 3, 1})));
      },
      {randomTensor({2, 48, 3, 40}, 4)});
  // An NHWC-allocated input computed into a contiguous NCHW output.
  Tensor nhwc = randomTensor({2, 5, 34, 48}, 5);  // [N, H, W, C] dense
  std::vector<int64_t> perm{0, 3, 1, 2};
  runTransposed(
      [](ir::Fusion& f) {
        auto* x = ops::TensorBuilder().shape({-1, -1, -1, -1}).strideOrder({0, 2, 3, 1}).build();
        f.addInput(x);
        f.addOutput(ops::mul(x, 3.0));
      },
      {nhwc.permute(perm)});
}

// Channels last with images narrower than a tile (ResNet's 7 x 7 and 14 x 14): the side whose
// innermost dim is W tiles H and W merged (and D too in 3-D), in both directions, with a bias
// per channel; odd sizes leave partial tiles.
TEST(TransposeExec, NarrowImagesTileMergedDims) {
  struct Case {
    std::vector<int64_t> nchw;
    DataType dtype;
    int64_t merged;  // dims the W side tiles together
  };
  for (const Case& c : std::vector<Case>{{{2, 64, 7, 7}, DataType::Float32, 2},
                                         {{3, 96, 14, 14}, DataType::BFloat16, 2},
                                         {{2, 40, 5, 9}, DataType::Float32, 2},
                                         {{2, 48, 4, 4, 4}, DataType::Float32, 3}}) {
    SCOPED_TRACE(::testing::PrintToString(c.nchw));
    const auto rank = int64_t(c.nchw.size());
    std::vector<int64_t> to_last{0};  // NC... -> N...C
    for (int64_t k = 2; k < rank; ++k) to_last.push_back(k);
    to_last.push_back(1);
    const DataType dtype = c.dtype;
    auto p = runTransposed(
        [&](ir::Fusion& f) {
          auto* x = ops::TensorBuilder().shape(std::vector<int64_t>(size_t(rank), -1)).dtype(dtype)
                        .build();
          auto* bias = ops::TensorBuilder().shape({-1}).dtype(dtype).build();
          f.addInput(x);
          f.addInput(bias);
          std::vector<bool> bcast(size_t(rank), true);
          bcast[1] = false;
          auto* y = ops::add(ops::cast(x, DataType::Float32),
                             ops::broadcast(ops::cast(bias, DataType::Float32), bcast));
          f.addOutput(ops::cast(ops::permute(ops::relu(y), to_last), dtype));
        },
        {randomTensor(c.nchw, 1, dtype), randomTensor({c.nchw[1]}, 2, dtype)});
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->inner_dims, 1);
    EXPECT_EQ(p->outer_dims, c.merged);
    // And back: an NHWC-allocated input into a contiguous NCHW output; now the reference's
    // innermost side merges.
    std::vector<int64_t> nhwc_sizes{c.nchw[0]};
    for (int64_t k = 2; k < rank; ++k) nhwc_sizes.push_back(c.nchw[size_t(k)]);
    nhwc_sizes.push_back(c.nchw[1]);
    std::vector<int64_t> to_first{0, rank - 1};  // N...C -> NC...
    for (int64_t k = 1; k < rank - 1; ++k) to_first.push_back(k);
    auto q = runTransposed(
        [&](ir::Fusion& f) {
          auto* x = ops::TensorBuilder().shape(std::vector<int64_t>(size_t(rank), -1)).dtype(dtype)
                        .strideOrder(to_last).build();
          f.addInput(x);
          f.addOutput(ops::cast(ops::mul(ops::cast(x, DataType::Float32), 3.0), dtype));
        },
        {randomTensor(nhwc_sizes, 3, dtype).permute(to_first)});
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(q->inner_dims, c.merged);
    EXPECT_EQ(q->outer_dims, 1);
  }
}

// Inputs in both layouts, a bias broadcast along the tile, and two outputs in different layouts
// (one of them also read in the fusion).
TEST(TransposeExec, SeveralInputsAndOutputs) {
  runTransposed(
      [](ir::Fusion& f) {
        auto* x = ops::TensorBuilder().shape({-1, -1}).build();
        auto* y = ops::TensorBuilder().shape({-1, -1}).build();
        auto* b = ops::TensorBuilder().shape({-1}).build();
        f.addInput(x);
        f.addInput(y);
        f.addInput(b);
        auto* t = ops::add(ops::transpose(x, 0, 1), y);
        f.addOutput(ops::add(t, ops::broadcast(b, {true, false})));
      },
      {randomTensor({100, 72}, 6), randomTensor({72, 100}, 7), randomTensor({100}, 8)});
  runTransposed(
      [](ir::Fusion& f) {
        auto* x = ops::TensorBuilder().shape({-1, -1}).dtype(DataType::BFloat16).build();
        f.addInput(x);
        auto* e = ops::exp(ops::cast(x, DataType::Float32));
        f.addOutput(e);
        f.addOutput(ops::cast(ops::mul(ops::transpose(e, 0, 1), 2.0), DataType::BFloat16));
        f.addOutput(ops::neg(e));
      },
      {randomTensor({96, 200}, 9, DataType::BFloat16)});
}

}  // namespace
}  // namespace loom::scheduler::testing
