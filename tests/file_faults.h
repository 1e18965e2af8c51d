// SPDX-License-Identifier: Apache-2.0
// File-system faults the cache and CLI tests inject: something that is not a regular file where
// a file was, and a directory this thread cannot write to (even when the tests run as root).
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

namespace loom::test {

/// What replaces a file: something that is not a regular file.
enum class Special { Fifo, Directory, LinkToDevZero, Socket };

/// Replaces whatever is at `path` with `kind` (a FIFO nobody writes to, an empty directory, a
/// symbolic link to /dev/zero, a Unix socket nobody listens on). Use with ASSERT_NO_FATAL_FAILURE.
inline void replaceWith(const std::filesystem::path& path, Special kind) {
  std::filesystem::remove_all(path);
  switch (kind) {
    case Special::Fifo: ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0) << path; break;
    case Special::Directory: std::filesystem::create_directory(path); break;
    case Special::LinkToDevZero: std::filesystem::create_symlink("/dev/zero", path); break;
    case Special::Socket: {
      const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
      ASSERT_GE(fd, 0);
      sockaddr_un addr{};
      addr.sun_family = AF_UNIX;
      ASSERT_LT(path.string().size(), sizeof(addr.sun_path)) << path;
      std::strcpy(addr.sun_path, path.c_str());
      const int rc = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
      ::close(fd);  // the socket file stays
      ASSERT_EQ(rc, 0) << path;
      break;
    }
  }
}

/// Makes `dir` mode 0500 for the scope and, since root writes anywhere through CAP_DAC_OVERRIDE,
/// drops that capability from this thread's effective set (capabilities are per thread; a
/// program this thread starts gets its own back). Restores both at the end. `ok()` says whether
/// a file can no longer be created in `dir` (checked, so a test cannot pass without the
/// condition it tests).
class ReadOnlyDir {
 public:
  explicit ReadOnlyDir(std::filesystem::path dir) : dir_(std::move(dir)) {
    ::chmod(dir_.c_str(), 0500);
    header_.version = _LINUX_CAPABILITY_VERSION_3;
    header_.pid = 0;
    if (::syscall(SYS_capget, &header_, saved_) == 0) {
      __user_cap_data_struct dropped[2] = {saved_[0], saved_[1]};
      dropped[CAP_DAC_OVERRIDE / 32].effective &= ~(1u << (CAP_DAC_OVERRIDE % 32));
      capsChanged_ = ::syscall(SYS_capset, &header_, dropped) == 0;
    }
    const std::filesystem::path probe = dir_ / ".loom-read-only-probe";
    const int fd = ::creat(probe.c_str(), 0600);
    ok_ = fd < 0 && (errno == EACCES || errno == EROFS);
    if (fd >= 0) {
      ::close(fd);
      ::unlink(probe.c_str());
    }
  }
  ~ReadOnlyDir() {
    if (capsChanged_) ::syscall(SYS_capset, &header_, saved_);
    ::chmod(dir_.c_str(), 0700);
  }
  ReadOnlyDir(const ReadOnlyDir&) = delete;
  ReadOnlyDir& operator=(const ReadOnlyDir&) = delete;

  bool ok() const { return ok_; }

 private:
  std::filesystem::path dir_;
  __user_cap_header_struct header_{};
  __user_cap_data_struct saved_[2]{};
  bool capsChanged_ = false;
  bool ok_ = false;
};

}  // namespace loom::test
