// SPDX-License-Identifier: Apache-2.0
// Rules of the sorts pass and of the SortRow indexing, checked on the printed kernel IR: the
// sort's TensorOp takes the place of its row's loop and becomes one row call whose bases and
// strides are the parameters'; schedules one thread cannot sort (a parallel, split or outer
// sort ID, producers or consumers inlined into the sort loop, rows in registers) are user errors.
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
}

}  // namespace
}  // namespace loom::test
