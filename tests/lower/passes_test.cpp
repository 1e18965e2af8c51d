// SPDX-License-Identifier: Apache-2.0
// One test per lowering pass: its rule in one sentence, checked on the kernel IR text before and
// after the pass.
#include <gtest/gtest.h>

#include "lower/lower_test_util.h"
#include "lower/index_compute.h"
#include "loom/transform/cache.h"

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

// allocations refuses a register buffer read by other threads: neg(x[8]) on TIDx over its 8
// elements, not inlined, read by a consumer whose TIDx runs over the 2 outer pieces of its split.
TEST(LowerPasses, AllocationsRefuseRegistersReadAcrossThreads) {
  auto f = std::make_unique<ir::Fusion>();
  ir::FusionGuard guard(f.get());
  auto* x = ops::TensorBuilder().shape({8}).build();
  f->addInput(x);
  auto* t = ops::neg(x);
  auto* out = ops::add(t, 1.0);
  f->addOutput(out);
  t->axis(0)->parallelize(ir::ParallelType::TIDx);
  out->split(0, 4, /*inner_split=*/false);
  out->axis(0)->parallelize(ir::ParallelType::TIDx);
  try {
    lower::lowerFusion(*f);
    FAIL() << "lowering accepted registers read across threads";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "local tensor T1 is held in the registers of the threads of its loop i1 "
                  "(TIDx), which its consumer T2 neither shares nor runs over the same index "
                  "space on TIDx"),
              std::string::npos)
        << e.what();
  }
  // Inlined into its consumer, the same buffer is read by the thread that wrote it.
  transform::propagateTransforms(out);
  transform::inlineMost(*f);
  EXPECT_NO_THROW(lower::lowerFusion(*f));
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

// T2 = exp(T0) * 2 over [n] f32 (symbolic when n < 0) as [n / 512, 128 TIDx, 4] when `three`
// (a softmax-like exact split: 512 = 128 * 4), else [ceilDiv(n, 4), 4]; fully inlined.
std::unique_ptr<ir::Fusion> splitPointwiseOf(int64_t n, bool three) {
  auto f = std::make_unique<ir::Fusion>();
  ir::FusionGuard guard(f.get());
  auto* x = n < 0 ? ops::TensorBuilder().rank(1).build() : ops::TensorBuilder().shape({n}).build();
  f->addInput(x);
  auto* out = ops::mul(ops::exp(x), 2.0);
  f->addOutput(out);
  out->split(0, 4);
  if (three) {
    out->split(0, 128);
    out->axis(1)->parallelize(ir::ParallelType::TIDx);
  }
  transform::propagateTransforms(out);
  transform::inlineMost(*f);
  return f;
}

// eliminate_predicates drops `index < extent` when the split factors divide the extent and the
// TIDx launch equals the loop extent: max(((1 * 128 + 127) * 4) + 3) = 1023 < 1024.
TEST(LowerPasses, EliminatePredicatesExactSplit) {
  auto f = splitPointwiseOf(1024, true);
  auto ba = lowerAround(*f, "eliminate_predicates");
  EXPECT_NE(ba.before.find("if (((((i0 * 128) + i1) * 4) + i2) < 1024):"), std::string::npos)
      << ba.before;
  EXPECT_EQ(ba.after,
            "kernel loom_kernel(T0 : f32[1], T2 : f32[1])\n"
            "  for i0 in 0 .. 2:\n"
            "    for i1 in TIDx 0 .. 128:\n"
            "      for i2 in 0 .. 4:\n"
            "        alloc T1 : f32 local[1]\n"
            "        tensor T1 = exp(T0)\n"
            "        tensor T2 = mul(T1, 2.0)\n");
}

