// SPDX-License-Identifier: Apache-2.0
// The pre-segmentation pass list: its order, that each pass reports whether it changed the
// fusion, the fusion_ir(pass) dump and the verification after every pass.
#include "loom/segmenter/presegment.h"

#include <gtest/gtest.h>

#include <memory>
#include <sstream>

#include "loom/ir/ir.h"
#include "loom/ops/ops.h"
#include "loom/segmenter/segmenter.h"
#include "loom/segmenter/user_loops.h"

namespace loom::segmenter {
namespace {

using ir::Fusion;
using ir::FusionGuard;

eval::Argument shapeOnly(std::vector<int64_t> sizes) {
  std::vector<int64_t> strides = Tensor::contiguousStrides(sizes);
  return Tensor::fromBlob(reinterpret_cast<void*>(uintptr_t{4096}), sizes, strides,
                          DataType::Float32, Device::cpu());
}

// var_mean over the last dim of x[rows, width].
std::unique_ptr<Fusion> varMean() {
  auto f = std::make_unique<Fusion>();
  FusionGuard guard(f.get());
  auto* x = ops::TensorBuilder().shape({-1, -1}).build();
  f->addInput(x);
  auto vm = ops::varMean(x, {1});
  f->addOutput(vm.var);
  f->addOutput(vm.mean);
  return f;
}

// Captures std::cout while alive.
struct CoutCapture {
  std::ostringstream out;
  std::streambuf* old = std::cout.rdbuf(out.rdbuf());
  ~CoutCapture() { std::cout.rdbuf(old); }
};

TEST(Presegment, PassesInOrder) {
  std::vector<std::string> names;
  for (const PresegmentPass& p : presegmentPasses()) names.emplace_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"drop_user_loops", "concretize_reshapes",
                                             "expand_sharded_attention", "propagate_shardings",
                                             "reduction_inits", "decompose_reshardings",
                                             "remove_empty_work", "translate_welford",
                                             "finalize_shardings", "localize_shards"}));
}

// drop_user_loops: a loop split and reordered without parallelizing goes back to the logical
// domain and its transforms leave the fusion; a parallelized loop (a hand schedule) stays, and
// so do the transforms an allocation domain is made of.
TEST(Presegment, DropsUnparallelizedUserLoops) {
  Fusion f;
  FusionGuard guard(&f);
  auto* x = ops::TensorBuilder().shape({-1, -1}).build();
  f.addInput(x);
  ir::TensorView* a = ops::neg(x);
  ir::TensorView* b = ops::abs(x);
  ir::TensorView* c = ops::exp(x);
  for (ir::TensorView* t : {a, b, c}) f.addOutput(t);
  a->split(1, 4);
  a->reorder(std::vector<int64_t>{1, 0, 2});
  b->split(1, 4);
  b->axis(2)->parallelize(ir::ParallelType::TIDx);
  c->split(1, 4);
  c->setAllocationDomain(c->loop());
  const size_t exprs_before = f.exprs().size();
  const std::vector<ir::IterDomain*> b_loop = b->loop();

  EXPECT_TRUE(dropUserLoops(f));
  EXPECT_EQ(a->loop(), a->logical());
  EXPECT_TRUE(a->logical()[1]->uses().empty()) << "the split of a's loop left the fusion";
  EXPECT_EQ(b->loop(), b_loop);
  EXPECT_EQ(c->loop(), c->logical());
  EXPECT_EQ(c->maybeAllocation().size(), 3u);
  EXPECT_FALSE(c->logical()[1]->uses().empty()) << "c's allocation is made of its split";
  EXPECT_EQ(f.exprs().size(), exprs_before);  // math exprs only: the splits are not among them
  ir::verify(f);
  EXPECT_FALSE(dropUserLoops(f));  // nothing left to drop
}

// A var_mean the persistent scheduler holds is translated; nothing else applies.
TEST(Presegment, TranslatesWelfordAndReportsIt) {
  auto f = varMean();
  std::vector<eval::Argument> args = {shapeOnly({64, 1024})};
  PresegmentContext ctx;
  ctx.args = args;
  CoutCapture capture;
  EXPECT_TRUE(runPresegmentPasses(*f, ctx, DumpOptions::parse("fusion_ir(translate_welford)")));
  std::string dumped = capture.out.str();
  EXPECT_NE(dumped.find("=== fusion after translate_welford ==="), std::string::npos) << dumped;
  EXPECT_EQ(dumped.find("fusion after reduction_inits"), std::string::npos) << dumped;
  EXPECT_NE(ctx.welfordNote.find("translated"), std::string::npos) << ctx.welfordNote;
  for (const ir::Expr* e : f->exprs()) EXPECT_FALSE(e->isA<ir::WelfordOp>()) << e->toString();
}

// Empty work removed: the translation is not tried; with nothing to do, nothing changes.
TEST(Presegment, EmptyWorkSkipsTheTranslation) {
  auto f = varMean();
  std::vector<eval::Argument> args = {shapeOnly({4, 0})};
  PresegmentContext ctx;
  ctx.args = args;
  EXPECT_TRUE(runPresegmentPasses(*f, ctx, DumpOptions()));
  EXPECT_TRUE(ctx.removedEmptyWork);
  EXPECT_EQ(ctx.welfordNote, "");

  auto g = varMean();
  PresegmentContext off;
  off.translateWelford = false;
  std::vector<eval::Argument> full = {shapeOnly({4, 8})};
  off.args = full;
  EXPECT_FALSE(runPresegmentPasses(*g, off, DumpOptions()));
}

// segmentFusion runs the list: its result refers to the rewritten copy only when a pass changed
// the fusion.
TEST(Presegment, SegmentFusionSegmentsTheRewrittenCopy) {
  auto f = varMean();
  std::vector<eval::Argument> args = {shapeOnly({64, 1024})};
  SegmentedFusion translated = segmentFusion(*f, args);
  EXPECT_TRUE(translated.rewritten());
  SegmenterOptions no_translation;
  no_translation.translateWelford = false;
  SegmentedFusion kept = segmentFusion(*f, args, no_translation);
  EXPECT_FALSE(kept.rewritten());
  EXPECT_EQ(&kept.original(), f.get());
}

}  // namespace
}  // namespace loom::segmenter
