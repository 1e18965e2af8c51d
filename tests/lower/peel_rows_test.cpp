// SPDX-License-Identifier: Apache-2.0
// Peeled vector rows (LowerOptions::peelVectorRows, pass peel_rows): the kernel IR and CUDA text
// of a row vectorized by 4 hold the row's shift, the rotated element index of parameter accesses,
// and each vector copy's check (in range, adjacent, aligned) with the element loop as its else;
// without the option the copies stay all-or-nothing; ops the peel cannot rotate are refused.
#include <gtest/gtest.h>

#include <string>

#include "loom/codegen/kernel_codegen.h"
#include "loom/ir/ir.h"
#include "loom/lower/lower.h"
#include "loom/ops/ops.h"
#include "loom/transform/cache.h"
#include "loom/transform/inlining.h"
#include "loom/transform/propagation.h"
#include "loom/transform/schedule.h"
#include "user_error_of.h"

namespace loom::test {
namespace {

using ir::ParallelType;

// y = x * 2 over x [3, width] f32 (width -1: symbolic), rows on BIDx: the row split by 4 onto
// TIDx, x read by a vectorized register copy and y written by one: [BIDx, TIDx, Vectorize{4}].
std::unique_ptr<ir::Fusion> rowVectorized(int64_t width) {
  auto f = std::make_unique<ir::Fusion>();
  ir::FusionGuard guard(f.get());
  auto* x = ops::TensorBuilder().shape({3, width}).build();
  f->addInput(x);
  auto* out = ops::mul(x, 2.0);
  f->addOutput(out);
  auto* xc = transform::cacheAfter(x);
  transform::cacheBefore(out);
  out->split(1, 4);
  transform::propagateTransforms(out);
  out->axis(0)->parallelize(ParallelType::BIDx);
  out->axis(1)->parallelize(ParallelType::TIDx);
  transform::parallelizeAllLike(out);
  out->axis(2)->parallelize(ParallelType::Vectorize);
  xc->axis(2)->parallelize(ParallelType::Vectorize);
  transform::inlineMost(*f);
  return f;
}

const lower::LowerOptions kPeel{.peelVectorRows = true};

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// `text` with every `{s}` replaced by `s`.
std::string fill(std::string text, const std::string& s) {
  for (size_t at = text.find("{s}"); at != std::string::npos;
       at = text.find("{s}", at + s.size())) {
    text.replace(at, 3, s);
  }
  return text;
}

// The load of x and the store of y: each vector copy sits in the then-branch of an if that
// checks the last lane in range, the parameter offsets of lanes 0 and 3 three apart and the
// address of lane 0 aligned; the else-branch is the unrolled element loop under the element
// predicate. The row's shift {s} is the misalignment of x's row start, and x and y are read and
// written at the rotated element `(q - {s}) + where(q < {s}, 13, 0)` of slot q; the registers
// stay indexed by slot.
TEST(LowerPeelRows, VectorCopiesAreCheckedWithTheElementLoopAsElse) {
  auto f = rowVectorized(13);
  // Up to simplify: hoist_indices would name the repeated index math.
  std::string text = kir::toString(*lower::lowerFusionUntil(*f, "simplify", kPeel));
  const std::string golden = fill(
      "kernel loom_kernel(T0 : f32[2], T1 : f32[2])\n"
      "  for i0 in BIDx 0 .. 3:\n"
      "    for i1 in TIDx 0 .. 4:\n"
      "      alloc T2 : f32 local[4]\n"
      "      if (((((i1 * 4) + 3) < 13) && ((((i0 * T0.stride[0]) + ((((i1 * 4) + 3) - {s}) + "
      "where((((i1 * 4) + 3) < {s}), 13, 0))) - ((i0 * T0.stride[0]) + (((i1 * 4) - {s}) + "
      "where(((i1 * 4) < {s}), 13, 0)))) == 3)) && (misalignment<4>(&T0[((i0 * T0.stride[0]) + "
      "(((i1 * 4) - {s}) + where(((i1 * 4) < {s}), 13, 0)))]) == 0)):\n"
      "        T2[0 +: 4] = T0[((i0 * T0.stride[0]) + (((i1 * 4) - {s}) + where(((i1 * 4) < {s}), "
      "13, 0))) +: 4]\n"
      "      else:\n"
      "        for i2 in unroll 0 .. 4:\n"
      "          if (((i1 * 4) + i2) < 13):\n"
      "            T2[i2] = T0[((i0 * T0.stride[0]) + ((((i1 * 4) + i2) - {s}) + where((((i1 * 4) "
      "+ i2) < {s}), 13, 0)))]\n"
      "      alloc T3 : f32 local[4]\n"
      "      for i3 in 0 .. 4:\n"
      "        if (((i1 * 4) + i3) < 13):\n"
      "          T3[i3] = (T2[i3] * 2.0)\n"
      "      if (((((i1 * 4) + 3) < 13) && ((((i0 * T1.stride[0]) + ((((i1 * 4) + 3) - {s}) + "
      "where((((i1 * 4) + 3) < {s}), 13, 0))) - ((i0 * T1.stride[0]) + (((i1 * 4) - {s}) + "
      "where(((i1 * 4) < {s}), 13, 0)))) == 3)) && (misalignment<4>(&T1[((i0 * T1.stride[0]) + "
      "(((i1 * 4) - {s}) + where(((i1 * 4) < {s}), 13, 0)))]) == 0)):\n"
      "        T1[((i0 * T1.stride[0]) + (((i1 * 4) - {s}) + where(((i1 * 4) < {s}), 13, 0))) +: "
      "4] = T3[0 +: 4]\n"
      "      else:\n"
      "        for i4 in unroll 0 .. 4:\n"
      "          if (((i1 * 4) + i4) < 13):\n"
      "            T1[((i0 * T1.stride[0]) + ((((i1 * 4) + i4) - {s}) + where((((i1 * 4) + i4) < "
      "{s}), 13, 0)))] = T3[i4]\n",
      "misalignment<4>(&T0[(i0 * T0.stride[0])])");
  EXPECT_EQ(text, golden);
}

// The CUDA text: the shift through loom::misalignment, the vector load and store behind the
// check, the element loops unrolled.
TEST(LowerPeelRows, CudaTextHoldsThePeeledLoop) {
  auto f = rowVectorized(13);
  auto kernel = lower::lowerFusion(*f, DumpOptions(), kPeel);
  std::string text = codegen::generateKernel(*kernel).kernelText;
  text = text.substr(text.find("__global__ void"));
  EXPECT_NE(text.find("loom::misalignment<4>(&T0["), std::string::npos) << text;
  EXPECT_NE(text.find("loom::misalignment<4>(&T1["), std::string::npos) << text;
  EXPECT_NE(text.find("loom::loadVectorInput(v, &T0["), std::string::npos) << text;
  EXPECT_NE(text.find("loom::storeVectorOutput(&T1["), std::string::npos) << text;
  EXPECT_NE(text.find("} else {\n"), std::string::npos) << text;
  EXPECT_GE(count(text, "#pragma unroll\n"), 2u) << text;
  ASSERT_EQ(kernel->vectorized.size(), 2u);
  for (const kir::Kernel::VectorizedParam& v : kernel->vectorized) {
    EXPECT_TRUE(v.peeled) << v.buffer->name;
  }
}

// Without the option, and over a symbolic width (the rotation then guards a row shorter than
// its shift), the peel is as asked: none, and `where(s <= row, s, 0)`.
TEST(LowerPeelRows, OnlyWhenAskedAndGuardedForShortRows) {
  auto f = rowVectorized(13);
  std::string plain = kir::toString(*lower::lowerFusionUntil(*f, "vectorize"));
  EXPECT_EQ(plain.find("misalignment"), std::string::npos) << plain;
  EXPECT_EQ(plain.find("unroll"), std::string::npos) << plain;
  auto kernel = lower::lowerFusion(*f, DumpOptions());
  for (const kir::Kernel::VectorizedParam& v : kernel->vectorized) EXPECT_FALSE(v.peeled);

  auto symbolic = rowVectorized(-1);
  std::string text = kir::toString(*lower::lowerFusionUntil(*symbolic, "simplify", kPeel));
  EXPECT_NE(text.find("where((T0.size[1] >= misalignment<4>(&T0[(i0 * T0.stride[0])])), "
                      "misalignment<4>(&T0[(i0 * T0.stride[0])]), 0)"),
            std::string::npos)
      << text;
}

// A pad in a peeled kernel reads positions the peel does not rotate: refused by name.
TEST(LowerPeelRows, OpsReadingPositionsAreRefused) {
  ir::Fusion f;
  ir::FusionGuard guard(&f);
  auto* x = ops::TensorBuilder().shape({3, 12}).build();
  f.addInput(x);
  auto* out = ops::mul(ops::pad(x, {0, 4}), 2.0);
  f.addOutput(out);
  auto* xc = transform::cacheAfter(x);
  xc->split(1, 4);
  xc->axis(2)->parallelize(ParallelType::Vectorize);
  std::string msg = userErrorOf([&] { (void)lower::lowerFusion(f, DumpOptions(), kPeel); });
  EXPECT_NE(msg.find("peeled vector rows (LowerOptions::peelVectorRows) do not support pad"),
            std::string::npos)
      << msg;
}

}  // namespace
}  // namespace loom::test
