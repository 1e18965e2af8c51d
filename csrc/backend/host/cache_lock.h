// SPDX-License-Identifier: Apache-2.0
// The host kernel cache's install lock (a bounded wait on `<cache>/.lock`) and the removal of
// what an install replaces.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>

namespace loom::backend::host {

/// An exclusive flock on `<dir>/.lock`, serializing the replacement of entries among threads and
/// processes (readers take no lock). The wait is bounded: a process stuck while holding the lock
/// (stopped, hung on a dead file system) must not stop every other compile, so after `timeout`
/// the lock is given up and problem() says so, naming the lock file. Once a wait on a lock file
/// has timed out, later locks of that file in this process try once without waiting, until one
/// succeeds. A lock file that is not a regular file (a directory, a FIFO, a symbolic link, a
/// socket) is replaced, with a warning.
class CacheLock {
 public:
  CacheLock(const std::filesystem::path& dir, std::chrono::milliseconds timeout);
  ~CacheLock();
  CacheLock(const CacheLock&) = delete;
  CacheLock& operator=(const CacheLock&) = delete;

  bool held() const { return held_; }
  /// Why the lock is not held: "host kernel cache lock <dir>/.lock is held by another process
  /// (waited 30 s; LOOM_CACHE_LOCK_TIMEOUT sets the wait)", or that it cannot be opened.
  const std::string& problem() const { return problem_; }

 private:
  int fd_ = -1;
  bool held_ = false;
  std::string problem_;
};

/// Removes whatever is at `path` (an entry being replaced, a damaged lock file): a directory is
/// first renamed to a fresh private name beside it, so the final name is free at once even if
/// removing the files takes a while.
void moveAside(const std::filesystem::path& path);

}  // namespace loom::backend::host
