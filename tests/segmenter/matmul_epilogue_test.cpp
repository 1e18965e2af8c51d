// SPDX-License-Identifier: Apache-2.0
// The segmenter's matmul epilogues (segmenter/matmul_epilogue.h): which pointwise consumers of a
// matmul or linear join its segment (bias, relu, gelu_tanh, a cast cuBLASLt can write), recorded
// in MatmulWork, and which stay Loom kernels (the erf gelu, a product with another use, a cast
// cuBLASLt cannot write). Each segmentation is also evaluated segment by segment with the
// reference evaluator against the whole fusion.
#include <gtest/gtest.h>

#include <unordered_map>

#include "loom/eval/compare.h"
#include "loom/eval/reference_evaluator.h"
#include "loom/ir/ir.h"
#include "loom/ops/ops.h"
#include "loom/segmenter/segmenter.h"

namespace loom::segmenter {
namespace {

using ir::Fusion;
using ir::FusionGuard;
using ir::MatmulActivation;
using ir::TensorView;

TensorView* input(Fusion& f, std::vector<int64_t> shape, DataType dtype) {
  TensorView* tv = ops::TensorBuilder().shape(std::move(shape)).dtype(dtype).build();
  f.addInput(tv);
  return tv;
}

Tensor randomTensor(std::vector<int64_t> sizes, DataType dtype, uint64_t seed) {
  Tensor t = Tensor::empty(std::move(sizes), dtype);
  fillRandom(t, seed);
  return t;
}

// x [8, 32], w [16, 32], bias [16] of `dtype`, with `tail(linear(x, w, bias))` the output.
struct Case {
  std::unique_ptr<Fusion> fusion = std::make_unique<Fusion>();
  std::vector<eval::Argument> args;
};

template <typename Tail>
Case linearCase(DataType dtype, bool bias, Tail tail) {
  Case c;
  FusionGuard g(c.fusion.get());
  TensorView* x = input(*c.fusion, {8, 32}, dtype);
  TensorView* w = input(*c.fusion, {16, 32}, dtype);
  TensorView* b = bias ? input(*c.fusion, {16}, dtype) : nullptr;
  tail(*c.fusion, ops::linear(x, w, b));
  c.args = {randomTensor({8, 32}, dtype, 1), randomTensor({16, 32}, dtype, 2)};
  if (bias) c.args.emplace_back(randomTensor({16}, dtype, 3));
  return c;
}

// Segments the case, checks that evaluating the segments in order gives the fusion's result,
// and returns the segmentation.
SegmentedFusion segmentAndCheck(const Case& c, const SegmenterOptions& options = {}) {
  SegmentedFusion sf = segmentFusion(*c.fusion, c.args, options);
  std::unordered_map<const ir::Val*, eval::Argument> values;
  for (size_t i = 0; i < c.args.size(); ++i) values[c.fusion->inputs()[i]] = c.args[i];
  for (const Segment& s : sf.segments()) {
    std::vector<eval::Argument> sargs;
    for (ir::Val* v : s.fusion.inputs) sargs.push_back(values.at(v));
    std::vector<Tensor> outs = eval::evaluateFusion(*s.fusion.fusion, sargs);
    for (size_t i = 0; i < outs.size(); ++i) values[s.fusion.outputs[i]] = outs[i];
  }
  std::vector<Tensor> expected = eval::evaluateFusion(*c.fusion, c.args);
  for (size_t i = 0; i < expected.size(); ++i) {
    const Tensor& got = std::get<Tensor>(values.at(c.fusion->outputs()[i]));
    auto err = eval::expectClose(got, expected[i], eval::defaultTolerance(got.dtype(), 32),
                                 "output " + std::to_string(i));
    EXPECT_FALSE(err.has_value()) << *err;
  }
  return sf;
}

std::vector<std::string> kinds(const SegmentedFusion& sf) {
  std::vector<std::string> out;
  for (const Segment& s : sf.segments()) out.emplace_back(workKindName(s.work));
  return out;
}

TEST(MatmulEpilogue, LinearThenTanhGeluIsOneSegmentWithTheGeluBiasEpilogue) {
  // gelu(linear(x, w, b), approximate='tanh') in f32: the bias, then the gelu, in the GEMM.
  Case c = linearCase(DataType::Float32, true, [](Fusion& f, TensorView* y) {
    f.addOutput(ops::gelu(y, ops::GeluApproximation::Tanh));
  });
  SegmentedFusion sf = segmentAndCheck(c);
  ASSERT_EQ(kinds(sf), std::vector<std::string>{"matmul"});
  const MatmulWork* m = sf.segments()[0].matmul();
  EXPECT_TRUE(m->bias);
  EXPECT_EQ(m->activation, MatmulActivation::GeluTanh);
  EXPECT_EQ(m->toString(), "linear with bias + gelu_tanh in the epilogue");
  EXPECT_EQ(sf.segments()[0].exprs.size(), 10u);  // the linear and the composite's 9 exprs
  EXPECT_NE(sf.toString().find("linear with bias + gelu_tanh in the epilogue"), std::string::npos)
      << sf.toString();
}

TEST(MatmulEpilogue, ReluJoinsInF32AndOnAHalfProductCastBack) {
  // ops::relu computes a bf16 product in f32: relu(cast(y, f32)), cast back to bf16, joins (the
  // GEMM writes bf16); returned in f32 it stays a kernel (the f32 result would show the product's
  // rounding the GEMM skips).
  for (DataType d : {DataType::Float32, DataType::BFloat16}) {
    for (bool back : {true, false}) {
      Case c = linearCase(d, false, [d, back](Fusion& f, TensorView* y) {
        TensorView* r = ops::relu(y);
        f.addOutput(back ? ops::cast(r, d) : r);
      });
      SegmentedFusion sf = segmentAndCheck(c);
      if (d == DataType::BFloat16 && !back) {
        ASSERT_EQ(kinds(sf), (std::vector<std::string>{"matmul", "kernel"}));
        EXPECT_EQ(sf.segments()[0].matmul()->activation, MatmulActivation::None);
        continue;
      }
      ASSERT_EQ(kinds(sf), std::vector<std::string>{"matmul"});
      EXPECT_EQ(sf.segments()[0].matmul()->activation, MatmulActivation::Relu);
      EXPECT_EQ(sf.segments()[0].matmul()->toString(), "linear with relu in the epilogue");
    }
  }
}

TEST(MatmulEpilogue, HalfLinearBiasGeluCastStaysAKernel) {
  // The bf16 MLP's form: linear (bf16) read in f32, the tanh gelu, cast back. The GEMM would skip
  // the product's bf16 rounding before the gelu: not taken (the bias alone is).
  for (DataType d : {DataType::BFloat16, DataType::Float16}) {
    Case c = linearCase(d, true, [d](Fusion& f, TensorView* y) {
      f.addOutput(
          ops::cast(ops::gelu(ops::cast(y, DataType::Float32), ops::GeluApproximation::Tanh), d));
    });
    SegmentedFusion sf = segmentAndCheck(c);
    ASSERT_EQ(kinds(sf), (std::vector<std::string>{"matmul", "kernel"}));
    EXPECT_EQ(sf.segments()[0].matmul()->toString(), "linear with bias in the epilogue");
  }
}

TEST(MatmulEpilogue, HalfResultsReturnedInF32StayKernels) {
  // cast(matmul(a, b), f32) of bf16 operands, and the tanh gelu of it returned in f32: cuBLASLt
  // could write f32, but the result would lack the bf16 rounding the fusion asks for.
  for (bool gelu : {false, true}) {
    Case c;
    {
      FusionGuard g(c.fusion.get());
      TensorView* a = input(*c.fusion, {2, 8, 32}, DataType::BFloat16);
      TensorView* b = input(*c.fusion, {32, 16}, DataType::BFloat16);
      TensorView* y = ops::cast(ops::matmul(a, b), DataType::Float32);
      c.fusion->addOutput(gelu ? ops::gelu(y, ops::GeluApproximation::Tanh) : y);
      c.args = {randomTensor({2, 8, 32}, DataType::BFloat16, 4),
                randomTensor({32, 16}, DataType::BFloat16, 5)};
    }
    SegmentedFusion sf = segmentAndCheck(c);
    ASSERT_EQ(kinds(sf), (std::vector<std::string>{"matmul", "kernel"}));
    EXPECT_EQ(sf.segments()[0].matmul()->toString(), "matmul");
  }
}

TEST(MatmulEpilogue, ErfGeluStaysALoomKernel) {
  // cuBLASLt's GELU is the tanh form: the erf gelu is a kernel of its own.
  Case c = linearCase(DataType::Float32, true, [](Fusion& f, TensorView* y) {
    f.addOutput(ops::gelu(y, ops::GeluApproximation::None));
  });
  SegmentedFusion sf = segmentAndCheck(c);
  ASSERT_EQ(kinds(sf), (std::vector<std::string>{"matmul", "kernel"}));
  EXPECT_EQ(sf.segments()[0].matmul()->activation, MatmulActivation::None);
  EXPECT_EQ(sf.segments()[0].matmul()->toString(), "linear with bias in the epilogue");
}

TEST(MatmulEpilogue, AProductWithAnotherUseIsNotFused) {
  // The product is also an output, or also read by another op: the gelu stays a kernel, as
  // the GEMM writes only the epilogue's result.
  for (bool as_output : {true, false}) {
    Case c = linearCase(DataType::Float32, false, [as_output](Fusion& f, TensorView* y) {
      TensorView* gelu = ops::gelu(y, ops::GeluApproximation::Tanh);
      if (as_output) {
        f.addOutput(gelu);
        f.addOutput(y);
      } else {
        f.addOutput(ops::add(gelu, y));
      }
    });
    SegmentedFusion sf = segmentAndCheck(c);
    ASSERT_EQ(kinds(sf), (std::vector<std::string>{"matmul", "kernel"})) << as_output;
    EXPECT_EQ(sf.segments()[0].matmul()->activation, MatmulActivation::None);
  }
  // A square of the product besides the composite's own x * x: one use too many.
  Case c = linearCase(DataType::Float32, false, [](Fusion& f, TensorView* y) {
    TensorView* gelu = ops::gelu(y, ops::GeluApproximation::Tanh);
    f.addOutput(gelu);
    f.addOutput(ops::mul(y, y));
  });
  SegmentedFusion sf = segmentAndCheck(c);
  EXPECT_EQ(sf.segments()[0].matmul()->activation, MatmulActivation::None);
}

TEST(MatmulEpilogue, CastsCuBlasLtCannotWriteStayKernels) {
  // An f32 product cast to bf16 (cuBLASLt writes f32 products as f32 only), and a bf16 product
  // read in f32 by an op that is no epilogue (tanh: writing f32 would only add bytes).
  Case narrow = linearCase(DataType::Float32, false, [](Fusion& f, TensorView* y) {
    f.addOutput(ops::cast(y, DataType::BFloat16));
  });
  SegmentedFusion sf = segmentAndCheck(narrow);
  ASSERT_EQ(kinds(sf), (std::vector<std::string>{"matmul", "kernel"}));
  EXPECT_EQ(sf.segments()[0].matmul()->toString(), "linear");
  Case other = linearCase(DataType::BFloat16, false, [](Fusion& f, TensorView* y) {
    f.addOutput(ops::cast(ops::tanh(y), DataType::BFloat16));
  });
  sf = segmentAndCheck(other);
  ASSERT_EQ(kinds(sf), (std::vector<std::string>{"matmul", "kernel"}));
  EXPECT_EQ(sf.segments()[0].matmul()->toString(), "linear");
}

TEST(MatmulEpilogue, OffInTheOptionsEveryConsumerIsAKernel) {
  Case c = linearCase(DataType::Float32, true,
                      [](Fusion& f, TensorView* y) { f.addOutput(ops::relu(y)); });
  SegmenterOptions options;
  options.matmulEpilogues = false;
  SegmentedFusion sf = segmentAndCheck(c, options);
  ASSERT_EQ(kinds(sf), (std::vector<std::string>{"matmul", "kernel"}));
  EXPECT_EQ(sf.segments()[0].matmul()->activation, MatmulActivation::None);
}

}  // namespace
}  // namespace loom::segmenter
