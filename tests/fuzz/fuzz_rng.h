// SPDX-License-Identifier: Apache-2.0
// The fuzzer's own pseudo-random generator (splitmix64): the same seed gives the same numbers with
// every compiler and standard library, which std::random_device and std's distributions do not.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace loom::fuzz {

/// One step of splitmix64 applied to a value: a good 64-bit mixing function.
constexpr uint64_t mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// A seed derived from a seed and a stream number (for example one per input and run).
constexpr uint64_t deriveSeed(uint64_t seed, uint64_t stream) {
  return mix64(mix64(seed) ^ (stream * 0xd1b54a32d192ed03ULL + 0x632be59bd9b4e019ULL));
}

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(mix64(seed)) {}

  uint64_t next() {
    state_ += 0x9e3779b97f4a7c15ULL;
    uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  /// Uniform in [0, n) (n > 0), by rejection so that no value is favoured.
  uint64_t below(uint64_t n) {
    if (n <= 1) return 0;
    const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t v = next();
    while (v >= limit) v = next();
    return v % n;
  }

  /// Uniform in [lo, hi] (inclusive).
  int64_t range(int64_t lo, int64_t hi) {
    return lo + int64_t(below(uint64_t(hi - lo) + 1));
  }

  /// Uniform in [0, 1) with 53 random bits.
  double uniform() { return double(next() >> 11) * 0x1p-53; }

  bool chance(double p) { return uniform() < p; }

  template <typename T>
  const T& pick(const std::vector<T>& v) {
    return v[size_t(below(v.size()))];
  }

  /// An index drawn with the given non-negative weights (at least one positive).
  size_t weighted(std::span<const double> weights) {
    double total = 0;
    for (double w : weights) total += w;
    double r = uniform() * total;
    for (size_t i = 0; i < weights.size(); ++i) {
      if (r < weights[i]) return i;
      r -= weights[i];
    }
    for (size_t i = weights.size(); i-- > 0;) {
      if (weights[i] > 0) return i;
    }
    return 0;
  }

  /// A random permutation of 0..n-1 (Fisher-Yates).
  std::vector<int64_t> permutation(int64_t n) {
    std::vector<int64_t> p(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) p[size_t(i)] = i;
    for (int64_t i = n - 1; i > 0; --i) std::swap(p[size_t(i)], p[below(uint64_t(i) + 1)]);
    return p;
  }

 private:
  uint64_t state_;
};

}  // namespace loom::fuzz
