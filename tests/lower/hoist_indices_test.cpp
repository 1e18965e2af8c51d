// SPDX-License-Identifier: Apache-2.0
// hoist_indices: integer index math over loop indices, thread/block indices, tensor sizes and
// strides and constants that a serial loop does not change, or that its scope computes more than
// once, becomes one const index variable declared in the outermost scope defining its operands;
// a division by a possibly-zero value only moves to where it is evaluated anyway.
#include <gtest/gtest.h>

#include "loom/codegen/kernel_codegen.h"
#include "lower/lower_test_util.h"

namespace loom::test {
namespace {

using ir::ParallelType;

// sum(x[37, 50], dim 1) with rows on TIDx and the reduction serial: the row offset is computed
// once per thread, before the loop.
TEST(HoistIndices, LoopInvariantLeavesTheSerialLoop) {
  ir::Fusion f;
  ir::FusionGuard guard(&f);
  auto* x = ops::TensorBuilder().rank(2).build();
  f.addInput(x);
  auto* out = ops::sum(x, {1});
  f.addOutput(out);
  out->axis(0)->parallelize(ParallelType::TIDx);
  auto ba = lowerAround(f, "hoist_indices");
  EXPECT_EQ(ba.before,
            "kernel loom_kernel(T0 : f32[2], T1 : f32[1])\n"
            "  for i0 in TIDx 0 .. T0.size[0]:\n"
            "    var acc2 : f32 = 0.0\n"
            "    for i1 in 0 .. T0.size[1]:\n"
            "      acc2 = (acc2 + T0[((i0 * T0.stride[0]) + i1)])\n"
            "    T1[i0] = acc2\n");
  EXPECT_EQ(ba.after,
            "kernel loom_kernel(T0 : f32[2], T1 : f32[1])\n"
            "  for i0 in TIDx 0 .. T0.size[0]:\n"
            "    var acc2 : f32 = 0.0\n"
            "    const i3 = (i0 * T0.stride[0])\n"
            "    for i1 in 0 .. T0.size[1]:\n"
            "      acc2 = (acc2 + T0[(i3 + i1)])\n"
            "    T1[i0] = acc2\n");
}

// x[I0, I1] + bias[I1] on a merged [BIDx, TIDx] schedule: the merged index is named once and
// the bias index once (its predicate computes it anyway); a parallel loop is not a loop, so
// nothing moves above the TIDx scope that uses threadIdx.
std::unique_ptr<ir::Fusion> biasAdd(ir::Contiguity x_contiguity) {
  auto f = std::make_unique<ir::Fusion>();
  ir::FusionGuard guard(f.get());
  auto builder = ops::TensorBuilder().rank(2);
  if (!x_contiguity.empty()) builder.contiguity(x_contiguity);
  auto* x = builder.build();
  auto* bias = ops::TensorBuilder().rank(1).build();
  f->addInput(x);
  f->addInput(bias);
  auto* out = ops::add(x, bias);
  f->addOutput(out);
  out->merge(0)->split(0, 128);
  out->axis(0)->parallelize(ParallelType::BIDx);
  out->axis(1)->parallelize(ParallelType::TIDx);
  transform::propagateTransforms(out);
  transform::parallelizeAllLike(out);
  transform::inlineMost(*f);
  return f;
}

TEST(HoistIndices, RepeatedIndexIsNamedOnce) {
  auto f = biasAdd({});
  auto ba = lowerAround(*f, "hoist_indices");
  EXPECT_EQ(ba.after,
            "kernel loom_kernel(T0 : f32[2], T1 : f32[1], T3 : f32[2])\n"
            "  for i0 in BIDx 0 .. ceil_div((T0.size[0] * T0.size[1]), 128):\n"
            "    for i1 in TIDx 0 .. 128:\n"
            "      alloc T2 : f32 local[1]\n"
            "      const i2 = ((i0 * 128) + i1)\n"
            "      const i3 = (i2 % T0.size[1])\n"
            "      const i4 = (i2 / T0.size[1])\n"
            "      if (((i3 < T1.size[0]) && (i4 < T0.size[0])) && (i3 < T0.size[1])):\n"
            "        T2[0] = T1[i3]\n"
            "      if ((i4 < T0.size[0]) && (i3 < T0.size[1])):\n"
            "        T3[i2] = (T0[i2] + T2[0])\n")
      << ba.before;
}

// x declared [f, f]: its offset splits the merged index by / and % of T0.size[1]. The bias is
// indexed through the loop's promoted ID (x + bias's merged [I0, I1]) and guarded by the output's
// ranges too (the loop runs over its space), so quotient and remainder are both evaluated by the
// bias load's predicate first: each is named once, before both statements.
TEST(HoistIndices, DivisionMovesOnlyWhereItIsEvaluated) {
  auto f = biasAdd({false, false});
  std::string after = lowerAround(*f, "hoist_indices").after;
  EXPECT_NE(after.find("      const i3 = (i2 % T0.size[1])\n"
                       "      const i4 = (i2 / T0.size[1])\n"
                       "      if (((i3 < T1.size[0]) && (i4 < T0.size[0])) && (i3 < T0.size[1])):\n"),
            std::string::npos)
      << after;
  EXPECT_NE(after.find("      if ((i4 < T0.size[0]) && (i3 < T0.size[1])):\n"
                       "        T3[i2] = (T0[((i4 * T0.stride[0]) + (i3 * T0.stride[1]))] + T2[0])\n"),
            std::string::npos)
      << after;
}

// A hand-built kernel: two serial loops over T0.size[0] and T0.size[1], the inner body storing
// T1[(i0 / T0.size[1]) + i1] = T0[((i0 * T0.stride[0]) + (i0 / 4)) + i1].
struct TwoLoops {
  kir::Kernel kernel;
  kir::ForLoop* outer = nullptr;
  kir::ForLoop* inner = nullptr;
  kir::Buffer* t0 = nullptr;
  kir::Buffer* t1 = nullptr;
  kir::Var* i0 = nullptr;

