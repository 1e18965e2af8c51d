// SPDX-License-Identifier: Apache-2.0
// The cache root from the environment, with a per-user fallback, and the cache lock's timeout.
#include "loom/support/cache_root.h"

#include <unistd.h>

#include <charconv>
#include <cmath>
#include <string>
#include <system_error>

#include "loom/support/error.h"
#include "loom/support/options.h"

namespace loom {

namespace fs = std::filesystem;

fs::path cacheRoot() {
  if (auto dir = getEnv("LOOM_CACHE_DIR"); dir && !dir->empty()) return fs::path(*dir);
  if (auto xdg = getEnv("XDG_CACHE_HOME"); xdg && !xdg->empty()) return fs::path(*xdg) / "loom";
  if (auto home = getEnv("HOME"); home && !home->empty()) {
    return fs::path(*home) / ".cache" / "loom";
  }
  // No home: a name of this user's own in the temp dir. Another user may have taken the name
  // first; the caches' trust check then refuses the directory (see private_dir.h).
  std::error_code ec;
  fs::path tmp = fs::temp_directory_path(ec);
  if (ec || tmp.empty()) tmp = "/tmp";
  return tmp / ("loom-cache-" + std::to_string(::geteuid()));
}

std::chrono::milliseconds cacheLockTimeout() {
  const std::string text = getEnv("LOOM_CACHE_LOCK_TIMEOUT").value_or("");
  if (text.empty()) return kDefaultCacheLockTimeout;
  double seconds = -1;
  const auto res = std::from_chars(text.data(), text.data() + text.size(), seconds);
  LOOM_CHECK(res.ec == std::errc() && res.ptr == text.data() + text.size() &&
                 std::isfinite(seconds) && seconds >= 0 && seconds < 1e9,
             "LOOM_CACHE_LOCK_TIMEOUT must be a number of seconds from 0 up, got '", text, "'");
  return std::chrono::milliseconds(int64_t(std::ceil(seconds * 1e3)));
}

}  // namespace loom
