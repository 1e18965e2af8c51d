// SPDX-License-Identifier: Apache-2.0
// The .fus text form of the random ops (uniform, normal): exact round trips, the printed form,
// and parser and verifier errors.
#include <gtest/gtest.h>

#include "ir/text_test_util.h"
#include "loom/ops/ops.h"

namespace loom::ir {
namespace {

#define EXPECT_HAS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

using test::parseError;

// Seed and offset (scalar inputs or constants) and the parameters print as keyword arguments;
// the parsed fusion prints the same and keeps the distribution.
TEST(TextRandomTest, RoundTrip) {
  Fusion f;
  FusionGuard g(&f);
  auto* seed = IrBuilder::symbolic(DataType::Int64);
  auto* offset = IrBuilder::symbolic(DataType::Int64);
  f.addInput(seed);
  f.addInput(offset);
  auto* x = ops::TensorBuilder().shape({-1, 8}).dtype(DataType::BFloat16).build();
  f.addInput(x);
  f.addOutput(ops::uniform({4, 1, 8}, -1.0, 2.0, seed, offset, DataType::Float64));
  f.addOutput(ops::normal({4}, 0.5, 3.0, 7, offset));
  f.addOutput(ops::randnLike(x, seed, 12));
  test::expectRoundTrip(f);
  std::string text = printFusion(f);
  EXPECT_HAS(text, " = uniform(seed=s0, offset=s1, low=-1.0, high=2.0)");
  EXPECT_HAS(text, " = normal(seed=7, offset=s1, mean=0.5, std=3.0)");
  auto parsed = parseFusion(text, "rng.fus");
  auto* rng = parsed->outputs()[1]->definition();
  ASSERT_TRUE(rng->isA<RngOp>());
  EXPECT_EQ(rng->as<RngOp>()->rngType(), RngOpType::Normal);
  EXPECT_EQ(parsed->outputs()[2]->dtype(), DataType::BFloat16);
}

// Missing arguments, operands, a non-floating output and mistyped scalars are errors at the
// right place.
TEST(TextRandomTest, Errors) {
  const std::string head = "inputs: s0\noutputs: T1\ns0 : i64\n";
  auto err = parseError(head + "T1 : f32 global [i1{8}]\nT1 = uniform(seed=s0, offset=0, low=0)\n");
  EXPECT_HAS(err, "bad.fus:5:6: ");
  EXPECT_HAS(err, "uniform needs the argument high=");
  err =
      parseError(head + "T1 : f32 global [i1{8}]\nT1 = normal(seed=s0, offset=0, low=0, std=1)\n");
  EXPECT_HAS(err, "unknown argument 'low' of normal");
  err = parseError(head +
                   "T1 : i32 global [i1{8}]\nT1 = uniform(seed=s0, offset=0, low=0, high=1)\n");
  EXPECT_HAS(err, "uniform makes floating-point values, not i32");
  err = parseError(head +
                   "T1 : f32 global [i1{8}]\nT1 = uniform(seed=s0, offset=0.5, low=0, high=1)\n");
  EXPECT_HAS(err, "the literal 0.5 is not a value of i64");
  err = parseError(
      "inputs: s0\noutputs: T1\ns0 : f64\n"
      "T1 : f32 global [i1{8}]\nT1 = uniform(seed=s0, offset=0, low=0, high=1)\n");
  EXPECT_HAS(err, "uniform takes its seed and offset as i64");
}

}  // namespace
}  // namespace loom::ir
