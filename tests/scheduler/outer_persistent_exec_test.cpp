// SPDX-License-Identifier: Apache-2.0
// Outer-persistent fusions (x - x.mean(0), batch-norm forward and backward in both memory
// formats) scheduled through the registry and run as one cooperative kernel on the host backend
// (the emu tier; built with LOOM_OUTER_PERSISTENT_TEST_CUDA=1 on the GPU as the gpu tier), against
// the reference evaluator with outputs poisoned; the fallback for grids that cannot be resident;
// the launch limits against the H100/H200 figures.
#include <gtest/gtest.h>

#include "loom/exec/kernel_executor.h"
#include "loom/ops/arith.h"
#include "loom/ops/reduction.h"
#include "loom/ops/shape.h"
#include "loom/runtime/fusion_executor_cache.h"
#include "loom/scheduler/outer_persistent.h"
#include "loom/segmenter/segmenter.h"
#include "scheduler/scheduler_test_utils.h"

namespace loom::scheduler::testing {
namespace {

#ifdef LOOM_OUTER_PERSISTENT_TEST_CUDA
constexpr exec::Backend kBackend = exec::Backend::Cuda;
#else
constexpr exec::Backend kBackend = exec::Backend::Host;
#endif

// Schedules build's fusion through the registry, expects the outer-persistent scheduler, runs
// the kernel with poisoned outputs and compares with the reference evaluator.
std::unique_ptr<OuterPersistentParams> runOuter(const BuildFn& build,
                                                const std::vector<eval::Argument>& args,
                                                int64_t reduced) {
  Scheduled s = scheduleAndCheck(build, args, reduced);
  auto* p = dynamic_cast<OuterPersistentParams*>(s.params.get());
  EXPECT_NE(p, nullptr) << "chosen: " << s.params->toString();
  if (p == nullptr) return nullptr;
  exec::KernelExecutor ke;
  std::vector<Tensor> actual;
  try {
    ke.compile(*s.fusion, kBackend, exec::ExecutorOptions{.poisonOutputs = true});
    actual = ke.run(args);
  } catch (const std::exception& e) {
    ADD_FAILURE() << e.what() << "\n" << p->toString() << s.fusion->toString();
    return nullptr;
  }
  // One kernel: the column statistics reach every block through a grid all-reduce, so the
  // launch is cooperative.
  EXPECT_TRUE(ke.kernel().cooperative);
  EXPECT_HAS(ke.generated().source, "loom::gridAll");  // gridAllReduce or gridAllWelford
  EXPECT_HAS(ke.generated().source, "<false, true, false>(");
  std::vector<Tensor> expected = eval::evaluateFusion(*s.original, args);
  EXPECT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size() && i < expected.size(); ++i) {
    auto mismatch = eval::expectClose(actual[i], expected[i],
                                      eval::defaultTolerance(expected[i].dtype(), reduced),
                                      "output " + std::to_string(i));
    EXPECT_FALSE(mismatch.has_value()) << *mismatch << "\n" << p->toString();
  }
  s.params.release();
  return std::unique_ptr<OuterPersistentParams>(p);
}

ir::TensorView* input(int64_t rank, DataType dtype) {
  return ops::TensorBuilder().shape(std::vector<int64_t>(size_t(rank), -1)).dtype(dtype).build();
}

std::vector<bool> broadcastMask(int64_t rank, const std::vector<int64_t>& reduced) {
  std::vector<bool> mask(size_t(rank), false);
  for (int64_t d : reduced) mask[size_t(d)] = true;
  return mask;
}

// out = x - x.mean(0) of a [R, C] x.
BuildFn centerColumns(DataType dtype) {
  return [dtype](ir::Fusion& f) {
    auto* x = input(2, dtype);
    f.addInput(x);
    auto* xf = ops::cast(x, DataType::Float32);
    auto* mean = ops::broadcast(ops::mean(xf, {0}), {true, false});
    f.addOutput(ops::cast(ops::sub(xf, mean), dtype));
  };
}

// Batch-norm forward (training) over `reduced` dims of a rank-4 x: y = (x - mean) * rstd * w +
// b with the per-channel weight and bias w, b [C]; the mean and rstd are outputs too.
BuildFn batchNormForward(DataType dtype, std::vector<int64_t> reduced, int64_t channel) {
  return [=](ir::Fusion& f) {
    auto* x = input(4, dtype);
    auto* w = input(1, DataType::Float32);
    auto* b = input(1, DataType::Float32);
    f.addInput(x);
    f.addInput(w);
    f.addInput(b);
    const std::vector<bool> mask = broadcastMask(4, reduced);
    auto* xf = ops::cast(x, DataType::Float32);
    auto* mean = ops::mean(xf, reduced);
    auto* xc = ops::sub(xf, ops::broadcast(mean, mask));
    auto* var = ops::mean(ops::mul(xc, xc), reduced);
    auto* rstd = ops::rsqrt(ops::add(var, 1e-5));
    std::vector<bool> cmask(4, true);
    cmask[size_t(channel)] = false;
    auto* y = ops::add(ops::mul(ops::mul(xc, ops::broadcast(rstd, mask)), ops::broadcast(w, cmask)),
                       ops::broadcast(b, cmask));
    f.addOutput(ops::cast(y, dtype));
    f.addOutput(mean);
    f.addOutput(rstd);
  };
}

// Batch-norm backward: given dy, x, the saved mean and rstd [C] and weight w [C]:
// sum_dy = sum(dy), sum_dy_xhat = sum(dy * xhat) per channel, and
// dx = w * rstd * (dy - sum_dy / n - xhat * sum_dy_xhat / n); the two sums are outputs too.
BuildFn batchNormBackward(DataType dtype, std::vector<int64_t> reduced, int64_t channel) {
  return [=](ir::Fusion& f) {
    auto* dy = input(4, dtype);
    auto* x = input(4, dtype);
    auto* mean = input(1, DataType::Float32);
    auto* rstd = input(1, DataType::Float32);
    auto* w = input(1, DataType::Float32);
    for (auto* t : {dy, x, mean, rstd, w}) f.addInput(t);
    std::vector<bool> cmask(4, true);
    cmask[size_t(channel)] = false;
    auto* dyf = ops::cast(dy, DataType::Float32);
    auto* xhat = ops::mul(ops::sub(ops::cast(x, DataType::Float32), ops::broadcast(mean, cmask)),
                          ops::broadcast(rstd, cmask));
    auto* sum_dy = ops::sum(dyf, reduced);
    auto* sum_dy_xhat = ops::sum(ops::mul(dyf, xhat), reduced);
    const std::vector<bool> mask = broadcastMask(4, reduced);
    auto* scale = ops::mul(ops::broadcast(w, cmask), ops::broadcast(rstd, cmask));
    auto* mdy = ops::broadcast(ops::mean(dyf, reduced), mask);
    auto* mdyx = ops::broadcast(ops::mean(ops::mul(dyf, xhat), reduced), mask);
    auto* dx = ops::mul(scale, ops::sub(ops::sub(dyf, mdy), ops::mul(xhat, mdyx)));
    f.addOutput(ops::cast(dx, dtype));
    f.addOutput(sum_dy);
    f.addOutput(sum_dy_xhat);
  };
}

// [R, C] for x - x.mean(0): odd sizes, one column, fp32 and bf16.
TEST(OuterPersistentExec, CenterColumns) {
  struct Case {
    int64_t rows, cols;
    DataType dtype;
  };
  for (auto [rows, cols, dtype] : std::vector<Case>{{64, 32, DataType::Float32},
                                                    {1000, 37, DataType::Float32},
                                                    {517, 3, DataType::BFloat16},
                                                    {333, 1, DataType::Float32},
                                                    {2048, 100, DataType::BFloat16}}) {
    SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols) + " " +
                 std::string(dataTypeName(dtype)));
    auto p = runOuter(centerColumns(dtype), {randomTensor({rows, cols}, 1, dtype)}, rows);
    ASSERT_NE(p, nullptr);
    EXPECT_FALSE(p->inner_reduced);
    EXPECT_GT(p->grid, 0);
    EXPECT_LE(p->blocks, p->resident_blocks);
  }
}

