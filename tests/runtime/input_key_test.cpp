// SPDX-License-Identifier: Apache-2.0
// InputKey: what distinguishes two sets of inputs for the kernel cache.
#include <gtest/gtest.h>

#include "loom/runtime/fusion_executor_cache.h"

namespace loom::runtime {
namespace {

InputKey keyOf(std::vector<eval::Argument> args) { return InputKey::of(args); }

// Equal dtypes, sizes, strides and alignment give equal keys and hashes, whatever the data.
TEST(InputKey, SameLayoutSameKey) {
  Tensor a = Tensor::empty({4, 8}, DataType::Float32);
  Tensor b = Tensor::empty({4, 8}, DataType::Float32);
  InputKey ka = keyOf({a, 2.0});
  InputKey kb = keyOf({b, 3.5});  // scalar values are not part of the key
  EXPECT_EQ(ka, kb);
  EXPECT_EQ(ka.hash, kb.hash);
}

// Each of dtype, size, stride and argument kind changes the key.
TEST(InputKey, EveryFieldMatters) {
  Tensor base = Tensor::empty({4, 8}, DataType::Float32);
  InputKey k = keyOf({base});
  EXPECT_FALSE(k == keyOf({Tensor::empty({4, 8}, DataType::Float64)}));
  EXPECT_FALSE(k == keyOf({Tensor::empty({4, 9}, DataType::Float32)}));
  EXPECT_FALSE(k == keyOf({Tensor::empty({32}, DataType::Float32)}));
  EXPECT_FALSE(k == keyOf({Tensor::emptyStrided({4, 8}, {1, 4}, DataType::Float32)}));
  EXPECT_FALSE(k == keyOf({base, int64_t{1}}));
  EXPECT_FALSE(keyOf({1.0}) == keyOf({int64_t{1}}));
}

// The hash follows every field: keys that differ only in one stride or one size hash apart
// (the word-wise hash must not drop or cancel fields).
TEST(InputKey, DifferentKeysHashApart) {
  InputKey k = keyOf({Tensor::empty({4, 8}, DataType::Float32)});
  EXPECT_NE(k.hash, keyOf({Tensor::emptyStrided({4, 8}, {1, 4}, DataType::Float32)}).hash);
  EXPECT_NE(k.hash, keyOf({Tensor::empty({4, 9}, DataType::Float32)}).hash);
  EXPECT_NE(k.hash, keyOf({Tensor::empty({8, 4}, DataType::Float32)}).hash);
  EXPECT_NE(k.hash, keyOf({Tensor::empty({4, 8}, DataType::Float64)}).hash);
}

// A view offset by one element is only 4-byte aligned and keys differently from the aligned
// tensor of the same shape (vectorization depends on it).
TEST(InputKey, AlignmentMatters) {
  Tensor big = Tensor::empty({65}, DataType::Float32);
  Tensor aligned(big.storage(), DataType::Float32, {64}, {1}, 0);
  Tensor shifted(big.storage(), DataType::Float32, {64}, {1}, 1);
  Tensor aligned4(big.storage(), DataType::Float32, {64}, {1}, 4);
  EXPECT_FALSE(keyOf({aligned}) == keyOf({shifted}));
  EXPECT_EQ(keyOf({aligned}), keyOf({aligned4}));  // both 16-byte aligned
}

}  // namespace
}  // namespace loom::runtime
