// SPDX-License-Identifier: Apache-2.0
// Stable hashing (FNV-1a 64) for cache keys that outlive a process (disk caches) and in-memory maps.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>

namespace loom {

/// Incremental FNV-1a 64-bit hash. Stable across runs and platforms of the same endianness.
class Hasher {
 public:
  Hasher& bytes(const void* data, size_t n) {
    auto p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < n; ++i) {
      state_ ^= p[i];
      state_ *= 1099511628211ull;
    }
    return *this;
  }
  Hasher& str(std::string_view s) {
    uint64_t n = s.size();
    bytes(&n, sizeof(n));
    return bytes(s.data(), s.size());
  }
  template <typename T>
    requires std::is_trivially_copyable_v<T>
  Hasher& value(const T& v) {
    return bytes(&v, sizeof(T));
  }
  uint64_t digest() const { return state_; }

 private:
  uint64_t state_ = 14695981039346656037ull;
};

inline uint64_t hashCombine(uint64_t seed, uint64_t v) {
  return seed ^ (v + 0x9e3779b97f4a7c15ull + (seed << 6) + (seed >> 2));
}

}  // namespace loom
