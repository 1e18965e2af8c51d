// SPDX-License-Identifier: Apache-2.0
// Files in private directories: atomic writes under unpredictable temporary names, and reads that
// refuse a file someone else could have written.
//
//   if (auto err = writeFileAtomically(dir / "entry", bytes)) ...;   // readers see all or nothing
//   std::string bytes;
//   if (auto problem = readPrivateFile(dir / "entry", bytes)) ...;  // e.g. "is a symbolic link"
//
// Writes go to `.<name>.tmp.XXXXXX` in the same directory (mkostemp: random suffix, O_EXCL, mode
// 0600), are flushed and renamed over the final name, so a concurrent reader sees the old file or
// the whole new one, and racing writers of one name both succeed (the last rename wins).
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace loom {

/// Writes `bytes` to `path` atomically with the given mode. Returns nullopt on success, else what
/// failed; nothing is left behind on failure.
std::optional<std::string> writeFileAtomically(const std::filesystem::path& path,
                                               std::string_view bytes, mode_t mode = 0600);

/// Reads `path` into `bytes` when it is a regular file (not a symbolic link: O_NOFOLLOW) owned by
/// the effective user and not writable by group or others; the checks are made on the open file,
/// so they hold for the bytes read. Never waits: a FIFO is opened with O_NONBLOCK and refused
/// like any other non-regular file. Returns nullopt on success, else why not: "does not exist",
/// "is a symbolic link", "is a FIFO (named pipe), not a regular file" (a directory, a socket, a
/// device likewise), "is owned by uid N, ...", "is writable by group or others (mode ...)".
std::optional<std::string> readPrivateFile(const std::filesystem::path& path, std::string& bytes);

}  // namespace loom
