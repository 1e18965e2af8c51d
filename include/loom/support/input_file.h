// SPDX-License-Identifier: Apache-2.0
// Reading a file a user names (a fusion file): never hangs on a FIFO, never reads a device.
//
//   std::string text = readInputFile(path, "fusion file");   // UserError naming what is wrong
//
// Why: std::ifstream opens a FIFO nobody writes to and waits forever, reads /dev/zero without
// end, and "reads" a directory as an empty file. Here the file is opened with O_NONBLOCK and its
// type checked on the open descriptor first: a regular file is read, a pipe is read to its end
// (process substitution, /dev/stdin), anything else is refused with its type named.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <string_view>

namespace loom {

/// "a directory", "a FIFO (named pipe)", "a socket", "a character device", "a block device",
/// "a symbolic link", "a regular file": what a stat mode is, for messages.
std::string_view fileTypeName(mode_t mode);

/// The whole contents of `path`. `what` names the file in messages ("fusion file"). UserErrors:
/// "cannot open <what> '<path>': <reason>", "<what> '<path>' is a directory, not a file",
/// "... is a socket, not a regular file" (devices likewise), "... is a FIFO (named pipe) and
/// nothing was written to it" (no writer: open and read return at once instead of waiting),
/// "cannot read <what> '<path>': <reason>".
std::string readInputFile(const std::filesystem::path& path, std::string_view what);

}  // namespace loom
