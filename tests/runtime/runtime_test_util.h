// SPDX-License-Identifier: Apache-2.0
// Helpers of the runtime tests: random host inputs and host-backend options with outputs poisoned.
#pragma once

#include <random>
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

/// A contiguous host index tensor (Int32 or Int64) of `sizes` with values drawn uniformly from
/// [lo, hi) by `seed`.
inline Tensor randomIndexTensor(std::vector<int64_t> sizes, int64_t lo, int64_t hi, DataType dt,
                                uint64_t seed) {
  Tensor t = Tensor::empty(std::move(sizes), dt);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> pick(lo, hi - 1);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (dt == DataType::Int32) {
      static_cast<int32_t*>(t.data())[i] = int32_t(pick(rng));
    } else {
      static_cast<int64_t*>(t.data())[i] = pick(rng);
    }
  }
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
