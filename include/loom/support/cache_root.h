// SPDX-License-Identifier: Apache-2.0
// Where Loom's disk caches live (host kernel objects under host/, cubins under cuda/).
#pragma once

#include <filesystem>

namespace loom {

/// The root of Loom's disk caches: $LOOM_CACHE_DIR, else $XDG_CACHE_HOME/loom, else
/// $HOME/.cache/loom, else <temp dir>/loom-cache-<effective uid> (never a name shared by all
/// users). Read from the environment on every call; nothing is created here.
std::filesystem::path cacheRoot();

}  // namespace loom
