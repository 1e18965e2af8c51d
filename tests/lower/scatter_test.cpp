// SPDX-License-Identifier: Apache-2.0
// Rules of the atomic scatter_add in the indexing pass (indexed_ops.h, appendAtomicScatters),
// checked on the printed kernel IR and the generated code: the loops over out copy self only,
// one ScatterAdd ends the kernel, which is cooperative, with the gridSync words and one
// range-check site; an unmarked scatter_add keeps the per-element search.
#include <gtest/gtest.h>

#include "loom/codegen/kernel_codegen.h"
#include "lower/lower_test_util.h"

namespace loom::test {
namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// out = x.scatter_add(0, idx, src) with out [8, 6] on [BIDx 2, serial, TIDx 32].
std::unique_ptr<ir::Fusion> scatterFusion(bool atomic) {
  auto f = std::make_unique<ir::Fusion>();
  ir::FusionGuard guard(f.get());
  auto* x = ops::TensorBuilder().shape({8, 6}).build();
  auto* idx = ops::TensorBuilder().shape({40, 6}).dtype(DataType::Int64).build();
  auto* src = ops::TensorBuilder().shape({40, 6}).build();
  for (ir::TensorView* tv : {x, idx, src}) f->addInput(tv);
  auto* out = ops::scatterAdd(x, 0, idx, src);
  f->addOutput(out);
  out->flatten(0, 1);
  out->split(0, 32);
  out->outerSplit(0, 2);
  out->axis(0)->parallelize(ir::ParallelType::BIDx);
  out->axis(2)->parallelize(ir::ParallelType::TIDx);
  out->definition()->as<ir::ScatterOp>()->setAtomic(atomic);
  return f;
}

TEST(AtomicScatter, CopiesSelfThenOneScatterAddEndsTheKernel) {
  auto f = scatterFusion(true);
  auto kernel = lower::lowerFusion(*f);
  const std::string text = kir::toString(*kernel);
  EXPECT_FALSE(has(text, " .. 40:")) << "no search of the index inside the copy\n" << text;
  const size_t add = text.find("T3 += scatter_atomic(T1, T2, dim=0, sync=gsync, check=0)\n");
  ASSERT_NE(add, std::string::npos) << text;
  EXPECT_EQ(text.substr(add).find('\n') + 1, text.size() - add) << "the last statement\n" << text;
  EXPECT_TRUE(kernel->cooperative);
  ASSERT_EQ(kernel->gridScratch.size(), 1u);
  EXPECT_EQ(kernel->gridScratch[0].name, "gsync");
  EXPECT_TRUE(kernel->gridScratch[0].perLaunch);
  ASSERT_EQ(kernel->indexChecks.size(), 1u);
  EXPECT_EQ(kernel->indexChecks[0].op, "scatter_add");
  const std::string code = codegen::generateKernel(*kernel).kernelText;
  EXPECT_TRUE(has(code, "loom::scatterAddAtomic(T3, T1, T2, 0, gsync, loom_index_error, 0);"))
      << code;
}

TEST(AtomicScatter, UnmarkedScatterAddSearches) {
  auto f = scatterFusion(false);
  auto kernel = lower::lowerFusion(*f);
  const std::string text = kir::toString(*kernel);
  EXPECT_FALSE(has(text, "scatter_atomic")) << text;
  EXPECT_TRUE(has(text, " .. 40:")) << "each element searches the index\n" << text;
  EXPECT_FALSE(kernel->cooperative);
  EXPECT_TRUE(kernel->gridScratch.empty());
}

}  // namespace
}  // namespace loom::test
