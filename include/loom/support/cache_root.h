// SPDX-License-Identifier: Apache-2.0
// Where Loom's disk caches live (host kernel objects under host/, cubins under cuda/).
#pragma once

#include <chrono>
#include <filesystem>

namespace loom {

/// The root of Loom's disk caches: $LOOM_CACHE_DIR, else $XDG_CACHE_HOME/loom, else
/// $HOME/.cache/loom, else <temp dir>/loom-cache-<effective uid> (never a name shared by all
/// users). Read from the environment on every call; nothing is created here.
std::filesystem::path cacheRoot();

/// The default of LOOM_CACHE_LOCK_TIMEOUT. An install holds the lock for milliseconds, so a wait
/// this long means the holder is stuck (stopped, hung on a dead file system).
inline constexpr std::chrono::milliseconds kDefaultCacheLockTimeout{30000};

/// How long a cache install waits for the cache's lock before giving up on caching that kernel:
/// $LOOM_CACHE_LOCK_TIMEOUT seconds (fractions allowed, 0: do not wait), else
/// kDefaultCacheLockTimeout. Read on every call. A value that is not a number of seconds from 0
/// up is a UserError naming the variable.
std::chrono::milliseconds cacheLockTimeout();

}  // namespace loom