// Batch-norm forward: NHWC (a pure outer reduction over N, H, W) and NCHW (C between the reduced
// dims: the inner_reduced form), odd sizes, fp32 and bf16.
TEST(OuterPersistentExec, BatchNormForward) {
  struct Case {
    std::vector<int64_t> shape;
    bool nhwc;
    DataType dtype;
  };
  for (const Case& c : std::vector<Case>{{{4, 5, 7, 24}, true, DataType::Float32},
                                         {{3, 9, 5, 13}, true, DataType::BFloat16},
                                         {{4, 24, 5, 7}, false, DataType::Float32},
                                         {{3, 13, 9, 5}, false, DataType::BFloat16},
                                         {{8, 5, 33, 31}, false, DataType::Float32},
                                         {{9, 3, 17, 13}, false, DataType::BFloat16}}) {
    const int64_t channel = c.nhwc ? 3 : 1;
    const std::vector<int64_t> reduced =
        c.nhwc ? std::vector<int64_t>{0, 1, 2} : std::vector<int64_t>{0, 2, 3};
    SCOPED_TRACE(std::string(c.nhwc ? "NHWC " : "NCHW ") + std::string(dataTypeName(c.dtype)));
    const int64_t channels = c.shape[size_t(channel)];
    auto p = runOuter(batchNormForward(c.dtype, reduced, channel),
                      {randomTensor(c.shape, 2, c.dtype), randomTensor({channels}, 3),
                       randomTensor({channels}, 4)},
                      c.shape[0] * c.shape[1] * c.shape[2] * c.shape[3] / channels);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->inner_reduced, !c.nhwc);
    // Channels span several blocks (the grid all-reduce's case): NHWC from 33 reduced elements
    // (8 x 4 a block), NCHW past 1024 (256 threads x 4).
    EXPECT_EQ(p->grid > 1, p->reduced > (c.nhwc ? 32 : 1024)) << p->toString();
  }
}

