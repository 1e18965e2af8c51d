// SPDX-License-Identifier: Apache-2.0
// Helpers of the runtime tests: random host inputs and host-backend options with outputs poisoned.
#pragma once

#include <vector>

#include "loom/runtime/fusion_executor_cache.h"
#include "loom/tensor/tensor.h"

namespace loom::runtime::test {

/// A contiguous Float32 host tensor of `sizes` with random values from `seed`.
inline Tensor randomTensor(std::vector<int64_t> sizes, uint64_t seed) {
  Tensor t = Tensor::empty(std::move(sizes), DataType::Float32);
  fillRandom(t, seed);
  return t;
}

/// The host backend, outputs poisoned before every launch.
inline RuntimeOptions hostOptions() {
  RuntimeOptions o;
  o.backend = exec::Backend::Host;
  o.executor.poisonOutputs = true;
  return o;
}

}  // namespace loom::runtime::test
