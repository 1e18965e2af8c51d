// SPDX-License-Identifier: Apache-2.0
// Atomic private writes (mkostemp + rename) and checked reads (O_NOFOLLOW + fstat).
#include "loom/support/private_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "loom/support/error.h"
#include "loom/support/input_file.h"

namespace loom {

namespace fs = std::filesystem;

namespace {

/// write(2) until done, retrying on EINTR and short writes.
bool writeAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    bytes.remove_prefix(size_t(n));
  }
  return true;
}

}  // namespace

std::optional<std::string> writeFileAtomically(const fs::path& path, std::string_view bytes,
                                               mode_t mode) {
  std::string temp =
      (path.parent_path() / ("." + path.filename().string() + ".tmp.XXXXXX")).string();
  const int fd = ::mkostemp(temp.data(), O_CLOEXEC);
  if (fd < 0) {
    return detail::concat("cannot create a temporary file beside ", path.string(), ": ",
                          std::strerror(errno));
  }
  std::string error;
  if (!writeAll(fd, bytes)) {
    error = detail::concat("cannot write ", temp, ": ", std::strerror(errno));
  } else if (::fchmod(fd, mode) != 0) {
    error = detail::concat("cannot set the mode of ", temp, ": ", std::strerror(errno));
  }
  if (::close(fd) != 0 && error.empty()) {
    error = detail::concat("cannot write ", temp, ": ", std::strerror(errno));
  }
  if (error.empty() && ::rename(temp.c_str(), path.c_str()) != 0) {
    error =
        detail::concat("cannot rename ", temp, " to ", path.string(), ": ", std::strerror(errno));
  }
  if (!error.empty()) {
    ::unlink(temp.c_str());
    return error;
  }
  return std::nullopt;
}

std::optional<std::string> readPrivateFile(const fs::path& path, std::string& bytes) {
  bytes.clear();
  // O_NONBLOCK: a FIFO put in place of the file must not make the open wait for a writer; the
  // type check below then refuses it (reads of a regular file ignore the flag).
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) return std::string("does not exist");
    if (err == ELOOP) return std::string("is a symbolic link");
    struct stat st;
    // A socket cannot be opened at all (ENXIO): name what it is.
    if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
      return detail::concat("is ", fileTypeName(st.st_mode), ", not a regular file");
    }
    return detail::concat("cannot be read (", std::strerror(err), ")");
  }
  std::optional<std::string> problem;
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    problem = detail::concat("cannot be inspected (", std::strerror(errno), ")");
  } else if (!S_ISREG(st.st_mode)) {
    problem = detail::concat("is ", fileTypeName(st.st_mode), ", not a regular file");
  } else if (st.st_uid != ::geteuid()) {
    problem = detail::concat("is owned by uid ", st.st_uid, ", not by the current user (uid ",
                             ::geteuid(), ")");
  } else if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    problem = fmt::format("is writable by group or others (mode {:04o})", st.st_mode & 07777);
  } else {
    bytes.resize(size_t(st.st_size));
    size_t done = 0;
    while (true) {
      if (done == bytes.size()) bytes.resize(done + 4096);  // the file grew; read to its end
      const ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
      if (n < 0) {
        if (errno == EINTR) continue;
        problem = detail::concat("cannot be read (", std::strerror(errno), ")");
        break;
      }
      if (n == 0) break;
      done += size_t(n);
    }
    bytes.resize(done);
  }
  ::close(fd);
  if (problem) bytes.clear();
  return problem;
}

}  // namespace loom
