// SPDX-License-Identifier: Apache-2.0
// readInputFile: open non-blocking, check the type on the descriptor, then read to the end.
#include "loom/support/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "loom/support/error.h"

namespace loom {

std::string_view fileTypeName(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "a special file";
}

namespace {

/// Closes the descriptor on every path out, exceptions included.
struct FdGuard {
  int fd;
  ~FdGuard() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string readInputFile(const std::filesystem::path& path, std::string_view what) {
  // O_NONBLOCK: opening a FIFO without a writer returns at once instead of waiting for one.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    struct stat st;
    // A socket cannot be opened (ENXIO); say what it is rather than "No such device".
    if (err == ENXIO && ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
      LOOM_THROW(what, " '", path.string(), "' is ", fileTypeName(st.st_mode),
                 ", not a regular file");
    }
    LOOM_THROW("cannot open ", what, " '", path.string(), "': ", std::strerror(err));
  }
  FdGuard guard{fd};
  struct stat st;
  LOOM_CHECK(::fstat(fd, &st) == 0, "cannot inspect ", what, " '", path.string(),
             "': ", std::strerror(errno));
  LOOM_CHECK(!S_ISDIR(st.st_mode), what, " '", path.string(), "' is a directory, not a file");
  const bool pipe = S_ISFIFO(st.st_mode);
  LOOM_CHECK(S_ISREG(st.st_mode) || pipe, what, " '", path.string(), "' is ",
             fileTypeName(st.st_mode), ", not a regular file");
  if (pipe) {
    // Reads of a pipe wait for its writer; with no writer at all they see the end at once.
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  }
  std::string bytes;
  char buf[65536];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      LOOM_THROW("cannot read ", what, " '", path.string(), "': ", std::strerror(errno));
    }
    if (n == 0) break;
    bytes.append(buf, size_t(n));
  }
  LOOM_CHECK(!pipe || !bytes.empty(), what, " '", path.string(),
             "' is a FIFO (named pipe) and nothing was written to it");
  return bytes;
}

}  // namespace loom
