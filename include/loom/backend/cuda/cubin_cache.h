// SPDX-License-Identifier: Apache-2.0
// A disk cache of compiled cubins, one file per key, written atomically (temp file + rename).
//
// Layout: <dir>/<16 hex digits of the key>.cubin, holding a small header, the compiler log (so
// register and spill counts survive a warm start) and the cubin. A file that does not parse is a
// miss; any I/O failure is a miss or a skipped store, never an error, since the cache is optional.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace loom::cuda {

/// The root of Loom's caches: $LOOM_CACHE_DIR, else $XDG_CACHE_HOME/loom, else ~/.cache/loom;
/// nullopt when none can be determined (no HOME).
std::optional<std::filesystem::path> defaultCacheRoot();

class CubinCache {
 public:
  struct Entry {
    std::string log;         ///< the compiler's log (ptxas info)
    std::vector<char> cubin;
  };

  explicit CubinCache(std::filesystem::path dir) : dir_(std::move(dir)) {}

  /// The entry stored under `key`, or nullopt.
  std::optional<Entry> load(uint64_t key) const;
  /// Stores atomically; returns false (after creating nothing visible) when it cannot write.
  bool store(uint64_t key, const Entry& entry) const;

  std::filesystem::path pathFor(uint64_t key) const;
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
};

}  // namespace loom::cuda
