// SPDX-License-Identifier: Apache-2.0
// Rules of the sorts pass and of the SortRow indexing, checked on the printed kernel IR: the
// sort's TensorOp takes the place of its row's loop and becomes one row call whose bases and
// strides are the parameters'; schedules one thread cannot sort (a parallel, split or outer
// sort ID, producers or consumers inlined into the sort loop, rows in registers) are user errors;
// a block-wide sort takes the place of the two loops of its split sort ID.
#include <gtest/gtest.h>

#include <unordered_map>

#include "loom/codegen/kernel_codegen.h"
#include "lower/lower_test_util.h"

namespace loom::test {
namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// [rows on BIDx, sort serial]: the loop of the sort dim goes, the op stays in the row's scope.
TEST(SortsPass, TheOpTakesThePlaceOfItsRowLoop) {
  ir::Fusion f;
  ir::FusionGuard guard(&f);
  auto* x = ops::TensorBuilder().shape({6, 8}).build();
  f.addInput(x);
  auto* out = ops::argsort(x, 1);
  f.addOutput(out);
  out->axis(0)->parallelize(ir::ParallelType::BIDx);
  BeforeAfter t = lowerAround(f, "sorts");
  EXPECT_TRUE(has(t.before, "    for i1 in 0 .. 8:\n      tensor T1 = argsort(T0)\n")) << t.before;
  EXPECT_TRUE(has(t.after, "  for i0 in BIDx 0 .. 6:\n    tensor T1 = argsort(T0)\n")) << t.after;
  EXPECT_FALSE(has(t.after, "for i1")) << t.after;
}

// After indexing: the row starts of input and outputs at index 0 of the sort dim, the input's
// stride and size along it, k from the values' size.
TEST(SortsPass, IndexingMakesOneRowCall) {
  ir::Fusion f;
  ir::FusionGuard guard(&f);
  auto* x = ops::TensorBuilder().shape({-1, -1}).contiguity({false, false}).build();
  f.addInput(x);
  ops::TopKResult r = ops::topk(x, 3, 0, /*largest=*/false);
  f.addOutput(r.values);
  f.addOutput(r.indices);
  r.values->reorder(std::unordered_map<int64_t, int64_t>{{0, 1}});
  r.values->axis(0)->parallelize(ir::ParallelType::TIDx);
  transform::propagateTransforms(r.values);
  auto kernel = lower::lowerFusion(f);
  const std::string text = kir::toString(*kernel);
  // The outputs are dense (their innermost dim needs no stride), the input is not.
  EXPECT_TRUE(has(text,
                  "  for i0 in TIDx 0 .. T0.size[1]:\n"
                  "    T1[i0 : step T1.stride[0]], T2[i0 : step T2.stride[0]] = "
                  "topk_row(T0[(i0 * T0.stride[1]) : step T0.stride[0]], n=T0.size[0], "
                  "k=T1.size[0], largest=false)"))
      << text;
  const std::string code = codegen::generateKernel(*kernel).kernelText;
  EXPECT_TRUE(has(code, "loom::topkRow<float, long long>(&T0[")) << code;
}

// A block-wide sort ([rows on BIDx, sort split into serial and TIDx], blockRow set): the op
// takes the place of both loops of its sort dim, stays unguarded, and its row call names the
// shared capacity; codegen passes the block's shared tensors.
TEST(SortsPass, BlockSortTakesThePlaceOfBothSortLoops) {
  ir::Fusion f;
  ir::FusionGuard guard(&f);
  auto* x = ops::TensorBuilder().shape({6, 100}).build();
  f.addInput(x);
  auto* out = ops::argsort(x, 1);
  f.addOutput(out);
  out->split(1, 64);
  out->axis(0)->parallelize(ir::ParallelType::BIDx);
  out->axis(2)->parallelize(ir::ParallelType::TIDx);
  out->definition()->as<ir::ArgsortOp>()->setBlockRow(128);
  BeforeAfter t = lowerAround(f, "sorts");
  EXPECT_TRUE(has(t.after, "  for i0 in BIDx 0 .. 6:\n    tensor T1 = argsort(T0)\n")) << t.after;
  EXPECT_FALSE(has(t.after, "TIDx 0 .. 64:")) << t.after;
  auto kernel = lower::lowerFusion(f);
  const std::string text = kir::toString(*kernel);
  EXPECT_TRUE(has(text, "descending=false, block=128)")) << text;
  EXPECT_FALSE(has(text, "if ")) << text;
  // 128 f32 keys and 128 int indices.
  EXPECT_EQ(kernel->sharedTensorBytes, 128 * 4 + 128 * 4);
  const std::string code = codegen::generateKernel(*kernel).kernelText;
  EXPECT_TRUE(has(code, "loom::argsortRowBlock<float, long long, 128>(&T0[")) << code;
  EXPECT_TRUE(has(code, "loom_smem + loom_smem_tensors + 0);")) << code;
}

TEST(SortsPass, SchedulesOneThreadCannotSortAreUserErrors) {
  {
    ir::Fusion f;
    ir::FusionGuard guard(&f);
    auto* x = ops::TensorBuilder().shape({6, 8}).build();
    f.addInput(x);
    auto* out = ops::argsort(x, 1);
    f.addOutput(out);
    out->axis(1)->parallelize(ir::ParallelType::TIDx);
    expectLoweringError(f, "which is parallelized on TIDx; one thread sorts a whole row");
  }
  {
    ir::Fusion f;
    ir::FusionGuard guard(&f);
    auto* x = ops::TensorBuilder().shape({6, 8}).build();
    f.addInput(x);
    auto* out = ops::argsort(x, 1);
    f.addOutput(out);
    out->split(1, 4);
    expectLoweringError(f, "which the schedule split or merged");
  }
  {
    ir::Fusion f;
    ir::FusionGuard guard(&f);
    auto* x = ops::TensorBuilder().shape({6, 8}).build();
    f.addInput(x);
    auto* out = ops::argsort(x, 0);  // the sort ID stays outside the loop of dim 1
    f.addOutput(out);
    expectLoweringError(f, "the sort dim must be the innermost loop of the op");
  }
  {
    // A consumer inlined into the sort loop would read the row before it is sorted.
    ir::Fusion f;
    ir::FusionGuard guard(&f);
    auto* x = ops::TensorBuilder().shape({6, 8}).build();
    f.addInput(x);
    auto* s = ops::argsort(x, 1);
    s->setMemoryType(ir::MemoryType::Global);
    auto* out = ops::add(s, int64_t(1));
    f.addOutput(out);
    transform::inlineMost(f);
    expectLoweringError(f, "shares the loop of its sort dim");
  }
  {
    // Rows kept in registers: the row call reads and writes global memory.
    ir::Fusion f;
    ir::FusionGuard guard(&f);
    auto* x = ops::TensorBuilder().shape({6, 8}).build();
    f.addInput(x);
    auto* s = ops::argsort(x, 1);
    auto* out = ops::add(s, int64_t(1));
    f.addOutput(out);
    expectLoweringError(f,
                        "writes to T1 in local memory; a sort reads and writes whole rows in "
                        "global memory");
  }
  {
    // A block-wide sort whose sort dim is not split onto TIDx.
    ir::Fusion f;
    ir::FusionGuard guard(&f);
    auto* x = ops::TensorBuilder().shape({6, 100}).build();
    f.addInput(x);
    auto* out = ops::argsort(x, 1);
    f.addOutput(out);
    out->definition()->as<ir::ArgsortOp>()->setBlockRow(128);
    expectLoweringError(f, "split into a serial loop and a TIDx loop");
  }
}

}  // namespace
}  // namespace loom::test
