// SPDX-License-Identifier: Apache-2.0
// The cache root from the environment, with a per-user fallback.
#include "loom/support/cache_root.h"

#include <unistd.h>

#include <string>
#include <system_error>

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

}  // namespace loom