// Batch-norm backward: the per-channel sums of dy and dy * xhat, then dx, both formats.
TEST(OuterPersistentExec, BatchNormBackward) {
  for (bool nhwc : {true, false}) {
    for (DataType dtype : {DataType::Float32, DataType::BFloat16}) {
      SCOPED_TRACE(std::string(nhwc ? "NHWC " : "NCHW ") + std::string(dataTypeName(dtype)));
      const std::vector<int64_t> shape =
          nhwc ? std::vector<int64_t>{3, 5, 7, 19} : std::vector<int64_t>{9, 19, 13, 11};
      const int64_t channel = nhwc ? 3 : 1;
      const std::vector<int64_t> reduced =
          nhwc ? std::vector<int64_t>{0, 1, 2} : std::vector<int64_t>{0, 2, 3};
      auto p = runOuter(batchNormBackward(dtype, reduced, channel),
                        {randomTensor(shape, 5, dtype), randomTensor(shape, 6, dtype),
                         randomTensor({19}, 7), randomTensor({19}, 8), randomTensor({19}, 9)},
                        shape[0] * shape[1] * shape[2] * shape[3] / 19);
      ASSERT_NE(p, nullptr);
      EXPECT_GT(p->grid, 1) << p->toString();
    }
  }
}

// A device that cannot hold the grid (one SM here): the registry rejects the fusion with the
// reason, the segmenter splits it (no outer-persistent segment) and the split plan is right.
TEST(OuterPersistentExec, FallbackWhenTheGridCannotBeResident) {
  DeviceInfo small;
  small.sm_count = 1;
  struct Case {
    BuildFn build;
    std::vector<eval::Argument> args;
    int64_t reduced;
    size_t min_segments;  // what the segmenter makes of it (docs/schedulers.md, "Before")
  };
  const std::vector<Case> cases = {
      {centerColumns(DataType::Float32), {randomTensor({4096, 64}, 10)}, 4096, 2},
      {batchNormForward(DataType::Float32, {0, 1, 2}, 3),
       {randomTensor({8, 16, 32, 64}, 11), randomTensor({64}, 12), randomTensor({64}, 13)},
       8 * 16 * 32,
       3}};
  for (const Case& c : cases) {
    auto original = makeFusion(c.build);
    SchedulerRuntimeInfo info(*original, c.args, small);
    std::string why;
    EXPECT_FALSE(outerPersistentRunTimeCheck(*original, info, &why));
    EXPECT_HAS(why, "does not fit on chip across a resident grid");
    EXPECT_HAS(explainSchedulerChoice(*original, info), "outer_persistent: run-time: the reduced");
    segmenter::SegmenterOptions options;
    options.device = small;
    segmenter::SegmentedFusion sf = segmenter::segmentFusion(*original, c.args, options);
    ASSERT_GE(sf.segments().size(), c.min_segments);
    for (const segmenter::Segment& seg : sf.segments()) {
      ASSERT_NE(seg.kernel(), nullptr);
      EXPECT_NE(seg.kernel()->scheduler, SchedulerType::OuterPersistent) << seg.what();
    }
    runtime::RuntimeOptions ro;
    ro.backend = kBackend;
    runtime::FusionKernelRuntime rt(std::move(sf), ro);
    std::vector<Tensor> actual = rt.run(c.args);
    std::vector<Tensor> expected = eval::evaluateFusion(*original, c.args);
    ASSERT_EQ(actual.size(), expected.size());
    for (size_t i = 0; i < actual.size(); ++i) {
      auto mismatch = eval::expectClose(actual[i], expected[i],
                                        eval::defaultTolerance(DataType::Float32, c.reduced),
                                        "output " + std::to_string(i));
      EXPECT_FALSE(mismatch.has_value()) << *mismatch;
    }
  }
}

