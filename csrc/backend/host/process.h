// SPDX-License-Identifier: Apache-2.0
// Starting the host compiler without a shell: posix_spawn with an argument vector.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace loom::backend::host {

/// Splits on whitespace (spaces, tabs, newlines); no quoting rules. Used for LOOM_HOST_CXX
/// ("ccache g++") and LOOM_HOST_CXXFLAGS ("-g -O0").
std::vector<std::string> splitWords(std::string_view text);

/// How a process ended.
struct ProcessResult {
  /// The program could not be started: why (e.g. "No such file or directory"); the rest is unset.
  std::string startError;
  int waitStatus = 0;
  bool ok() const { return startError.empty() && waitStatus == 0; }
  /// "exit status 1", "killed by signal 9", or the start error.
  std::string describe() const;
};

/// Runs argv[0] (looked up on PATH when it contains no '/') with `argv`, no shell involved, in
/// `workDir` (empty: the current directory). stdin is /dev/null; stdout and stderr go to the file
/// `logPath`, created new with mode 0600, or, when `logPath` is empty, stdout is returned in
/// `*output` (when not null) and stderr is discarded. Waits for the process (EINTR-safe).
ProcessResult runProcess(const std::vector<std::string>& argv, const std::filesystem::path& workDir,
                         const std::filesystem::path& logPath, std::string* output = nullptr);

/// The argument vector as a line a POSIX shell would run as-is (for messages and dumps only).
std::string displayCommand(const std::vector<std::string>& argv);

}  // namespace loom::backend::host