// A non-divisible split keeps its predicate: 3 * 4 > 10 (the remainder iterations are masked).
TEST(LowerPasses, EliminatePredicatesKeepsNonDivisibleSplit) {
  auto f = splitPointwise();
  auto ba = lowerAround(*f, "eliminate_predicates");
  EXPECT_EQ(ba.after, ba.before);
  EXPECT_NE(ba.after.find("if (((i0 * 4) + i1) < 10):"), std::string::npos) << ba.after;
  // One element short of divisible: 1023 = 2 * 128 * 4 - 1 keeps it too.
  std::string odd = lowerAround(*splitPointwiseOf(1023, true), "eliminate_predicates").after;
  EXPECT_NE(odd.find("if (((((i0 * 128) + i1) * 4) + i2) < 1023):"), std::string::npos) << odd;
}

// Runtime sizes are unknown: a split of a symbolic extent keeps its predicate.
TEST(LowerPasses, EliminatePredicatesKeepsSymbolicExtent) {
  auto f = splitPointwiseOf(-1, false);
  auto ba = lowerAround(*f, "eliminate_predicates");
  EXPECT_EQ(ba.after, ba.before);
  EXPECT_NE(ba.after.find("if (((i0 * 4) + i1) < T0.size[0]):"), std::string::npos) << ba.after;
}

// A block index over a constant launch bounds merge indices: blockIdx.x < 32 = 4 * 8 proves
// (i0 / 8) < 4 and (i0 % 8) < 8 (var_mean's rows merged onto BIDx); a launch of 40 does not.
TEST(LowerPasses, EliminatePredicatesMergedBlockIndex) {
  for (int64_t split : {0, 5}) {
    auto f = std::make_unique<ir::Fusion>();
    ir::FusionGuard guard(f.get());
    auto* x = ops::TensorBuilder().shape({4, 8}).build();
    f->addInput(x);
    auto* out = ops::neg(x);
    f->addOutput(out);
    out->merge(0);
    if (split > 0) out->split(0, split, /*inner_split=*/false);  // [5, ceilDiv(32, 5) = 7]
    out->axis(split > 0 ? 1 : 0)->parallelize(ir::ParallelType::BIDx);
    auto ba = lowerAround(*f, "eliminate_predicates");
    if (split == 0) {
      EXPECT_NE(ba.before.find("if (((i0 / 8) < 4) && ((i0 % 8) < 8)):"), std::string::npos)
          << ba.before;
      EXPECT_EQ(ba.after,
                "kernel loom_kernel(T0 : f32[2], T1 : f32[2])\n"
                "  for i0 in BIDx 0 .. 32:\n"
                "    tensor T1 = neg(T0)\n");
    } else {
      // (i0 * 7 + i1) / 8 reaches 34 / 8 = 4: kept; % 8 < 8 always holds: dropped.
      EXPECT_NE(ba.after.find(" / 8) < 4):\n"), std::string::npos) << ba.after;
      EXPECT_EQ(ba.after.find("% 8) < 8)"), std::string::npos) << ba.after;
    }
  }
}

// A TIDx loop narrower than the launch (96 of 128) keeps its `index < 96` guard, and inside that
// guard the split predicate ((i2 * 96) + i3) < 192 is proven; the 128-wide loop needs neither.
TEST(LowerPasses, EliminatePredicatesPaddedThreadLoop) {
  auto f = mismatchedThreadLoops();
  auto ba = lowerAround(*f, "eliminate_predicates");
  EXPECT_NE(ba.before.find("if (i3 < 96):\n        if (((i2 * 96) + i3) < 192):"),
            std::string::npos)
      << ba.before;
  EXPECT_EQ(ba.after,
            "kernel loom_kernel(T0 : f32[1], T1 : f32[1], T2 : f32[1], T3 : f32[1])\n"
            "  for i0 in 0 .. 2:\n"
            "    for i1 in TIDx 0 .. 128:\n"
            "      tensor T2 = neg(T0)\n"
            "  for i2 in 0 .. 2:\n"
            "    for i3 in TIDx 0 .. 96:\n"
            "      if (i3 < 96):\n"
            "        tensor T3 = neg(T1)\n");
}

