// SPDX-License-Identifier: Apache-2.0
// The .fus printer: canonical names, domains, transforms, attributes; round trips through the
// parser on raw-IR fusions (scheduled, sharded, reshaped, Welford, expanded broadcasts).
#include <gtest/gtest.h>

#include "ir/text_test_util.h"

namespace loom::ir {
namespace {

using test::makeInput;
using test::pointwise;

// The printed text of a small pointwise fusion is exactly the documented form.
TEST(PrinterTest, GoldenPointwise) {
  Fusion f;
  FusionGuard g(&f);
  auto* s0 = IrBuilder::symbolic(kIndexType);
  auto* t0 = makeInput({s0, IrBuilder::index(8)});
  auto* t1 = pointwise(t0, UnaryOpType::Exp);
  f.addOutput(t1);
  EXPECT_EQ(f.toString(),
            "# Loom fusion (.fus)\n"
            "inputs:  T0\n"
            "outputs: T1\n"
            "\n# scalars\n"
            "s0 : i64\n"
            "\n# tensors\n"
            "T0 : f32  global [i0{s0}, i1{8}]\n"
            "T1 : f32  global [i2{s0}, i3{8}]\n"
            "\n# math\n"
            "T1 = exp(T0)\n");
}

// Names are canonical: the text does not depend on the order nodes were created in.
TEST(PrinterTest, CanonicalNames) {
  Fusion f;
  FusionGuard g(&f);
  IrBuilder::symbolic(kIndexType);  // unused: must not shift the numbering
  auto* t0 = makeInput({IrBuilder::index(4)});
  f.addOutput(pointwise(t0, UnaryOpType::Neg));
  std::string text = f.toString();
  EXPECT_NE(text.find("T0 : f32  global [i0{4}]"), std::string::npos) << text;
  EXPECT_EQ(text.find("# scalars"), std::string::npos) << text;
}

// A scheduled tensor prints its loop domain, parallel types and the split/merge lines.
TEST(PrinterTest, ScheduledTensor) {
  Fusion f;
  FusionGuard g(&f);
  auto* t0 = makeInput({IrBuilder::symbolic(kIndexType), IrBuilder::index(128)});
  auto* t1 = pointwise(t0, UnaryOpType::Relu);
  f.addOutput(t1);
  t1->merge(0)->split(0, 128);
  t1->axis(1)->parallelize(ParallelType::TIDx);
  t1->axis(0)->parallelize(ParallelType::BIDx);
  t1->setComputeAtPosition(1);
  std::string text = f.toString();
  EXPECT_NE(text.find("loop       [i4{s2, BIDx}, i5{128, TIDx}]"), std::string::npos) << text;
  EXPECT_NE(text.find("s1 : i64  = mul(s0, 128)"), std::string::npos) << text;
  EXPECT_NE(text.find("s2 : i64  = ceil_div(s1, 128)"), std::string::npos) << text;
  EXPECT_NE(text.find("i6{s1} = merge(i2, i3)"), std::string::npos) << text;
  EXPECT_NE(text.find("i4, i5 = split(i6, 128)"), std::string::npos) << text;
  EXPECT_NE(text.find("ca=1"), std::string::npos) << text;
  test::expectRoundTrip(f);
}

// Constants keep their dtype: non-default ones are written as dtype(value).
TEST(PrinterTest, TypedConstants) {
  Fusion f;
  FusionGuard g(&f);
  auto* t0 = makeInput({IrBuilder::index(4)});
  auto* t1 = test::binary(t0, IrBuilder::constant(ScalarValue(0.5), DataType::Float32),
                          BinaryOpType::Mul);
  auto* t3 = test::binary(test::cast(t1, DataType::Float64), IrBuilder::constant(1e-5),
                          BinaryOpType::Add);
  auto* t5 = test::binary(test::cast(t3, DataType::Int32),
                          IrBuilder::constant(ScalarValue(int64_t(3)), DataType::Int32),
                          BinaryOpType::Div);
  f.addOutput(t5);
  std::string text = f.toString();
  EXPECT_NE(text.find("mul(T0, f32(0.5))"), std::string::npos) << text;
  EXPECT_NE(text.find("add(T2, 1e-05)"), std::string::npos) << text;
  EXPECT_NE(text.find("div(T4, i32(3))"), std::string::npos) << text;
  test::expectRoundTrip(f);
}

// A sharded tensor: mesh, outer DID split in loop and allocation, contiguity of the allocation.
TEST(PrinterTest, ShardedAllocation) {
  Fusion f;
  FusionGuard g(&f);
  auto* t0 = makeInput({IrBuilder::index(64), IrBuilder::symbolic(kIndexType)});
  auto* t1 = pointwise(t0, UnaryOpType::Sigmoid);
  f.addOutput(t1);
  for (TensorView* tv : {t0, t1}) {
    tv->setDeviceMesh(DeviceMesh::arange(4));
    tv->outerSplit(0, 4);
    tv->axis(0)->parallelize(ParallelType::DIDx);
    tv->setAllocationDomain(tv->loop(), {true, false, true});
  }
  std::string text = f.toString();
  EXPECT_NE(text.find("mesh=[0, 1, 2, 3]"), std::string::npos) << text;
  EXPECT_NE(text.find("allocation [i2{4, DIDx}, i3{16}, i1] contig=[t, f, t]"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("i2, i3 = outer_split(i0, 4)"), std::string::npos) << text;
  test::expectRoundTrip(f);
}

// Root domains (permute and reshape) print with their root -> logical transforms.
TEST(PrinterTest, RootDomains) {
  Fusion f;
  FusionGuard g(&f);
  auto* t0 = makeInput({IrBuilder::index(6), IrBuilder::index(4)});
  auto* t1 = test::permute(t0);
  auto* t2 = test::reshapeMerge(t1);
  f.addOutput(t2);
  std::string text = f.toString();
  EXPECT_NE(text.find("root       [i3, i2]"), std::string::npos) << text;
  EXPECT_NE(text.find("rf}"), std::string::npos) << text;
  EXPECT_NE(text.find("= set(T0)"), std::string::npos) << text;
  EXPECT_NE(text.find("= reshape(T1)"), std::string::npos) << text;
  test::expectRoundTrip(f);
}

// Welford with its three outputs and init values; broadcast and expand flags; reductions.
TEST(PrinterTest, WelfordBroadcastExpand) {
  Fusion f;
  FusionGuard g(&f);
  auto* t0 = makeInput({IrBuilder::index(8), IrBuilder::symbolic(kIndexType)});
  auto w = test::welford(t0);
  auto* b = test::broadcastLast(w[0]);
  auto* e = test::expandLast(b, t0->logical()[1]->extent());
  auto* s = test::sumLast(t0);
  f.addOutput(w[1]);
  f.addOutput(e);
  f.addOutput(s);
  std::string text = f.toString();
  EXPECT_NE(text.find("= welford(T0, f32(0.0), 1, init_avg=f32(0.0), init_m2=f32(0.0), init_n=0)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("broadcast(T1, flags=[false, true])"), std::string::npos) << text;
  EXPECT_NE(text.find("expand=s0"), std::string::npos) << text;
  EXPECT_NE(text.find("sum(T0, init=f32(0.0))"), std::string::npos) << text;
  test::expectRoundTrip(f);
}

// Casts print their target dtype; scalar inputs and scalar math print in the scalar section.
TEST(PrinterTest, CastAndScalarInputs) {
  Fusion f;
  FusionGuard g(&f);
  auto* t0 = makeInput({IrBuilder::index(4)}, DataType::BFloat16);
  auto* alpha = IrBuilder::symbolic(DataType::Float64);
  f.addInput(alpha);
  auto* two_alpha = IrBuilder::symbolic(DataType::Float64);
  IrBuilder::create<BinaryOp>(BinaryOpType::Mul, two_alpha, alpha, IrBuilder::constant(2.0));
  auto* two_alpha_f32 = IrBuilder::symbolic(DataType::Float32);
  IrBuilder::create<UnaryOp>(UnaryOpType::Cast, two_alpha_f32, two_alpha);
  auto* t1 = test::cast(t0, DataType::Float32);
  auto* t2 = test::binary(t1, two_alpha_f32, BinaryOpType::Mul);
  f.addOutput(test::cast(t2, DataType::BFloat16));
  std::string text = f.toString();
  EXPECT_NE(text.find("inputs:  T0, s0"), std::string::npos) << text;
  EXPECT_NE(text.find("s0 : f64\n"), std::string::npos) << text;
  EXPECT_NE(text.find("s1 : f64  = mul(s0, 2.0)"), std::string::npos) << text;
  EXPECT_NE(text.find("s2 : f32  = cast(s1, f32)"), std::string::npos) << text;
  EXPECT_NE(text.find("cast(T0, f32)"), std::string::npos) << text;
  EXPECT_NE(text.find("cast(T2, bf16)"), std::string::npos) << text;
  test::expectRoundTrip(f);
}

}  // namespace
}  // namespace loom::ir
