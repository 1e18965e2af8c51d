// SPDX-License-Identifier: Apache-2.0
// The identity of a tool a disk cache's keys depend on (the host C++ compiler, libnvrtc), known
// without running or loading the tool on every process start.
//
//   std::optional<std::string> stamp = fileStamp("/usr/bin/g++-12");  // path, size, mtime, inode
//   std::string version = rememberedProbe(cacheRoot() / "identities", "host-cxx", identity,
//                                         [&] { return runVersionProbe(); });
//
// A cache key needs what the tool is (its version): finding out costs a process spawn
// (`c++ --version`) or a dlopen of a 100 MB library. rememberedProbe keeps the answer in a small
// file keyed by the tool's identity (the stamps of the files it resolves to), so the probe runs
// again only when those files change: a replaced, rebuilt or touched compiler or library has
// another size, modification time or inode, so another identity, so a new probe and a new key.
// The files are private (0600 in a 0700 folder, checked before reading), checksummed and written
// atomically; a damaged or foreign one is probed again and replaced. Concurrent processes probing
// the same identity each write a whole file; the last rename wins with the same content.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace loom {

/// "<canonical path> <size> <mtime in ns> <inode>" of `file` (symbolic links followed), or
/// nullopt when it does not exist or cannot be examined.
std::optional<std::string> fileStamp(const std::filesystem::path& file);

/// Where posix_spawnp would find the program `name`: `name` itself when it holds a '/', else the
/// first directory of $PATH holding an executable regular file of that name; nullopt when none.
std::optional<std::filesystem::path> findExecutable(std::string_view name);

/// The answer of `probe` for the tool `identity` (`what` names the kind of tool and the file),
/// read from `dir` when a file there holds it for exactly this identity and `valid` (when given)
/// accepts it; otherwise probe() runs, and its answer is stored in `dir` (created private when
/// missing; quietly not stored when it cannot be) and returned. `probed`, when not null, says
/// whether probe() ran. Exceptions of probe() propagate and store nothing.
std::string rememberedProbe(const std::filesystem::path& dir, std::string_view what,
                            const std::string& identity, const std::function<std::string()>& probe,
                            bool* probed = nullptr,
                            const std::function<bool(const std::string&)>& valid = {});

}  // namespace loom
