// SPDX-License-Identifier: Apache-2.0
// TensorBuilder: extents, IterTypes, contiguity, stride order, memory type and errors.
#include "ops_test_utils.h"

namespace loom::ops::testing {
namespace {

using TensorBuilderTest = OpsTest;

// -1 is a symbolic Iteration extent, 1 a Broadcast, others constants; memory is Global.
TEST_F(TensorBuilderTest, Shape) {
  auto* x = TensorBuilder().shape({-1, 1, 4096}).dtype(DataType::BFloat16).build();
  EXPECT_EQ(x->dtype(), DataType::BFloat16);
  EXPECT_EQ(types(x), "iter,bcast,iter");
  EXPECT_EQ(sizes(x), (std::vector<int64_t>{-1, 1, 4096}));
  EXPECT_FALSE(x->logical()[0]->extent()->isConst());
  EXPECT_EQ(x->memoryType(), ir::MemoryType::Global);
  EXPECT_EQ(x->contiguity(), (ir::Contiguity{true, std::nullopt, true}));
  auto* r = TensorBuilder().rank(2).build();
  EXPECT_EQ(sizes(r), (std::vector<int64_t>{-1, -1}));
  EXPECT_NE(r->logical()[0]->extent(), r->logical()[1]->extent());
  EXPECT_EQ(x->definition(), nullptr);
  EXPECT_FALSE(fusion_.isInput(x));
}

// contiguous(false) and explicit contiguity flags.
TEST_F(TensorBuilderTest, Contiguity) {
  auto* a = TensorBuilder().shape({2, 3}).contiguous(false).build();
  EXPECT_EQ(a->contiguity(), (ir::Contiguity{false, false}));
  auto* b = TensorBuilder().shape({2, 1, 3}).contiguity({false, std::nullopt, true}).build();
  EXPECT_EQ(b->contiguity(), (ir::Contiguity{false, std::nullopt, true}));
}

// strideOrder sets the allocation domain; contiguity given per logical axis is reordered.
TEST_F(TensorBuilderTest, StrideOrder) {
  auto* x = TensorBuilder().shape({2, 3, 4}).strideOrder({0, 2, 1}).contiguity(
      {true, false, true}).build();
  ASSERT_EQ(x->allocation().size(), 3u);
  EXPECT_EQ(x->allocation()[1], x->logical()[2]);
  EXPECT_EQ(x->allocation()[2], x->logical()[1]);
  EXPECT_EQ(x->contiguity(), (ir::Contiguity{true, true, false}));
  auto* y = TensorBuilder().shape({2, 3}).strideOrder({0, 1}).build();
  EXPECT_FALSE(y->domain()->hasAllocation());
  fusion_.addInput(x);
  fusion_.addInput(y);
  EXPECT_NO_THROW(ir::verify(fusion_));
}

// Bad sizes, stride orders and contiguity lengths are UserErrors.
TEST_F(TensorBuilderTest, Errors) {
  EXPECT_HAS(userError([&] { TensorBuilder().shape({2, -3}); }), "size -3");
  EXPECT_HAS(userError([&] { TensorBuilder().shape({2, 3}).strideOrder({0, 0}).build(); }),
             "not a permutation");
  EXPECT_HAS(userError([&] { TensorBuilder().shape({2, 3}).contiguity({true}).build(); }),
             "contiguity has 1 entries");
  EXPECT_HAS(userError([&] { TensorBuilder().shape({1}).contiguity({true}).build(); }),
             "must be nullopt");
}

}  // namespace
}  // namespace loom::ops::testing
