// SPDX-License-Identifier: Apache-2.0
// A disk cache of compiled cubins, one file per key, written atomically (temp file + rename).
//
// Layout: <dir>/<16 hex digits of the key>.cubin, holding a header with the SHA-256 of the rest,
// the key, the compiler log (so register and spill counts survive a warm start) and the cubin.
// Nothing is handed out before its checksum verifies: a missing file is a quiet miss; a damaged
// file, one for another key, or one that is not a private regular file of ours (a FIFO, a
// directory, a link to a device: opened without waiting, see readPrivateFile) is a miss with a
// one-line warning, and the next store replaces it. <dir> is created with mode 0700 and is used
// only while it is a private directory of the current user (see loom/support/private_dir.h);
// otherwise every load is a miss and stores are skipped, with one warning. I/O failures are misses
// or skipped stores, never errors, since the cache is optional. All methods are safe to call
// concurrently (from threads or processes).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace loom::cuda {

/// The root of Loom's caches (loom::cacheRoot()): $LOOM_CACHE_DIR, else $XDG_CACHE_HOME/loom,
/// else ~/.cache/loom, else <temp dir>/loom-cache-<uid>. Always has a value.
std::optional<std::filesystem::path> defaultCacheRoot();

class CubinCache {
 public:
  struct Entry {
    std::string log;  ///< the compiler's log (ptxas info)
    std::vector<char> cubin;
  };

  explicit CubinCache(std::filesystem::path dir) : dir_(std::move(dir)) {}

  /// The entry stored under `key`, verified against its checksum, or nullopt.
  std::optional<Entry> load(uint64_t key) const;
  /// Stores atomically; returns false (after creating nothing visible) when it cannot write.
  bool store(uint64_t key, const Entry& entry) const;

  std::filesystem::path pathFor(uint64_t key) const;
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
};

}  // namespace loom::cuda
