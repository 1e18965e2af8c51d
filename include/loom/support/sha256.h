// SPDX-License-Identifier: Apache-2.0
// SHA-256 (FIPS 180-4), for checksums of disk cache entries.
//
//   Sha256 h;
//   h.update(bytes).update(more);
//   std::string hex = h.hexDigest();      // 64 lowercase hex digits
//
// Why not loom::Hasher (FNV-1a 64): a cache entry's checksum must catch any damage to a file
// (truncation, a flipped byte, a file from another entry), and FNV's 64 bits are weak against a
// deliberately crafted file. SHA-256 is unkeyed, so it does not authenticate a file an attacker can
// rewrite; the caches keep their files in private directories for that.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace loom {

class Sha256 {
 public:
  Sha256();

  Sha256& update(const void* data, size_t n);
  Sha256& update(std::string_view s) { return update(s.data(), s.size()); }
  /// A length-prefixed string, so that ("ab", "c") and ("a", "bc") hash differently.
  Sha256& str(std::string_view s);

  /// The digest of everything updated so far (the object can keep accumulating afterwards).
  std::array<uint8_t, 32> digest() const;
  std::string hexDigest() const;

 private:
  void compress(const uint8_t* block);

  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  uint64_t totalBytes_ = 0;
};

/// The hex SHA-256 of `bytes`.
std::string sha256Hex(std::string_view bytes);

}  // namespace loom
