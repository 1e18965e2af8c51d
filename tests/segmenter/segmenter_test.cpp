// SPDX-License-Identifier: Apache-2.0
// Segmenter tests: fusions no single scheduler takes are split into accepted segments whose
// evaluation in run order reproduces the whole fusion.
#include <gtest/gtest.h>

#include <unordered_map>
#include <unordered_set>

#include "loom/eval/compare.h"
#include "loom/eval/reference_evaluator.h"
#include "loom/ir/ir.h"
#include "loom/ops/ops.h"
#include "loom/scheduler/registry.h"
#include "loom/segmenter/segmenter.h"

namespace loom::segmenter {
namespace {

using ir::Fusion;
using ir::FusionGuard;
using ir::TensorView;

Tensor randomTensor(std::vector<int64_t> sizes, uint64_t seed) {
  Tensor t = Tensor::empty(std::move(sizes), DataType::Float32);
  fillRandom(t, seed);
  return t;
}

// Runs the segments with the reference evaluator in run order, passing intermediates along,
// and returns the original fusion's outputs. Fails the test when a segment reads a value no
// earlier segment produced.
std::vector<Tensor> evaluateSegments(const SegmentedFusion& sf,
                                     const std::vector<eval::Argument>& args) {
  std::unordered_map<const ir::Val*, eval::Argument> values;
  for (size_t i = 0; i < args.size(); ++i) values[sf.original().inputs()[i]] = args[i];
  for (const Segment& s : sf.segments()) {
    std::vector<eval::Argument> sargs;
    for (ir::Val* v : s.fusion.inputs) {
      auto it = values.find(v);
      EXPECT_NE(it, values.end()) << "segment " << s.id << " reads " << v->toString() << " early";
      if (it == values.end()) return {};
      sargs.push_back(it->second);
    }
    std::vector<Tensor> outs = eval::evaluateFusion(*s.fusion.fusion, sargs);
    for (size_t i = 0; i < outs.size(); ++i) values[s.fusion.outputs[i]] = outs[i];
  }
  std::vector<Tensor> result;
  for (ir::Val* out : sf.original().outputs()) result.push_back(std::get<Tensor>(values[out]));
  return result;
}

void expectSameResults(const Fusion& f, const SegmentedFusion& sf,
                       const std::vector<eval::Argument>& args, int64_t reduction_size) {
  std::vector<Tensor> expected = eval::evaluateFusion(f, args);
  std::vector<Tensor> got = evaluateSegments(sf, args);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    auto err = eval::expectClose(got[i], expected[i],
                                 eval::defaultTolerance(DataType::Float32, reduction_size),
                                 "output " + std::to_string(i));
    EXPECT_FALSE(err.has_value()) << *err;
  }
}

// Every segment must be accepted by the scheduler recorded for it, at the same sizes.
void expectSegmentsAccepted(const SegmentedFusion& sf) {
  for (const Segment& s : sf.segments()) {
    ASSERT_NE(s.kernel(), nullptr);
    ASSERT_NE(s.kernel()->params, nullptr);
    EXPECT_EQ(s.kernel()->params->type(), s.kernel()->scheduler);
    std::string why;
    EXPECT_TRUE(scheduler::schedulerFor(s.kernel()->scheduler)
                    .canScheduleCompileTime(*s.fusion.fusion, &why))
        << why;
  }
}

// A fusion one scheduler takes stays one segment whose fusion has the original's inputs.
TEST(Segmenter, PointwiseFusionIsOneSegment) {
  Fusion f;
  {
    FusionGuard g(&f);
    TensorView* x = ops::TensorBuilder().rank(2).build();
    TensorView* y = ops::TensorBuilder().rank(2).build();
    f.addInput(x);
    f.addInput(y);
    f.addOutput(ops::relu(ops::add(x, y)));
  }
  std::vector<eval::Argument> args{randomTensor({4, 6}, 1), randomTensor({4, 6}, 2)};
  SegmentedFusion sf = segmentFusion(f, args);
  ASSERT_EQ(sf.size(), 1);
  EXPECT_EQ(sf.segments()[0].kernel()->scheduler, scheduler::SchedulerType::Pointwise);
  EXPECT_EQ(sf.segments()[0].fusion.inputs, f.inputs());
  expectSameResults(f, sf, args, 1);
}

// Greedy merging recombines a chain of pointwise exprs into one segment when forced to start
// from one group per expr.
TEST(Segmenter, ForcedSegmentationMergesPointwiseChainBack) {
  Fusion f;
  {
    FusionGuard g(&f);
    TensorView* x = ops::TensorBuilder().rank(2).build();
    f.addInput(x);
    f.addOutput(ops::exp(ops::neg(ops::abs(x))));
  }
  std::vector<eval::Argument> args{randomTensor({3, 5}, 3)};
  SegmenterOptions opts;
  opts.forceSegmentation = true;
  SegmentedFusion sf = segmentFusion(f, args, opts);
  ASSERT_EQ(sf.size(), 1) << sf.toString();
  EXPECT_EQ(sf.segments()[0].exprs.size(), 3u);
  expectSameResults(f, sf, args, 1);
}

// A reduction followed by a reduction over another axis is split; the value between them is an
// output of the first segment and a fresh global input (no reduction IDs) of the second, and
// the results are unchanged.
TEST(Segmenter, TwoReductionsOverDifferentAxes) {
  Fusion f;
  {
    FusionGuard g(&f);
    TensorView* x = ops::TensorBuilder().rank(3).build();
    f.addInput(x);
    TensorView* mid = ops::sum(x, {2});
    f.addOutput(ops::sum(ops::mul(mid, mid), {0}));
  }
  std::vector<eval::Argument> args{randomTensor({6, 5, 7}, 4)};
  SegmentedFusion sf = segmentFusion(f, args);
  ASSERT_EQ(sf.size(), 2) << sf.toString();
  expectSegmentsAccepted(sf);
  const Segment& first = sf.segments()[0];
  const Segment& second = sf.segments()[1];
  ASSERT_EQ(first.fusion.outputs.size(), 1u) << sf.toString();
  ASSERT_EQ(second.fusion.inputs.size(), 1u) << sf.toString();
  EXPECT_EQ(second.fusion.inputs[0], first.fusion.outputs[0]);
  auto* in = second.fusion.fusion->inputs()[0]->as<TensorView>();
  EXPECT_FALSE(in->domain()->hasReduction()) << in->domain()->toString();
  EXPECT_EQ(in->memoryType(), ir::MemoryType::Global);
  expectSameResults(f, sf, args, 35);
}

// Softmax over rows too wide for the persistent scheduler as a whole is split into several
// accepted segments (a smaller persistent part may be one of them); evaluating them in order
// gives the softmax.
TEST(Segmenter, WideSoftmaxFallsBackToSegments) {
  Fusion f;
  {
    FusionGuard g(&f);
    TensorView* x = ops::TensorBuilder().rank(2).build();
    f.addInput(x);
    f.addOutput(ops::softmax(x, -1));
  }
  std::vector<eval::Argument> args{randomTensor({2, 80000}, 5)};
  scheduler::SchedulerRuntimeInfo info(f, args);
  ASSERT_EQ(scheduler::proposeScheduler(f, info).scheduler, nullptr)
      << "the whole softmax was accepted; make the row wider";
  SegmentedFusion sf = segmentFusion(f, args);
  ASSERT_GE(sf.size(), 2) << sf.toString();
  expectSegmentsAccepted(sf);
  expectSameResults(f, sf, args, 80000);
  // Every expr of the fusion lands in exactly one segment.
  std::unordered_set<const ir::Expr*> covered;
  for (const Segment& s : sf.segments()) {
    for (const ir::Expr* e : s.exprs) EXPECT_TRUE(covered.insert(e).second) << e->toString();
  }
  EXPECT_EQ(covered.size(), f.exprs().size());
}

// The printed segmentation names each segment's scheduler, inputs and outputs.
TEST(Segmenter, ToStringNamesSchedulersAndValues) {
  Fusion f;
  {
    FusionGuard g(&f);
    TensorView* x = ops::TensorBuilder().rank(3).build();
    f.addInput(x);
    f.addOutput(ops::sum(ops::sum(x, {2}), {0}));
  }
  std::vector<eval::Argument> args{randomTensor({2, 3, 4}, 6)};
  std::string text = segmentFusion(f, args).toString();
  EXPECT_NE(text.find("segment 0 (reduction)"), std::string::npos) << text;
  EXPECT_NE(text.find("segment 1 ("), std::string::npos) << text;
  EXPECT_NE(text.find("inputs T0"), std::string::npos) << text;
}

// Arguments that do not match the fusion are rejected before any segmentation.
TEST(Segmenter, MismatchedArgumentsAreUserErrors) {
  Fusion f;
  {
    FusionGuard g(&f);
    TensorView* x = ops::TensorBuilder().rank(2).build();
    f.addInput(x);
    f.addOutput(ops::relu(x));
  }
  std::vector<eval::Argument> args{randomTensor({4}, 7)};
  try {
    segmentFusion(f, args);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("rank"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace loom::segmenter