// Launch limits against the H100 (132 SMs) and H200 (132 SMs) figures: every accepted plan's
// grid is within what the device holds at once, the SM count scales it, and the batch-norm
// benchmark shape [32, 256, 56, 56] (100 MB of fp32) does not fit on chip and is rejected.
TEST(OuterPersistentExec, LaunchLimits) {
  DeviceInfo h100;  // DeviceInfo's defaults are the H200's; the H100 SXM has the same SM limits
  h100.sm_count = 132;
  h100.l2_bytes = 50 * 1024 * 1024;
  EXPECT_EQ(residentBlocks(h100, 256, 64), 132 * 4);  // 64K registers / (256 x 64)
  EXPECT_EQ(residentBlocks(h100, 256, 32), 132 * 8);  // 2048 threads per SM
  EXPECT_EQ(residentBlocks(h100, 2048, 32), 0);       // over the block limit
  for (const DeviceInfo& d : {h100, DeviceInfo{}}) {
    for (auto [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{
             {100000, 256}, {1 << 20, 64}, {4096, 4096}, {65536, 1024}}) {
      auto f = makeFusion(centerColumns(DataType::Float32));
      std::vector<eval::Argument> args{Tensor::empty({rows, cols}, DataType::Float32)};
      SchedulerRuntimeInfo info(*f, args, d);
      std::string why;
      auto p = outerPersistentHeuristics(*f, info, &why);
      if (p == nullptr) {
        EXPECT_HAS(why, "blocks of");
        continue;
      }
      EXPECT_LE(p->blocks, p->resident_blocks) << p->toString();
      EXPECT_LE(p->grid, d.max_grid_yz);
      EXPECT_EQ(p->blocks, utils::ceilDiv(cols, p->bdimx) * p->grid);
      EXPECT_GE(p->grid * p->bdimy * p->persistent_batch, rows) << p->toString();
    }
    auto f = makeFusion(batchNormForward(DataType::Float32, {0, 2, 3}, 1));
    std::vector<eval::Argument> args{Tensor::empty({32, 256, 56, 56}, DataType::Float32),
                                     Tensor::empty({256}, DataType::Float32),
                                     Tensor::empty({256}, DataType::Float32)};
    SchedulerRuntimeInfo info(*f, args, d);
    std::string why;
    EXPECT_EQ(outerPersistentHeuristics(*f, info, &why), nullptr);
    EXPECT_HAS(why, "does not fit on chip");
  }
}

// A Welford statistic (var_mean over the outer dims, translated or not) normalizing its data: the
// grid all-reduce of Welford triples.
TEST(OuterPersistentExec, VarMeanNormalization) {
  for (DataType dtype : {DataType::Float32, DataType::BFloat16}) {
    SCOPED_TRACE(std::string(dataTypeName(dtype)));
    auto p = runOuter(
        [dtype](ir::Fusion& f) {
          auto* x = input(3, dtype);
          f.addInput(x);
          auto* xf = ops::cast(x, DataType::Float32);
          auto vm = ops::varMean(xf, {0, 1}, 0.0);
          const std::vector<bool> mask{true, true, false};
          auto* y = ops::div(ops::sub(xf, ops::broadcast(vm.mean, mask)),
                             ops::add(ops::broadcast(vm.var, mask), 1.0));
          f.addOutput(ops::cast(y, dtype));
        },
        {randomTensor({13, 11, 21}, 13, dtype)}, 143);
    ASSERT_NE(p, nullptr);
    EXPECT_GT(p->grid, 1);
  }
}

// A held buffer read both before the reduction and after it (xhat = x * rstd, projected: one
// copy per use): the held input cache must not share the final reduction's BIDy/TIDy loops with
// both readers (inlined there, lowering could not order the loops).
TEST(OuterPersistentExec, HeldBufferReadBeforeAndAfterTheReduction) {
  for (int variant = 0; variant < 4; ++variant) {
    SCOPED_TRACE("variant " + std::to_string(variant));
    runOuter(
        [variant](ir::Fusion& f) {
          auto* dy = input(4, DataType::Float32);
          auto* x = input(4, DataType::Float32);
          auto* rstd = input(1, DataType::Float32);
          for (auto* t : {dy, x, rstd}) f.addInput(t);
          std::vector<bool> cmask{true, true, true, false};
          std::vector<int64_t> reduced{0, 1, 2};
          auto* xhat = variant >= 2 ? ops::mul(x, ops::broadcast(rstd, cmask)) : x;
          auto* mdyx = ops::broadcast(ops::mean(ops::mul(dy, xhat), reduced), cmask);
          auto* dx = ops::sub(dy, ops::mul(xhat, mdyx));
          if (variant == 1 || variant == 3) dx = ops::mul(dx, ops::broadcast(rstd, cmask));
          f.addOutput(dx);
        },
        {randomTensor({3, 5, 7, 19}, 5), randomTensor({3, 5, 7, 19}, 6), randomTensor({19}, 7)},
        105);
  }
}

// The executor refuses a cooperative grid the device cannot hold at once (here the host
// backend's 2^18 fibers: 1100 blocks of 256 threads, forced by tuned parameters) with a
// UserError, before launching: a grid barrier would never be passed.
TEST(OuterPersistentExec, ExecutorRefusesAGridThatCannotBeResident) {
  auto original = makeFusion(centerColumns(DataType::Float32));
  auto fusion = original->clone();
  std::vector<eval::Argument> args{randomTensor({8800, 32}, 12)};
  SchedulerRuntimeInfo info(*fusion, args);
  auto p = outerPersistentHeuristics(*fusion, info);
  ASSERT_NE(p, nullptr);
  ASSERT_TRUE(p->setField("persistent_batch", 1) && p->setField("bdimy", 8) &&
              p->setField("bdimx", 32));
  scheduleOuterPersistent(*fusion, *p);
  exec::KernelExecutor ke;
  ke.compile(*fusion, exec::Backend::Host);
  std::string msg = userErrorOf([&] { ke.run(args); });
  EXPECT_HAS(msg,
             "its 1100 blocks must all be resident at once, but host holds at most 1024 "
             "blocks of 256 threads");
}

// What the registry says for fusions it leaves to others.
TEST(OuterPersistentExec, Rejections) {
  std::string why;
  auto inner = makeFusion([](ir::Fusion& f) {
    auto* x = input(2, DataType::Float32);
    f.addInput(x);
    f.addOutput(ops::sub(x, ops::broadcast(ops::mean(x, {1}), {false, true})));
  });
  EXPECT_FALSE(outerPersistentCompileTimeCheck(*inner, &why));
  EXPECT_HAS(why, "the inner-persistent scheduler's case");
  auto plain = makeFusion(sumFusion({0}));
  EXPECT_FALSE(outerPersistentCompileTimeCheck(*plain, &why));
  EXPECT_HAS(why, "no persistent buffer");
}

}  // namespace
}  // namespace loom::scheduler::testing