// A vectorized copy whose lanes provably stay in range is unpredicated ([16] by 4); over a
// symbolic size it keeps the last lane's predicate.
TEST(LowerPasses, EliminatePredicatesOfVectorCopies) {
  for (int64_t n : {16, -1}) {
    auto f = std::make_unique<ir::Fusion>();
    ir::FusionGuard guard(f.get());
    auto* x = n < 0 ? ops::TensorBuilder().rank(1).build() : ops::TensorBuilder().shape({n}).build();
    f->addInput(x);
    auto* out = ops::mul(x, 2.0);
    f->addOutput(out);
    auto* xc = transform::cacheAfter(x);
    transform::cacheBefore(out);
    out->split(0, 4);
    transform::propagateTransforms(out);
    out->axis(1)->parallelize(ir::ParallelType::Vectorize);
    xc->axis(1)->parallelize(ir::ParallelType::Vectorize);
    transform::inlineMost(*f);
    // Up to simplify: hoist_indices would name the repeated index math.
    std::string text = kir::toString(*lower::lowerFusionUntil(*f, "simplify"));
    EXPECT_NE(text.find("T2[0 +: 4] = T0[(i0 * 4) +: 4]"), std::string::npos) << text;
    if (n > 0) {
      EXPECT_EQ(text.find("if "), std::string::npos) << text;
    } else {
      EXPECT_NE(text.find("if (((i0 * 4) + 3) < T0.size[0]):\n      T2[0 +: 4]"), std::string::npos)
          << text;
    }
  }
}

// indexing reads parameters at logical index times runtime stride, except a contiguous innermost
// dim (stride 1), and local buffers densely.
TEST(LowerPasses, IndexingStridesAndLocalOffsets) {
  auto f = splitPointwise();
  auto ba = lowerAround(*f, "indexing");
  EXPECT_EQ(ba.after,
            "kernel loom_kernel(T0 : f32[1], T2 : f32[1])\n"
            "  for i0 in 0 .. 3:\n"
            "    for i1 in 0 .. 4:\n"
            "      alloc T1 : f32 local[1]\n"
            "      if (((i0 * 4) + i1) < 10):\n"
            "        T1[0] = exp(T0[((i0 * 4) + i1)])\n"
            "      if (((i0 * 4) + i1) < 10):\n"
            "        T2[((i0 * 4) + i1)] = (T1[0] * 2.0)\n");
  // The input declared non-contiguous keeps its stride; the output (allocated by Loom) does not.
  f->inputs()[0]->as<ir::TensorView>()->setContiguity({false});
  std::string strided = lowerAround(*f, "indexing").after;
  EXPECT_NE(strided.find("T1[0] = exp(T0[(((i0 * 4) + i1) * T0.stride[0])])"), std::string::npos)
      << strided;
  EXPECT_NE(strided.find("T2[((i0 * 4) + i1)] = (T1[0] * 2.0)"), std::string::npos) << strided;
}

