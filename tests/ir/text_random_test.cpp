// SPDX-License-Identifier: Apache-2.0
// The .fus text form of the random ops (uniform, normal) and of iota's and their blocks of a
// larger draw (a device's shard: index offsets, global extents): exact round trips, the printed
// form, and parser and verifier errors.
#include <gtest/gtest.h>

#include "ir/text_test_util.h"
#include "loom/ir/scalar_math.h"
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

// A block of a larger draw (what localize_shards makes of a sharded RngOp or iota) prints its
// index offsets and global extents as lists (scalar expressions and constants) and keeps them
// through a parse; without them nothing is printed (the unsharded form above).
TEST(TextRandomTest, RoundTripOfABlock) {
  Fusion f;
  FusionGuard g(&f);
  auto* pos = IrBuilder::symbolic(kIndexType);
  auto* n = IrBuilder::symbolic(kIndexType);
  f.addInput(pos);
  f.addInput(n);
  TensorView* r = ops::uniform({4, 8}, 0.0, 1.0, 3, 5, DataType::BFloat16);
  TensorView* io = ops::iota(6, 1.0, 2.0, DataType::Float32);
  f.addOutput(r);
  f.addOutput(io);
  Expr* def = r->definition();
  f.removeExpr(def);
  Scalar* row0 = scalar_math::mul(pos, IrBuilder::index(4));
  IrBuilder::create<RngOp>(r, RngOpType::Uniform, IrBuilder::constant(int64_t(3)),
                           IrBuilder::constant(int64_t(5)), IrBuilder::constant(0.0),
                           IrBuilder::constant(1.0),
                           std::vector<Scalar*>{row0, IrBuilder::index(0)},
                           std::vector<Scalar*>{n, IrBuilder::index(8)});
  IotaOp* old_iota = io->definition()->as<IotaOp>();
  Scalar* start = old_iota->start();
  Scalar* step = old_iota->step();
  f.removeExpr(old_iota);
  IrBuilder::create<IotaOp>(io, start, step, scalar_math::mul(pos, IrBuilder::index(6)));
  test::expectRoundTrip(f);
  const std::string text = printFusion(f);
  EXPECT_HAS(text, "low=0.0, high=1.0, index_offsets=[s");
  EXPECT_HAS(text, ", 0], global_extents=[s1, 8])");
  EXPECT_HAS(text, " = iota(start=f32(1.0), step=f32(2.0), index_offset=s");
  auto parsed = parseFusion(text, "block.fus");
  auto* rng = parsed->outputs()[0]->definition()->as<RngOp>();
  ASSERT_TRUE(rng->hasIndexOffsets());
  EXPECT_EQ(rng->indexOffsets().size(), 2u);
  EXPECT_TRUE(rng->indexOffsets()[1]->isConstInt(0));
  EXPECT_TRUE(rng->globalExtents()[1]->isConstInt(8));
  EXPECT_NE(parsed->outputs()[1]->definition()->as<IotaOp>()->indexOffset(), nullptr);
}

// A block names both lists, one entry per dim, integer scalars only.
TEST(TextRandomTest, BlockErrors) {
  const std::string head = "inputs: s0\noutputs: T1\ns0 : i64\nT1 : f32 global [i1{8}, i2{4}]\n";
  auto err = parseError(
      head + "T1 = uniform(seed=s0, offset=0, low=0, high=1, index_offsets=[0, 0])\n");
  EXPECT_HAS(err, "uniform needs the argument global_extents=");
  err = parseError(head +
                   "T1 = uniform(seed=s0, offset=0, low=0, high=1, index_offsets=[0, 0], "
                   "global_extents=[16])\n");
  EXPECT_HAS(err, "uniform has 2 index offsets but 1 global extents (one each per dim)");
  err = parseError(head +
                   "T1 = uniform(seed=s0, offset=0, low=0, high=1, index_offsets=[0], "
                   "global_extents=[16])\n");
  EXPECT_HAS(err, "uniform has 1 index offsets and global extents, but T1");
  EXPECT_HAS(err, "has 2 dims (one each per dim)");
  err = parseError(head +
                   "T1 = uniform(seed=s0, offset=0, low=0, high=1, index_offsets=[0.5, 0], "
                   "global_extents=[16, 4])\n");
  EXPECT_HAS(err, "expected an integer scalar in the list, got '0.5'");
  err = parseError(head +
                   "T1 = uniform(seed=s0, offset=0, low=0, high=1, index_offsets=true, "
                   "global_extents=[16, 4])\n");
  EXPECT_HAS(err, "index_offsets must be a list of integer scalars such as [s3, 0]");
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
