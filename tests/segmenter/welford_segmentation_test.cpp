// SPDX-License-Identifier: Apache-2.0
// The automatic path translates Welford to two passes when the inner-persistent scheduler then
// takes the fusion (var_mean and layer_norm of the benchmark shapes), and keeps Welford otherwise.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

#include "loom/eval/compare.h"
#include "loom/eval/reference_evaluator.h"
#include "loom/ir/ir.h"
#include "loom/ops/ops.h"
#include "loom/scheduler/normalization.h"
#include "loom/segmenter/segmenter.h"

namespace loom::segmenter {
namespace {

using ir::Fusion;
using ir::FusionGuard;

// Stand-in arguments: only sizes, strides, dtype and alignment matter to segmentation, so the
// benchmark shapes need no memory (never read).
eval::Argument shapeOnly(std::vector<int64_t> sizes, DataType dtype) {
  std::vector<int64_t> strides = Tensor::contiguousStrides(sizes);
  return Tensor::fromBlob(reinterpret_cast<void*>(uintptr_t{4096}), sizes, strides, dtype,
                          Device::cpu());
}

// var_mean over the last dim of a symbolic 3-D tensor of `dtype` (outputs var, mean).
std::unique_ptr<Fusion> varMeanFusion(DataType dtype) {
  auto f = std::make_unique<Fusion>();
  FusionGuard guard(f.get());
  auto* x = ops::TensorBuilder().shape({-1, -1, -1}).dtype(dtype).build();
  f->addInput(x);
  auto vm = ops::varMean(x, {2});
  f->addOutput(vm.var);
  f->addOutput(vm.mean);
  return f;
}

const scheduler::InnerPersistentParams& persistentParams(const Segment& s) {
  return dynamic_cast<const scheduler::InnerPersistentParams&>(*s.kernel()->params);
}

// var_mean over dim 2 of [1, 2048, 12288] and [16, 2048, 12288], fp32 and bf16, is translated
// and taken whole by the inner-persistent scheduler (no Welford left in the segment).
TEST(WelfordSegmentation, VarMeanBenchmarkShapesGoInnerPersistent) {
  for (DataType dtype : {DataType::Float32, DataType::BFloat16}) {
    for (int64_t b : {1, 16}) {
      auto f = varMeanFusion(dtype);
      std::vector<eval::Argument> args = {shapeOnly({b, 2048, 12288}, dtype)};
      SegmentedFusion sf = segmentFusion(*f, args);
      ASSERT_EQ(sf.size(), 1) << sf.toString();
      const Segment& s = sf.segments()[0];
      EXPECT_EQ(s.kernel()->scheduler, scheduler::SchedulerType::InnerPersistent) << sf.toString();
      EXPECT_TRUE(sf.rewritten());
      EXPECT_EQ(&sf.source(), f.get());
      EXPECT_NE(sf.toString().find("welford: translated"), std::string::npos) << sf.toString();
      for (ir::Expr* e : s.fusion.fusion->exprs()) EXPECT_FALSE(e->isA<ir::WelfordOp>());
      const auto& p = persistentParams(s);
      EXPECT_EQ(p.rows, b * 2048);
      EXPECT_EQ(p.vectorize, dtype == DataType::Float32 ? 4 : 8);
      // fp32: 32 values per thread (384 threads); bf16 rows are latency-bound and persist as
      // bf16, so 64 values (128 bytes) per thread: 192 threads, more rows per SM.
      const int64_t values = dtype == DataType::Float32 ? 32 : 64;
      EXPECT_EQ(p.threads_per_row, 12288 / values) << p.toString();
      EXPECT_EQ(p.persistent_batch * p.vectorize, values) << p.toString();
    }
  }
}

// A row no persistent scheduler holds keeps its Welford (reduction scheduler), with the reason.
TEST(WelfordSegmentation, TooWideRowKeepsWelford) {
  auto f = varMeanFusion(DataType::Float32);
  std::vector<eval::Argument> args = {shapeOnly({1, 2, int64_t(1) << 26}, DataType::Float32)};
  SegmentedFusion sf = segmentFusion(*f, args);
  EXPECT_FALSE(sf.rewritten());
  ASSERT_EQ(sf.size(), 1);
  EXPECT_EQ(sf.segments()[0].kernel()->scheduler, scheduler::SchedulerType::Reduction);
  EXPECT_NE(sf.toString().find("welford: kept (not translated: rows of 67108864"),
            std::string::npos)
      << sf.toString();
}

// Rows wider than shared memory (read again from global memory per pass) keep their Welford:
// two passes would read each row twice for the statistics where Welford reads it once. var_mean
// goes to the reduction scheduler (one read), layer_norm stays one inner-persistent kernel with
// its Welford (statistics pass, then the output pass).
TEST(WelfordSegmentation, ReloadedRowsKeepWelford) {
  auto vm = varMeanFusion(DataType::Float32);
  std::vector<eval::Argument> args = {shapeOnly({1, 512, 131072}, DataType::Float32)};
  SegmentedFusion sf = segmentFusion(*vm, args);
  EXPECT_FALSE(sf.rewritten());
  ASSERT_EQ(sf.size(), 1);
  EXPECT_EQ(sf.segments()[0].kernel()->scheduler, scheduler::SchedulerType::Reduction);
  EXPECT_NE(sf.toString().find("welford: kept (not translated: the rows do not fit on chip"),
            std::string::npos)
      << sf.toString();

  auto ln = std::make_unique<Fusion>();
  {
    FusionGuard guard(ln.get());
    auto* x = ops::TensorBuilder().shape({-1, -1}).build();
    ln->addInput(x);
    ln->addOutput(ops::layerNorm(x, 1, nullptr, nullptr, 1e-5).y);
  }
  std::vector<eval::Argument> ln_args = {shapeOnly({512, 131072}, DataType::Float32)};
  SegmentedFusion sl = segmentFusion(*ln, ln_args);
  EXPECT_FALSE(sl.rewritten());
  ASSERT_EQ(sl.size(), 1) << sl.toString();
  const Segment& s = sl.segments()[0];
  EXPECT_EQ(s.kernel()->scheduler, scheduler::SchedulerType::InnerPersistent) << sl.toString();
  EXPECT_TRUE(persistentParams(s).reload_rows) << sl.toString();
  bool welford = false;
  for (ir::Expr* e : s.fusion.fusion->exprs()) welford = welford || e->isA<ir::WelfordOp>();
  EXPECT_TRUE(welford) << sl.toString();
}

// Two sizes whose heuristics agree give segmentations that compare equal (kernel reuse), though
// each holds its own translated copy; a different heuristic does not.
TEST(WelfordSegmentation, TranslatedSegmentationsCompareByPosition) {
  auto f = varMeanFusion(DataType::Float32);
  std::vector<eval::Argument> a = {shapeOnly({4, 2048, 12288}, DataType::Float32)};
  std::vector<eval::Argument> b = {shapeOnly({8, 2048, 12288}, DataType::Float32)};
  std::vector<eval::Argument> c = {shapeOnly({8, 2048, 4098}, DataType::Float32)};  // vector 2
  SegmentedFusion sa = segmentFusion(*f, a);
  SegmentedFusion sb = segmentFusion(*f, b);
  SegmentedFusion sc = segmentFusion(*f, c);
  EXPECT_NE(&sa.original(), &sb.original());
  EXPECT_TRUE(sa.sameAs(sb));
  EXPECT_FALSE(sa.sameAs(sc));
  SegmenterOptions keep;
  keep.translateWelford = false;
  EXPECT_FALSE(sa.sameAs(segmentFusion(*f, a, keep)));
}

// The translated segmentation computes the original's numbers (reference evaluator on the
// segment fusion), for a row that does not divide the vector width.
TEST(WelfordSegmentation, TranslatedVarMeanEvaluatesLikeWelford) {
  auto f = varMeanFusion(DataType::Float32);
  Tensor x = Tensor::empty({2, 3, 1001}, DataType::Float32);
  fillRandom(x, 3);
  std::vector<eval::Argument> args = {x};
  SegmentedFusion sf = segmentFusion(*f, args);
  ASSERT_TRUE(sf.rewritten());
  ASSERT_EQ(sf.size(), 1);
  const Segment& s = sf.segments()[0];
  std::vector<Tensor> seg_out = eval::evaluateFusion(*s.fusion.fusion, args);
  std::vector<Tensor> expected = eval::evaluateFusion(*f, args);
  ASSERT_EQ(seg_out.size(), expected.size());
  // Segment outputs are listed by s.fusion.outputs (original Vals), not in the fusion's order.
  for (size_t i = 0; i < expected.size(); ++i) {
    const ir::Val* want = sf.original().outputs()[i];
    auto it = std::find(s.fusion.outputs.begin(), s.fusion.outputs.end(), want);
    ASSERT_NE(it, s.fusion.outputs.end());
    EXPECT_FALSE(eval::expectClose(seg_out[size_t(it - s.fusion.outputs.begin())], expected[i],
                                   eval::defaultTolerance(DataType::Float32, 1001), "var_mean"));
  }
}

}  // namespace
}  // namespace loom::segmenter
