// SPDX-License-Identifier: Apache-2.0
// The on-disk cubin cache: file format, atomic stores, and the default cache location.
#include "loom/backend/cuda/cubin_cache.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "loom/support/error.h"
#include "loom/support/options.h"

namespace loom::cuda {
namespace {

// File: magic, the key, the log's length and bytes, the cubin's length and bytes (little-endian
// u64 lengths). The key is repeated inside so that a renamed or mixed-up file is a miss.
constexpr char kMagic[8] = {'L', 'O', 'O', 'M', 'C', 'B', '0', '1'};

void putU64(std::string& out, uint64_t v) { out.append(reinterpret_cast<const char*>(&v), 8); }

bool getU64(std::string_view& in, uint64_t& v) {
  if (in.size() < 8) return false;
  std::memcpy(&v, in.data(), 8);
  in.remove_prefix(8);
  return true;
}

}  // namespace

std::optional<std::filesystem::path> defaultCacheRoot() {
  if (auto dir = getEnv("LOOM_CACHE_DIR"); dir && !dir->empty()) return std::filesystem::path(*dir);
  if (auto xdg = getEnv("XDG_CACHE_HOME"); xdg && !xdg->empty()) {
    return std::filesystem::path(*xdg) / "loom";
  }
  if (auto home = getEnv("HOME"); home && !home->empty()) {
    return std::filesystem::path(*home) / ".cache" / "loom";
  }
  return std::nullopt;
}

std::filesystem::path CubinCache::pathFor(uint64_t key) const {
  char name[32];
  std::snprintf(name, sizeof(name), "%016llx.cubin", static_cast<unsigned long long>(key));
  return dir_ / name;
}

std::optional<CubinCache::Entry> CubinCache::load(uint64_t key) const {
  std::ifstream in(pathFor(key), std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream buffer;
  buffer << in.rdbuf();
  std::string bytes = buffer.str();
  std::string_view view(bytes);
  if (view.size() < sizeof(kMagic) || std::memcmp(view.data(), kMagic, sizeof(kMagic)) != 0) {
    return std::nullopt;
  }
  view.remove_prefix(sizeof(kMagic));
  uint64_t storedKey = 0, logSize = 0, cubinSize = 0;
  if (!getU64(view, storedKey) || storedKey != key) return std::nullopt;
  if (!getU64(view, logSize) || view.size() < logSize) return std::nullopt;
  Entry entry;
  entry.log.assign(view.substr(0, logSize));
  view.remove_prefix(logSize);
  if (!getU64(view, cubinSize) || view.size() != cubinSize || cubinSize == 0) return std::nullopt;
  entry.cubin.assign(view.begin(), view.end());
  return entry;
}

// Writes a uniquely named temp file in the same folder, then renames it over the final name:
// readers see either no file or a whole one, and concurrent writers of one key both succeed.
bool CubinCache::store(uint64_t key, const Entry& entry) const {
  static std::atomic<uint64_t> counter{0};
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) return false;
  std::string bytes(kMagic, sizeof(kMagic));
  putU64(bytes, key);
  putU64(bytes, entry.log.size());
  bytes += entry.log;
  putU64(bytes, entry.cubin.size());
  bytes.append(entry.cubin.data(), entry.cubin.size());

  std::filesystem::path final = pathFor(key);
  std::filesystem::path temp = final;
  temp += ::loom::detail::concat(".tmp.", ::getpid(), ".", counter.fetch_add(1));
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) return false;
    out.write(bytes.data(), std::streamsize(bytes.size()));
    out.close();
    if (!out) {
      std::filesystem::remove(temp, ec);
      return false;
    }
  }
  std::filesystem::rename(temp, final, ec);
  if (ec) {
    std::filesystem::remove(temp, ec);
    return false;
  }
  return true;
}

}  // namespace loom::cuda
