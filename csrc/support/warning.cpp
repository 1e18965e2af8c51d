// SPDX-License-Identifier: Apache-2.0
// One-line warnings on stderr.
#include "loom/support/warning.h"

#include <cstdio>
#include <mutex>
#include <set>
#include <string>

namespace loom {

void warn(std::string_view message) {
  std::string line = "loom: warning: ";
  line.append(message);
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

void warnOnce(std::string_view message) {
  static std::mutex mutex;
  static std::set<std::string, std::less<>> seen;
  {
    std::lock_guard lock(mutex);
    if (!seen.emplace(message).second) return;
  }
  warn(message);
}

}  // namespace loom
