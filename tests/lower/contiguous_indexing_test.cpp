// SPDX-License-Identifier: Apache-2.0
// Rule tests of contiguity in the indexing pass: a contiguous innermost dim is indexed without a
// stride, and dims contiguous with each other whose indices come from one merged loop index
// (z / e and z % e) are indexed by z times the innermost one's stride; declared non-contiguous
// dims keep the division, the modulo and their strides.
#include <gtest/gtest.h>

#include "lower/lower_test_util.h"

namespace loom::test {
namespace {

using ir::ParallelType;

// out = x * 2 over x[-1 x rank] with the given contiguity (allocation order) and stride order;
// `merge` schedules the output's loop domain, then it is split by 128 on BIDx/TIDx.
std::string indexedKernel(int64_t rank, ir::Contiguity contiguity,
                          std::vector<int64_t> stride_order,
                          const std::function<void(ir::TensorView*)>& merge) {
  ir::Fusion f;
  ir::FusionGuard guard(&f);
  auto builder = ops::TensorBuilder().rank(rank);
  if (!stride_order.empty()) builder.strideOrder(stride_order);
  auto* x = builder.build();
  if (!contiguity.empty()) x->setContiguity(contiguity);
  f.addInput(x);
  auto* out = ops::mul(x, 2.0);
  f.addOutput(out);
  merge(out);
  out->split(0, 128);
  out->axis(0)->parallelize(ParallelType::BIDx);
  out->axis(1)->parallelize(ParallelType::TIDx);
  transform::propagateTransforms(out);
  transform::inlineMost(f);
  return lowerAround(f, "indexing").after;
}

void mergeAll2(ir::TensorView* tv) { tv->merge(0); }

// [t, t]: the merged index is the offset itself, for the input and the (dense) output.
TEST(ContiguousIndexing, ContiguousMergedDimsAreOneLinearOffset) {
  std::string text = indexedKernel(2, {}, {}, mergeAll2);
  EXPECT_NE(text.find("T1[((i0 * 128) + i1)] = (T0[((i0 * 128) + i1)] * 2.0)"),
            std::string::npos)
      << text;
}

// [f, f]: nothing is promised, so the merged index is split back and every dim has its stride.
TEST(ContiguousIndexing, NonContiguousDimsKeepDivModAndStrides) {
  std::string text = indexedKernel(2, {false, false}, {}, mergeAll2);
  EXPECT_NE(text.find("T0[(((((i0 * 128) + i1) / T0.size[1]) * T0.stride[0]) + "
                      "((((i0 * 128) + i1) % T0.size[1]) * T0.stride[1]))]"),
            std::string::npos)
      << text;
  // The output is allocated by Loom, densely: still one linear offset.
  EXPECT_NE(text.find("T1[((i0 * 128) + i1)] ="), std::string::npos) << text;
}

// [f, t] (rows of a column slice): the inner dim needs no stride, the outer keeps its own.
TEST(ContiguousIndexing, OnlyInnermostContiguous) {
  std::string text = indexedKernel(2, {false, true}, {}, mergeAll2);
  EXPECT_NE(text.find("T0[(((((i0 * 128) + i1) / T0.size[1]) * T0.stride[0]) + "
                      "(((i0 * 128) + i1) % T0.size[1]))]"),
            std::string::npos)
      << text;
}

// [t, f] (every other column): the rows are dense with the strided columns, so one linear index
// times the inner dim's stride.
TEST(ContiguousIndexing, ContiguousRunOverAStridedInnerDim) {
  std::string text = indexedKernel(2, {true, false}, {}, mergeAll2);
  EXPECT_NE(text.find("T0[(((i0 * 128) + i1) * T0.stride[1])]"), std::string::npos) << text;
}

// Three dims merged either way round fold into one offset: merge(merge(0, 1), 2) and
// merge(0, merge(1, 2)).
TEST(ContiguousIndexing, NestedMergesFoldBothWays) {
  for (bool inner_first : {false, true}) {
    std::string text = indexedKernel(3, {}, {}, [&](ir::TensorView* tv) {
      if (inner_first) {
        tv->merge(1)->merge(0);
      } else {
        tv->merge(0)->merge(0);
      }
    });
    EXPECT_NE(text.find("= (T0[((i0 * 128) + i1)] * 2.0)"), std::string::npos)
        << "inner_first " << inner_first << "\n" << text;
  }
  // With the middle dim not contiguous with the inner one, only the outer pair folds.
  std::string text = indexedKernel(3, {true, false, true}, {},
                                   [](ir::TensorView* tv) { tv->merge(0)->merge(0); });
  EXPECT_NE(text.find("T0[(((((i0 * 128) + i1) / T0.size[2]) * T0.stride[1]) + "
                      "(((i0 * 128) + i1) % T0.size[2]))]"),
            std::string::npos)
      << text;
}

// A transposed input (allocation [I1, I0], contiguous) is read in allocation order: I0 is its
// innermost dim (no stride), I1 keeps its stride, and the two do not fold (wrong order).
TEST(ContiguousIndexing, PermutedAllocationIndexesInAllocationOrder) {
  std::string text = indexedKernel(2, {}, {1, 0}, mergeAll2);
  EXPECT_NE(text.find("T0[(((((i0 * 128) + i1) % T0.size[1]) * T0.stride[1]) + "
                      "(((i0 * 128) + i1) / T0.size[1]))]"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace loom::test
