// SPDX-License-Identifier: Apache-2.0
// Rule tests of the vectorize and unswitch passes, unrolled codegen and the index type rule.
#include <gtest/gtest.h>

#include "loom/codegen/kernel_codegen.h"
#include "loom/lower/index_type.h"
#include "loom/transform/cache.h"
#include "loom/transform/schedule.h"
#include "lower/lower_test_util.h"

namespace loom::test {
namespace {

using ir::ParallelType;

// T3 = T1 * 2 with T1 = cacheAfter(T0) and T2 = cacheBefore(T3) over [16] f32:
// [ceilDiv(16, 4), Vectorize 4] on the input cache and the output.
std::unique_ptr<ir::Fusion> vectorizedCopy(int64_t width) {
  auto f = std::make_unique<ir::Fusion>();
  ir::FusionGuard guard(f.get());
  // 18 is not a multiple of the width, so the last vector's predicate stays (a divisible size
  // has its predicates proven away by eliminate_predicates).
  auto* x = ops::TensorBuilder().shape({18}).build();
  f->addInput(x);
  auto* out = ops::mul(x, 2.0);
  f->addOutput(out);
  auto* xc = transform::cacheAfter(x);
  transform::cacheBefore(out);
  out->split(0, width);
  transform::propagateTransforms(out);
  out->axis(1)->parallelize(ParallelType::Vectorize);
  xc->axis(1)->parallelize(ParallelType::Vectorize);
  transform::inlineMost(*f);
  return f;
}

// vectorize turns a Vectorize loop of one parameter<->local copy into one VectorCopy starting at
// lane 0, guarded by the predicate of the last lane; the math loop between registers stays.
TEST(LowerLoops, VectorizeCopiesWholeVectors) {
  auto f = vectorizedCopy(4);
  auto ba = lowerAround(*f, "vectorize");
  EXPECT_NE(ba.before.find("for i1 in vectorize 0 .. 4:"), std::string::npos) << ba.before;
  EXPECT_EQ(ba.after,
            "kernel loom_kernel(T0 : f32[1], T1 : f32[1])\n"
            "  for i0 in 0 .. 5:\n"
            "    alloc T2 : f32 local[4]\n"
            "    if (((i0 * 4) + 3) < 18):\n"
            "      T2[(0 * 1) +: 4] = T0[((i0 * 4) + 0) +: 4]\n"
            "    alloc T3 : f32 local[4]\n"
            "    for i2 in 0 .. 4:\n"
            "      if (((i0 * 4) + i2) < 18):\n"
            "        T3[(i2 * 1)] = (T2[(i2 * 1)] * 2.0)\n"
            "    if (((i0 * 4) + 3) < 18):\n"
            "      T1[((i0 * 4) + 0) +: 4] = T3[(0 * 1) +: 4]\n")
      << ba.after;
}

// A vector of more than 16 bytes is a user error naming the buffer and the byte count.
TEST(LowerLoops, VectorizeWidthOver16BytesIsAnError) {
  auto f = vectorizedCopy(8);
  try {
    lower::lowerFusion(*f, DumpOptions());
    ADD_FAILURE() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("moves 32 bytes"), std::string::npos) << e.what();
  }
}

// unswitch hoists the inner predicate, evaluated at the unswitched loop's last iteration, into
// one check around an unpredicated copy, with the predicated loop as the else branch.
TEST(LowerLoops, UnswitchHoistsPredicates) {
  auto f = splitPointwise();  // [ceilDiv(10, 4), 4], non-divisible
  f->outputs()[0]->as<ir::TensorView>()->axis(1)->parallelize(ParallelType::Unswitch);
  auto ba = lowerAround(*f, "unswitch");
  EXPECT_EQ(ba.after,
            "kernel loom_kernel(T0 : f32[1], T2 : f32[1])\n"
            "  for i0 in 0 .. 3:\n"
            "    if (((i0 * 4) + (4 + -1)) < 10):\n"
            "      for i1 in unswitch 0 .. 4:\n"
            "        alloc T1 : f32 local[1]\n"
            "        tensor T1 = exp(T0)\n"
            "        tensor T2 = mul(T1, 2.0)\n"
            "    else:\n"
            "      for i1 in unswitch 0 .. 4:\n"
            "        alloc T1 : f32 local[1]\n"
            "        if (((i0 * 4) + i1) < 10):\n"
            "          tensor T1 = exp(T0)\n"
            "        if (((i0 * 4) + i1) < 10):\n"
            "          tensor T2 = mul(T1, 2.0)\n")
      << ba.after;
}

// Unroll loops are printed with `#pragma unroll`, and an Int32 kernel takes Tensor<T, N, int>.
TEST(LowerLoops, UnrollPragmaAndInt32Params) {
  auto f = splitPointwise();
  f->outputs()[0]->as<ir::TensorView>()->axis(1)->parallelize(ParallelType::Unroll);
  auto kernel = lower::lowerFusion(*f, DumpOptions());
  kernel->indexType = DataType::Int32;
  std::string text = codegen::generateKernel(*kernel).kernelText;
  EXPECT_NE(text.find("#pragma unroll\n    for (int i1 = 0; i1 < 4; ++i1)"), std::string::npos)
      << text;
  EXPECT_NE(text.find("loom::Tensor<float, 1, int> T0"), std::string::npos) << text;
  EXPECT_EQ(text.find("long long"), std::string::npos) << text;
}

// Int32 indices when every tensor's element count and largest offset are below 2^30, else Int64
// (strided views count by their span, empty tensors never need an index).
TEST(LowerLoops, IndexTypeSelection) {
  using lower::TensorExtent;
  auto pick = [](std::vector<TensorExtent> t) { return lower::selectIndexType(t); };
  const int64_t big = int64_t{1} << 30;
  EXPECT_EQ(pick({{{1024, 1024}, {1024, 1}}}), DataType::Int32);
  EXPECT_EQ(pick({{{big - 1}, {1}}}), DataType::Int32);
  EXPECT_EQ(pick({{{big}, {1}}}), DataType::Int64);
  EXPECT_EQ(pick({{{1 << 16, 1 << 15}, {1 << 15, 1}}, {{4}, {1}}}), DataType::Int64);
  EXPECT_EQ(pick({{{2, 4}, {big, 1}}}), DataType::Int64);      // few elements, far apart
  EXPECT_EQ(pick({{{big * 4}, {0}}}), DataType::Int64);        // broadcast but huge count
  EXPECT_EQ(pick({{{0, big * 4}, {big * 4, 1}}}), DataType::Int32);  // empty
  EXPECT_EQ(pick({}), DataType::Int32);
}

// T2 = sum(T0[8, 8], dim 0) * 2 with T1 = the sum kept local and scheduled [i1/4, r0, 4]: its
// vector lane sits inside the reduction loop. T1 is inlined into T2 at position 1.
std::unique_ptr<ir::Fusion> laneInsideReduction() {
  auto f = std::make_unique<ir::Fusion>();
  ir::FusionGuard guard(f.get());
  auto* x = ops::TensorBuilder().shape({8, 8}).build();
  f->addInput(x);
  auto* sum = ops::sum(x, {0});
  auto* out = ops::mul(sum, 2.0);
  f->addOutput(out);
  out->split(0, 4);
  sum->split(1, 4);
  sum->reorder(std::unordered_map<int64_t, int64_t>{{0, 1}, {1, 0}});  // [i1/4, r0, 4]
  transform::inlineAt(sum, 1);
  return f;
}

// reductions: a serial reduction whose output keeps an iteration loop inside its reduction loop
// accumulates in its own buffer, initialized by a copy of the inner iteration loop placed before
// the reduction loop; indexing reads and writes the buffer by the lane index (no modulo).
TEST(LowerLoops, IterationInsideReductionAccumulatesInBuffer) {
  auto f = laneInsideReduction();
  std::string nests = lowerAround(*f, "reductions").after;
  EXPECT_NE(nests.find("    var init"), std::string::npos) << nests;
  EXPECT_NE(nests.find("T1 += T1 = sum(T0)"), std::string::npos) << nests;
  EXPECT_NE(nests.find("T1 <- init"), std::string::npos) << nests;
  std::string indexed = lowerAround(*f, "indexing").after;
  EXPECT_EQ(indexed.find("%"), std::string::npos) << indexed;
  EXPECT_NE(indexed.find("T1[(i2 * 1)] = (T1[(i2 * 1)] + T0["), std::string::npos) << indexed;
}

// The same with a thread dim among the iteration loops inside the serial reduction loop
// (T1 [r0, i1/4 (TIDx), 4]: the inner-outer-persistent scheduler's column partials, each thread
// summing its columns over the rows): each thread keeps its own buffer, indexed by the lane alone.
TEST(LowerLoops, ThreadDimInsideReductionAccumulatesInBuffer) {
  auto f = std::make_unique<ir::Fusion>();
  {
    ir::FusionGuard guard(f.get());
    auto* x = ops::TensorBuilder().shape({8, 64}).build();
    f->addInput(x);
    auto* sum = ops::sum(x, {0});
    auto* out = ops::mul(sum, 2.0);
    f->addOutput(out);
    out->split(0, 4);
    transform::parallelize(out, 0, ir::ParallelType::TIDx);
    sum->split(1, 4);  // [r0, i1/4, 4]
    transform::parallelize(sum, 1, ir::ParallelType::TIDx);
  }
  std::string nests = lowerAround(*f, "reductions").after;
  EXPECT_NE(nests.find("var init"), std::string::npos) << nests;
  EXPECT_NE(nests.find("T1 += T1 = sum(T0)"), std::string::npos) << nests;
  EXPECT_NE(nests.find("T1 <- init"), std::string::npos) << nests;
  std::string indexed = lowerAround(*f, "indexing").after;
  EXPECT_EQ(indexed.find("%"), std::string::npos) << indexed;
}

}  // namespace
}  // namespace loom::test