// indexing turns an accumulation into acc = acc op input and the write into a store of acc.
TEST(LowerPasses, IndexingReductions) {
  auto f = blockSum();
  std::string after = lowerAround(*f, "indexing").after;
  EXPECT_NE(after.find("acc2 = (acc2 + T0[((i0 * T0.stride[0]) + i1)])"), std::string::npos)
      << after;
  EXPECT_NE(after.find("T1[i0] = acc2"), std::string::npos) << after;
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

// simplify folds / and % by index bounds: x % c = x and x / c = 0 for 0 <= x < c, and
// (a * c + b) / c = a + b / c, (a * c + b) % c = b % c for a, b >= 0; other divisors stay.
TEST(LowerPasses, SimplifyDivModByBounds) {
  ir::Fusion fusion;
  lower::LowerContext ctx(fusion);
  kir::Kernel k;
  kir::Buffer* out = k.createBuffer();
  out->name = "T1";
  auto loop = [&](int64_t n) {
    return k.create<kir::ForLoop>(k.newVar(kIndexType, "i"), k.constInt(0), k.constInt(n),
                                  ir::ParallelType::Serial, nullptr);
  };
  kir::ForLoop* outer = loop(8);
  kir::ForLoop* inner = loop(4);
  kir::ForLoop* wide = loop(5);
  outer->body = {inner};
  inner->body = {wide};
  k.body = {outer};
  lower::IndexBuilder b{k};
  kir::Value* merged = b.add(b.mul(outer->index, k.constInt(4)), inner->index);  // i0 * 4 + i1
  kir::Value* values[] = {b.div(merged, k.constInt(4)), b.mod(merged, k.constInt(4)),
                          b.mod(inner->index, k.constInt(4)), b.div(inner->index, k.constInt(4)),
                          b.div(merged, k.constInt(3)), b.mod(wide->index, k.constInt(4)),
                          b.div(b.mul(outer->index, k.constInt(4)), k.constInt(4))};
  for (kir::Value* v : values) wide->body.push_back(k.create<kir::Store>(out, v, k.constInt(0)));
  EXPECT_TRUE(lower::simplify(k, ctx));
  EXPECT_EQ(kir::toString(k),
            "kernel loom_kernel()\n"
            "  for i0 in 0 .. 8:\n"
            "    for i1 in 0 .. 4:\n"
            "      for i2 in 0 .. 5:\n"
            "        T1[i0] = 0\n"
            "        T1[i1] = 0\n"
            "        T1[i1] = 0\n"
            "        T1[0] = 0\n"
            "        T1[(((i0 * 4) + i1) / 3)] = 0\n"
            "        T1[(i2 % 4)] = 0\n"
            "        T1[i0] = 0\n");
}

// simplify drops a comparison that the loop bounds prove, and an if whose condition is true.
TEST(LowerPasses, SimplifyProvenConditionUnwrapsIf) {
  ir::Fusion fusion;
  lower::LowerContext ctx(fusion);
  kir::Kernel k;
  kir::Buffer* out = k.createBuffer();
  out->name = "T1";
  auto* f = k.create<kir::ForLoop>(k.newVar(kIndexType, "i"), k.constInt(0), k.constInt(4),
                                   ir::ParallelType::Serial, nullptr);
  lower::IndexBuilder b{k};
  auto* proven = k.create<kir::IfThenElse>(b.lt(f->index, k.constInt(4)));
  proven->thenBody = {k.create<kir::Store>(out, f->index, k.constInt(1))};
  auto* kept = k.create<kir::IfThenElse>(b.lt(f->index, k.constInt(3)));
  kept->thenBody = {k.create<kir::Store>(out, f->index, k.constInt(2))};
  f->body = {proven, kept};
  k.body = {f};
  EXPECT_TRUE(lower::simplify(k, ctx));
  EXPECT_EQ(kir::toString(k),
            "kernel loom_kernel()\n"
            "  for i0 in 0 .. 4:\n"
            "    T1[i0] = 1\n"
            "    if (i0 < 3):\n"
            "      T1[i0] = 2\n");
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

// indexing: a reshape is a copy whose consumer indices come back through its root -> logical
// merge, so the [4, 8] -> [32] copy reads the input at the merged loop index itself.
TEST(LowerPasses, ReshapeIsACopyThroughItsRoot) {
  ir::Fusion fusion;
  ir::FusionGuard guard(&fusion);
  auto* x = ops::TensorBuilder().shape({4, 8}).build();
  fusion.addInput(x);
  fusion.addOutput(ops::reshape(x, {32}));
  auto kernel = lower::lowerFusionUntil(fusion, "indexing");
  EXPECT_EQ(kir::toString(*kernel),
            "kernel loom_kernel(T0 : f32[2], T1 : f32[1])\n"
            "  for i0 in 0 .. 32:\n"
            "    T1[i0] = T0[i0]\n");
}

}  // namespace
}  // namespace loom::test