  kir::Buffer* param(const char* name, int64_t rank) {
    kir::Buffer* b = kernel.createBuffer();
    b->name = name;
    b->rank = rank;
    kernel.params.push_back(b);
    return b;
  }
  kir::Value* bin(ir::BinaryOpType op, kir::Value* a, kir::Value* b) {
    return kernel.create<kir::BinaryExpr>(kIndexType, op, a, b);
  }
  kir::Value* size(int64_t dim) { return kernel.create<kir::TensorSize>(t0, dim, false); }
  kir::Value* quotient() { return bin(ir::BinaryOpType::Div, i0, size(1)); }

  TwoLoops() {
    using Op = ir::BinaryOpType;
    t0 = param("T0", 2);
    t1 = param("T1", 1);
    i0 = kernel.newVar(kIndexType, "i");
    kir::Var* i1 = kernel.newVar(kIndexType, "i");
    outer = kernel.create<kir::ForLoop>(i0, kernel.constInt(0), size(0), ParallelType::Serial,
                                        nullptr);
    inner = kernel.create<kir::ForLoop>(i1, kernel.constInt(0), size(1), ParallelType::Serial,
                                        nullptr);
    kir::Value* row = bin(Op::Add, bin(Op::Mul, i0, kernel.create<kir::TensorSize>(t0, 0, true)),
                          bin(Op::Div, i0, kernel.constInt(4)));
    inner->body.push_back(kernel.create<kir::Store>(
        t1, bin(Op::Add, quotient(), i1), kernel.create<kir::Load>(t0, bin(Op::Add, row, i1))));
    outer->body.push_back(inner);
    kernel.body.push_back(outer);
  }
};

// Both offsets are invariant in the inner loop, but only the one without a division by a size
// leaves it (i0 / 4 divides by a nonzero constant): when T0.size[1] is 0 the inner loop never
// runs, and i0 / T0.size[1] must not be evaluated.
TEST(HoistIndices, ZeroTripLoopKeepsDivisionBySize) {
  TwoLoops k;
  ir::Fusion none;  // the pass reads nothing from the fusion
  lower::LowerContext ctx(none);
  EXPECT_TRUE(lower::hoistIndices(k.kernel, ctx));
  EXPECT_EQ(kir::toString(k.kernel),
            "kernel loom_kernel(T0 : f32[2], T1 : f32[1])\n"
            "  for i0 in 0 .. T0.size[0]:\n"
            "    const i2 = ((i0 * T0.stride[0]) + (i0 / 4))\n"
            "    for i1 in 0 .. T0.size[1]:\n"
            "      T1[((i0 / T0.size[1]) + i1)] = T0[(i2 + i1)]\n");
  // Codegen declares it in the kernel's index type.
  k.kernel.indexType = DataType::Int32;
  std::string cuda = codegen::generateKernel(k.kernel).kernelText;
  EXPECT_NE(cuda.find("const int i2 = ((i0 * T0.stride[0]) + (i0 / 4));"), std::string::npos)
      << cuda;
}

// Once the outer body divides by T0.size[1] unconditionally (a store after the inner loop), the
// quotient is evaluated anyway: it is named before the inner loop and shared.
TEST(HoistIndices, DivisionEvaluatedAnywayIsShared) {
  TwoLoops k;
  k.outer->body.push_back(k.kernel.create<kir::Store>(k.t1, k.quotient(), k.kernel.constInt(0)));
  ir::Fusion none;  // the pass reads nothing from the fusion
  lower::LowerContext ctx(none);
  EXPECT_TRUE(lower::hoistIndices(k.kernel, ctx));
  EXPECT_EQ(kir::toString(k.kernel),
            "kernel loom_kernel(T0 : f32[2], T1 : f32[1])\n"
            "  for i0 in 0 .. T0.size[0]:\n"
            "    const i2 = (i0 / T0.size[1])\n"
            "    const i3 = ((i0 * T0.stride[0]) + (i0 / 4))\n"
            "    for i1 in 0 .. T0.size[1]:\n"
            "      T1[(i2 + i1)] = T0[(i3 + i1)]\n"
            "    T1[i2] = 0\n");
}

// LOOM_DUMP=kernel_ir(hoist_indices) prints the kernel with the declarations.
TEST(HoistIndices, KernelIrDumpShowsTheDeclarations) {
  ir::Fusion f;
  ir::FusionGuard guard(&f);
  auto* x = ops::TensorBuilder().rank(2).build();
  f.addInput(x);
  auto* out = ops::sum(x, {1});
  f.addOutput(out);
  out->axis(0)->parallelize(ParallelType::TIDx);
  testing::internal::CaptureStdout();
  lower::lowerFusion(f, DumpOptions::parse("kernel_ir(hoist_indices)"));
  std::string dump = testing::internal::GetCapturedStdout();
  EXPECT_NE(dump.find("=== kernel IR after hoist_indices ===\n"), std::string::npos) << dump;
  EXPECT_NE(dump.find("    const i3 = (i0 * T0.stride[0])\n"), std::string::npos) << dump;
  EXPECT_EQ(dump.find("after simplify"), std::string::npos) << dump;
}

}  // namespace
}  // namespace loom::test
