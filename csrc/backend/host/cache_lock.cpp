// SPDX-License-Identifier: Apache-2.0
// CacheLock: flock polled against a deadline (flock has no timed wait), and moveAside.
#include "backend/host/cache_lock.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>

#include "loom/support/error.h"
#include "loom/support/input_file.h"
#include "loom/support/private_dir.h"
#include "loom/support/warning.h"

namespace loom::backend::host {
namespace {

namespace fs = std::filesystem;
using ::loom::detail::concat;

/// Lock files whose wait timed out in this process: later locks try once, without waiting.
std::mutex gStuckMutex;
std::set<std::string> gStuck;

bool isStuck(const std::string& path) {
  std::lock_guard<std::mutex> lock(gStuckMutex);
  return gStuck.count(path) != 0;
}

void setStuck(const std::string& path, bool stuck) {
  std::lock_guard<std::mutex> lock(gStuckMutex);
  if (stuck) {
    gStuck.insert(path);
  } else {
    gStuck.erase(path);
  }
}

/// Opens (creating it 0600) the lock file. O_NONBLOCK and O_NOFOLLOW: something put in its place
/// (a FIFO, a link to a device) must not make the open wait or reach elsewhere. Returns -1 with
/// `*badType` set to what is there when it is not a regular file, or with `*error` set.
int openLockFile(const fs::path& path, std::string* badType, std::string* error) {
  const int fd =
      ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0600);
  struct stat st;
  if (fd >= 0) {
    if (::fstat(fd, &st) != 0) {
      *error = concat("cannot inspect the host kernel cache lock ", path.string(), ": ",
                      std::strerror(errno));
    } else if (S_ISREG(st.st_mode)) {
      return fd;
    } else {
      *badType = std::string(fileTypeName(st.st_mode));
    }
    ::close(fd);
    return -1;
  }
  const int err = errno;
  // A symbolic link (ELOOP), a directory (EISDIR), a socket (ENXIO): say what is there.
  if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    *badType = std::string(fileTypeName(st.st_mode));
  } else {
    *error =
        concat("cannot open the host kernel cache lock ", path.string(), ": ", std::strerror(err));
  }
  return -1;
}

std::string secondsText(std::chrono::milliseconds ms) {
  return fmt::format("{:g} s", double(ms.count()) / 1e3);
}

}  // namespace

CacheLock::CacheLock(const fs::path& dir, std::chrono::milliseconds timeout) {
  const fs::path path = dir / ".lock";
  std::string badType;
  fd_ = openLockFile(path, &badType, &problem_);
  if (fd_ < 0 && !badType.empty()) {
    warnOnce(concat("host kernel cache lock ", path.string(), " is ", badType,
                    ", not a regular file; replacing it"));
    struct stat st;
    // Only what is still not a regular file: another thread may have replaced it already.
    if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) moveAside(path);
    badType.clear();
    fd_ = openLockFile(path, &badType, &problem_);
    if (fd_ < 0 && !badType.empty()) {
      problem_ = concat("the host kernel cache lock ", path.string(), " is ", badType,
                        " and could not be replaced");
    }
  }
  if (fd_ < 0) return;
  const std::string key = path.string();
  const auto deadline =
      std::chrono::steady_clock::now() + (isStuck(key) ? std::chrono::milliseconds(0) : timeout);
  auto pause = std::chrono::milliseconds(1);
  while (true) {
    if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) {
      held_ = true;
      setStuck(key, false);
      return;
    }
    if (errno == EINTR) continue;
    if (errno != EWOULDBLOCK) {
      problem_ = concat("cannot lock the host kernel cache lock ", key, ": ", std::strerror(errno));
      return;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) break;
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(pause, deadline - now));
    pause = std::min(pause * 2, std::chrono::milliseconds(20));
  }
  setStuck(key, true);
  problem_ = concat("host kernel cache lock ", key, " is held by another process (waited ",
                    secondsText(timeout), "; LOOM_CACHE_LOCK_TIMEOUT sets the wait)");
}

CacheLock::~CacheLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

void moveAside(const fs::path& path) {
  std::error_code ec;
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return;
  if (!S_ISDIR(st.st_mode)) {
    ::unlink(path.c_str());
    return;
  }
  const std::string prefix = path.filename().string() + ".old.";
  if (auto grave = makePrivateTempDirectory(path.parent_path(), prefix)) {
    // rename(2) replaces an empty directory.
    if (::rename(path.c_str(), grave->c_str()) == 0) {
      fs::remove_all(*grave, ec);
      return;
    }
    fs::remove(*grave, ec);
  }
  fs::remove_all(path, ec);
}

}  // namespace loom::backend::host
