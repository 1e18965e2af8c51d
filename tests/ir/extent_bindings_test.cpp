// SPDX-License-Identifier: Apache-2.0
// The one size rule (ir/extent_bindings.h): what an argument's sizes bind, for plain, DID-split,
// localized and expanded dims, and which input binds a symbol first.
#include <gtest/gtest.h>

#include "loom/ir/builder.h"
#include "loom/ir/extent_bindings.h"
#include "loom/ir/fusion.h"
#include "loom/ir/scalar_math.h"
#include "loom/ir/tensor_domain.h"

namespace loom::ir {
namespace {

TensorView* tensorOf(std::vector<IterDomain*> ids) {
  auto* td = IrBuilder::create<TensorDomain>(ids, TensorDomain::defaultContiguity(ids, true));
  return IrBuilder::create<TensorView>(td, DataType::Float32, MemoryType::Global);
}

TEST(ExtentBindings, EachFormOfDim) {
  Fusion f;
  FusionGuard g(&f);
  Scalar* b = IrBuilder::symbolic(DataType::Int64);
  Scalar* s = IrBuilder::symbolic(DataType::Int64);
  Scalar* e = IrBuilder::symbolic(DataType::Int64);
  Scalar* x = IrBuilder::symbolic(DataType::Int64);

  // As the user wrote it: s split over 4 devices by a DID loop ID.
  TensorView* sharded = tensorOf({IterDomain::create(b), IterDomain::create(s),
                                  IterDomain::create(IrBuilder::index(8))});
  sharded->setDeviceMesh(DeviceMesh::arange(4));
  sharded->outerSplit(1, 4);
  sharded->axis(1)->parallelize(ParallelType::DIDx);
  EXPECT_EQ(shardCounts(sharded), (std::vector<int64_t>{1, 4, 1}));
  EXPECT_EQ(shardFactors(sharded), (std::vector<int64_t>{1, 4, 1}));
  std::vector<ExtentBinding> got = extentBindings(sharded);
  ASSERT_EQ(got.size(), 2u);  // the constant 8 binds nothing
  EXPECT_TRUE(got[0].symbol == b && got[0].dim == 0 && got[0].factor == 1);
  EXPECT_TRUE(got[1].symbol == s && got[1].dim == 1 && got[1].factor == 4);

  // After localize_shards: the extent is s / 4, and an argument's size still binds s times 4.
  TensorView* local = tensorOf({IterDomain::create(scalar_math::div(s, IrBuilder::index(4)))});
  EXPECT_EQ(shardCounts(local), (std::vector<int64_t>{1}));  // no DID split left
  EXPECT_EQ(shardFactors(local), (std::vector<int64_t>{4}));
  got = extentBindings(local);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(got[0].symbol == s && got[0].factor == 4);

  // An expanded broadcast binds its expanded extent; a plain broadcast nothing.
  TensorView* expanded = tensorOf(
      {IrBuilder::create<IterDomain>(IrBuilder::index(0), IrBuilder::index(1),
                                     IterType::Broadcast, ParallelType::Serial, e),
       IterDomain::create(IrBuilder::index(1), IterType::Broadcast), IterDomain::create(x)});
  got = extentBindings(expanded);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(got[0].symbol == e && got[0].dim == 0 && got[0].factor == 1);
  EXPECT_TRUE(got[1].symbol == x && got[1].dim == 2);

  // The first input in input order binds a symbol; scalars and unbound symbols give nothing.
  f.addInput(IrBuilder::symbolic(DataType::Int64));
  f.addInput(expanded);
  f.addInput(local);
  f.addInput(sharded);
  auto found = findInputBinding(f, s);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->input, 2u);
  EXPECT_EQ(found->tv, local);
  EXPECT_EQ(found->binding.factor, 4);
  found = findInputBinding(f, b);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->input, 3u);
  EXPECT_FALSE(findInputBinding(f, IrBuilder::symbolic(DataType::Int64)).has_value());
}

}  // namespace
}  // namespace loom::ir
