// SPDX-License-Identifier: Apache-2.0
// Directories only the current user can change: creation with mode 0700, the trust check made
// before anything inside is loaded, and private temporary directories.
//
//   if (auto err = createPrivateDirectories(dir)) ...;          // *err says what failed
//   if (auto problem = privateDirectoryProblem(dir)) ...;       // e.g. "is writable by others"
//
// Why: the disk caches hold code Loom loads (host kernel objects) or hands to the driver (cubins).
// A directory another local user can write to (a shared /tmp name, a group-writable folder, a
// symbolic link to someone else's folder) would let that user plant code. So every directory Loom
// creates for a cache is 0700, and a directory is trusted only when it is a real directory (not a
// symbolic link), owned by the effective user and not writable by group or others. Ancestors of
// the cache root (such as $HOME) are not checked.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace loom {

/// Creates `dir` and any missing ancestors with mode 0700 (existing ones are left as they are).
/// Returns nullopt on success, else what failed ("cannot create <path>: <reason>").
std::optional<std::string> createPrivateDirectories(const std::filesystem::path& dir);

/// Why `dir` must not be trusted, or nullopt when it is a directory (lstat: a symbolic link is not)
/// owned by the effective user id and not writable by group or others. The text completes the
/// sentence "<dir> ...", e.g. "is writable by group or others (mode 0777)".
std::optional<std::string> privateDirectoryProblem(const std::filesystem::path& dir);

/// Creates a new directory `<parent>/<prefix>XXXXXX` with a random suffix and mode 0700 (mkdtemp).
/// Returns its path, or nullopt with `*error` set.
std::optional<std::filesystem::path> makePrivateTempDirectory(const std::filesystem::path& parent,
                                                              std::string_view prefix,
                                                              std::string* error = nullptr);

}  // namespace loom
