// SPDX-License-Identifier: Apache-2.0
// One test per lowering pass: its rule in one sentence, checked on the kernel IR text before and
// after the pass.
#include <gtest/gtest.h>

#include "lower/lower_test_util.h"

namespace loom::test {
namespace {

// expr_sort orders math only (kernel unchanged) and kernel_params adds inputs then outputs.
TEST(LowerPasses, KernelParamsInputsThenOutputs) {
  auto f = splitPointwise();
  auto ba = lowerAround(*f, "kernel_params");
  EXPECT_EQ(ba.before, "kernel loom_kernel()\n");
  EXPECT_EQ(ba.after, "kernel loom_kernel(T0 : f32[1], T2 : f32[1])\n");
}

// loop_nests opens one loop per loop ID and shares the compute-at loops of a producer with its
// consumer.
TEST(LowerPasses, LoopNestsShareInlinedLoops) {
  auto f = splitPointwise();
  auto ba = lowerAround(*f, "loop_nests");
  EXPECT_EQ(ba.after,
            "kernel loom_kernel(T0 : f32[1], T2 : f32[1])\n"
            "  for i0 in 0 .. 3:\n"
            "    for i1 in 0 .. 4:\n"
            "      tensor T1 = exp(T0)\n"
            "      tensor T2 = mul(T1, 2.0)\n");
}

// loop_nests turns TIDx/BIDx loop IDs into parallel loops.
TEST(LowerPasses, LoopNestsParallelLoops) {
  auto f = blockSum();
  auto ba = lowerAround(*f, "loop_nests");
  EXPECT_EQ(ba.after,
            "kernel loom_kernel(T0 : f32[2], T1 : f32[1])\n"
            "  for i0 in BIDx 0 .. 6:\n"
            "    for i1 in TIDx 0 .. 8:\n"
            "      tensor T1 = sum(T0)\n");
}

// allocations declares an inlined intermediate inside its innermost compute-at loop, sized by
// the loop IDs right of the compute-at position (none here: one element).
TEST(LowerPasses, AllocationsInsideComputeAtLoop) {
  auto f = splitPointwise();
  auto ba = lowerAround(*f, "allocations");
  EXPECT_EQ(ba.after,
            "kernel loom_kernel(T0 : f32[1], T2 : f32[1])\n"
            "  for i0 in 0 .. 3:\n"
            "    for i1 in 0 .. 4:\n"
            "      alloc T1 : f32 local[1]\n"
            "      tensor T1 = exp(T0)\n"
            "      tensor T2 = mul(T1, 2.0)\n");
}

// allocations sizes a partially inlined intermediate by the loop IDs right of its position.
TEST(LowerPasses, AllocationsSizeFromLoopsRightOfComputeAt) {
  auto f = splitPointwise();
  ir::FusionGuard guard(f.get());
  auto* t1 = f->outputs()[0]->definition()->input(0)->as<ir::TensorView>();
  transform::inlineAt(t1, 1);
  std::string after = lowerAround(*f, "allocations").after;
  EXPECT_NE(after.find("  for i0 in 0 .. 3:\n    alloc T1 : f32 local[4]\n"), std::string::npos)
      << after;
}

// reductions declares the accumulator before the outermost reduction loop, accumulates inside,
// and block-reduces and writes the result after it.
TEST(LowerPasses, ReductionsAccumulateThenBlockReduce) {
  auto f = blockSum();
  auto ba = lowerAround(*f, "reductions");
  EXPECT_EQ(ba.after,
            "kernel loom_kernel(T0 : f32[2], T1 : f32[1])\n"
            "  for i0 in BIDx 0 .. 6:\n"
            "    var acc2 : f32 = 0.0\n"
            "    for i1 in TIDx 0 .. 8:\n"
            "      acc2 += T1 = sum(T0)\n"
            "    acc2 = block_sum(acc2, init=0.0, dims=x)\n"
            "    T1 <- acc2 of T1 = sum(T0)\n");
}

// predicates guards ops of non-divisible splits by their logical index being below the extent.
TEST(LowerPasses, PredicatesMaskSplitRemainder) {
  auto f = splitPointwise();
  auto ba = lowerAround(*f, "predicates");
  EXPECT_EQ(ba.after,
            "kernel loom_kernel(T0 : f32[1], T2 : f32[1])\n"
            "  for i0 in 0 .. 3:\n"
            "    for i1 in 0 .. 4:\n"
            "      alloc T1 : f32 local[1]\n"
            "      if (((i0 * 4) + i1) < 10):\n"
            "        tensor T1 = exp(T0)\n"
            "      if (((i0 * 4) + i1) < 10):\n"
            "        tensor T2 = mul(T1, 2.0)\n");
}

// predicates lets only thread 0 write a block reduction's result to global memory.
TEST(LowerPasses, PredicatesSingleWriterOfBlockReduction) {
  auto f = blockSum();
  std::string after = lowerAround(*f, "predicates").after;
  EXPECT_NE(after.find("    if (threadIdx.x == 0):\n      T1 <- acc2"), std::string::npos) << after;
}

// indexing reads parameters at logical index times runtime stride and local buffers densely.
TEST(LowerPasses, IndexingStridesAndLocalOffsets) {
  auto f = splitPointwise();
  auto ba = lowerAround(*f, "indexing");
  EXPECT_EQ(ba.after,
            "kernel loom_kernel(T0 : f32[1], T2 : f32[1])\n"
            "  for i0 in 0 .. 3:\n"
            "    for i1 in 0 .. 4:\n"
            "      alloc T1 : f32 local[1]\n"
            "      if (((i0 * 4) + i1) < 10):\n"
            "        T1[0] = exp(T0[(((i0 * 4) + i1) * T0.stride[0])])\n"
            "      if (((i0 * 4) + i1) < 10):\n"
            "        T2[(((i0 * 4) + i1) * T2.stride[0])] = (T1[0] * 2.0)\n");
}

// indexing turns an accumulation into acc = acc op input and the write into a store of acc.
TEST(LowerPasses, IndexingReductions) {
  auto f = blockSum();
  std::string after = lowerAround(*f, "indexing").after;
  EXPECT_NE(after.find("acc2 = (acc2 + T0[((i0 * T0.stride[0]) + (i1 * T0.stride[1]))])"),
            std::string::npos)
      << after;
  EXPECT_NE(after.find("T1[(i0 * T1.stride[0])] = acc2"), std::string::npos) << after;
}

// simplify removes multiplications by one in index math.
TEST(LowerPasses, SimplifyDropsTimesOne) {
  auto f = splitPointwise();
  ir::FusionGuard guard(f.get());
  auto* t1 = f->outputs()[0]->definition()->input(0)->as<ir::TensorView>();
  transform::inlineAt(t1, 1);
  auto ba = lowerAround(*f, "simplify");
  EXPECT_NE(ba.before.find("T1[(i1 * 1)]"), std::string::npos) << ba.before;
  EXPECT_EQ(ba.after.find("* 1)"), std::string::npos) << ba.after;
  EXPECT_NE(ba.after.find("T1[i1]"), std::string::npos) << ba.after;
}

// syncs puts a block_sync between a write of a shared buffer and a later read of it.
TEST(LowerPasses, SyncsBetweenSharedWriteAndRead) {
  ir::Fusion fusion;
  lower::LowerContext ctx(fusion);
  kir::Kernel k;
  kir::Buffer* s = k.createBuffer();
  s->name = "T5";
  s->kind = kir::BufferKind::Shared;
  s->size = k.constInt(4);
  kir::Buffer* out = k.createBuffer();
  out->name = "T6";
  auto* tid = k.create<kir::NamedScalar>("threadIdx.x");
  k.body.push_back(k.create<kir::Store>(s, tid, k.create<kir::Const>(DataType::Float32, 1.0)));
  k.body.push_back(k.create<kir::Store>(out, tid, k.create<kir::Load>(s, k.constInt(3))));
  std::string before = kir::toString(k);
  EXPECT_TRUE(lower::syncs(k, ctx));
  EXPECT_EQ(before,
            "kernel loom_kernel()\n"
            "  T5[threadIdx.x] = 1.0\n"
            "  T6[threadIdx.x] = T5[3]\n");
  EXPECT_EQ(kir::toString(k),
            "kernel loom_kernel()\n"
            "  T5[threadIdx.x] = 1.0\n"
            "  block_sync\n"
            "  T6[threadIdx.x] = T5[3]\n");
}

// Unsupported exprs are user errors naming the op and the tensor.
TEST(LowerPasses, ReshapeIsAClearError) {
  ir::Fusion fusion;
  ir::FusionGuard guard(&fusion);
  auto* x = ops::TensorBuilder().shape({4, 8}).build();
  fusion.addInput(x);
  fusion.addOutput(ops::reshape(x, {32}));
  try {
    lower::lowerFusion(fusion, DumpOptions());
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("reshape"), std::string::npos) << msg;
    EXPECT_NE(msg.find("not supported by the kernel executor yet"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace loom::test
