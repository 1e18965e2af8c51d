// SPDX-License-Identifier: Apache-2.0
// The on-disk cubin cache: file format with a SHA-256 checksum, private atomic stores, and the
// default cache location.
#include "loom/backend/cuda/cubin_cache.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cstring>

#include "loom/support/cache_root.h"
#include "loom/support/error.h"
#include "loom/support/private_dir.h"
#include "loom/support/private_file.h"
#include "loom/support/sha256.h"
#include "loom/support/warning.h"

namespace loom::cuda {
namespace {

using ::loom::detail::concat;

// File: magic, the SHA-256 of everything after it, then the key, the log's length and bytes, the
// cubin's length and bytes (little-endian u64 lengths). The key is inside the checksummed part,
// so a renamed or mixed-up file is caught too.
constexpr char kMagic[8] = {'L', 'O', 'O', 'M', 'C', 'B', '0', '2'};
// Files of the format before checksums; a quiet miss, then overwritten.
constexpr char kOldMagic[8] = {'L', 'O', 'O', 'M', 'C', 'B', '0', '1'};
constexpr size_t kChecksumBytes = 32;

void putU64(std::string& out, uint64_t v) { out.append(reinterpret_cast<const char*>(&v), 8); }

bool getU64(std::string_view& in, uint64_t& v) {
  if (in.size() < 8) return false;
  std::memcpy(&v, in.data(), 8);
  in.remove_prefix(8);
  return true;
}

void warnBadEntry(const std::filesystem::path& path, std::string_view problem) {
  warn(concat("cubin cache entry ", path.string(), " ", problem, "; recompiling"));
}

/// Whether the cache folder may be used; warns once per folder when not.
bool trusted(const std::filesystem::path& dir) {
  if (auto problem = privateDirectoryProblem(dir)) {
    warnOnce(concat("cubin cache ", dir.string(), " is not used: it ", *problem));
    return false;
  }
  return true;
}

}  // namespace

std::optional<std::filesystem::path> defaultCacheRoot() { return cacheRoot(); }

std::filesystem::path CubinCache::pathFor(uint64_t key) const {
  return dir_ / fmt::format("{:016x}.cubin", key);
}

std::optional<CubinCache::Entry> CubinCache::load(uint64_t key) const {
  std::error_code ec;
  if (!std::filesystem::exists(dir_, ec) || !trusted(dir_)) return std::nullopt;
  const std::filesystem::path path = pathFor(key);
  std::string bytes;
  if (auto problem = readPrivateFile(path, bytes)) {
    if (*problem != "does not exist") warnBadEntry(path, *problem);
    return std::nullopt;
  }
  std::string_view view(bytes);
  if (view.size() >= sizeof(kOldMagic) &&
      std::memcmp(view.data(), kOldMagic, sizeof(kOldMagic)) == 0) {
    return std::nullopt;
  }
  if (view.size() < sizeof(kMagic) + kChecksumBytes ||
      std::memcmp(view.data(), kMagic, sizeof(kMagic)) != 0) {
    warnBadEntry(path, "is not a cubin cache file");
    return std::nullopt;
  }
  view.remove_prefix(sizeof(kMagic));
  const auto stored = view.substr(0, kChecksumBytes);
  view.remove_prefix(kChecksumBytes);
  const auto digest = Sha256().update(view).digest();
  if (std::memcmp(stored.data(), digest.data(), kChecksumBytes) != 0) {
    warnBadEntry(path, "failed its checksum");
    return std::nullopt;
  }
  uint64_t storedKey = 0, logSize = 0, cubinSize = 0;
  Entry entry;
  if (!getU64(view, storedKey) || !getU64(view, logSize) || view.size() < logSize) {
    warnBadEntry(path, "is malformed");
    return std::nullopt;
  }
  entry.log.assign(view.substr(0, logSize));
  view.remove_prefix(logSize);
  if (!getU64(view, cubinSize) || view.size() != cubinSize || cubinSize == 0) {
    warnBadEntry(path, "is malformed");
    return std::nullopt;
  }
  if (storedKey != key) {
    warnBadEntry(path, "holds the entry of another key");
    return std::nullopt;
  }
  entry.cubin.assign(view.begin(), view.end());
  return entry;
}

// Writes an unpredictably named temp file in the same folder, then renames it over the final name:
// readers see either no file or a whole one, and concurrent writers of one key both succeed.
bool CubinCache::store(uint64_t key, const Entry& entry) const {
  if (createPrivateDirectories(dir_) || !trusted(dir_)) return false;
  std::string body;
  putU64(body, key);
  putU64(body, entry.log.size());
  body += entry.log;
  putU64(body, entry.cubin.size());
  body.append(entry.cubin.data(), entry.cubin.size());
  const auto digest = Sha256().update(body).digest();
  std::string bytes(kMagic, sizeof(kMagic));
  bytes.append(reinterpret_cast<const char*>(digest.data()), digest.size());
  bytes += body;
  const std::filesystem::path path = pathFor(key);
  // rename(2) replaces a FIFO, a socket or a link in the entry's place, but not a directory.
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  return !writeFileAtomically(path, bytes, 0600).has_value();
}

}  // namespace loom::cuda
