// SPDX-License-Identifier: Apache-2.0
// FusionExecutorCache on a fusion with a dynamic reshape (host backend): the working copy is
// concretized for each key, a key whose concretization differs gets its own runtime, and scalar
// arguments that decide sizes are part of the key.
#include <gtest/gtest.h>

#include "loom/ir/ir.h"
#include "loom/ops/ops.h"
#include "loom/runtime/fusion_executor_cache.h"
#include "runtime/runtime_test_util.h"

namespace loom::runtime {
namespace {

using test::hostOptions;
using test::runAndCheck;

// exp(reshape(x, {-1, n})) with a scalar input n: the same tensor with another n is a miss (n
// is part of the key) whose concretization differs, so it gets a new runtime.
TEST(DynamicReshapeCache, ScalarSizeIsKeyed) {
  auto f = std::make_unique<ir::Fusion>();
  {
    ir::FusionGuard g(f.get());
    auto* x = ops::TensorBuilder().rank(1).build();
    auto* n = ir::IrBuilder::symbolic(DataType::Int64);
    f->addInput(x);
    f->addInput(n);
    f->addOutput(ops::exp(ops::reshape(x, {-1, n})));
  }
  FusionExecutorCache cache(std::move(f), hostOptions());
  Tensor x = test::randomTensor({6}, 6);
  runAndCheck(cache, {x, int64_t{1}});  // [6, 1]
  runAndCheck(cache, {x, int64_t{1}});
  EXPECT_EQ(cache.hits(), 1);
  cache.run(std::vector<eval::Argument>{x, int64_t{6}});  // [1, 6]: new key, new concretization
  EXPECT_EQ(cache.misses(), 2);
  EXPECT_EQ(cache.numRuntimes(), 2);
}

}  // namespace
}  // namespace loom::runtime
