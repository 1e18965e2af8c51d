// SPDX-License-Identifier: Apache-2.0
// Private directories: mkdir 0700, the lstat trust check, mkdtemp.
#include "loom/support/private_dir.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "loom/support/error.h"
#include "loom/support/input_file.h"

namespace loom {

namespace fs = std::filesystem;

std::optional<std::string> createPrivateDirectories(const fs::path& dir) {
  if (dir.empty()) return std::string("cannot create an empty path");
  // Walk up to the first existing ancestor, then create the missing ones top-down.
  std::vector<fs::path> missing;
  fs::path p = dir.lexically_normal();
  if (!p.has_filename()) p = p.parent_path();  // a trailing '/'
  while (!p.empty()) {
    struct stat st;
    if (::stat(p.c_str(), &st) == 0) break;
    if (errno != ENOENT) {
      return detail::concat("cannot create ", dir.string(), ": ", p.string(), ": ",
                            std::strerror(errno));
    }
    missing.push_back(p);
    if (!p.has_parent_path() || p.parent_path() == p) break;
    p = p.parent_path();
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    // EEXIST: another thread or process created it meanwhile; the trust check judges it later.
    if (::mkdir(it->c_str(), 0700) != 0 && errno != EEXIST) {
      return detail::concat("cannot create ", it->string(), ": ", std::strerror(errno));
    }
  }
  return std::nullopt;
}

std::optional<std::string> privateDirectoryProblem(const fs::path& dir) {
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0) {
    return detail::concat("cannot be inspected (", std::strerror(errno), ")");
  }
  if (S_ISLNK(st.st_mode)) return std::string("is a symbolic link");
  if (!S_ISDIR(st.st_mode))
    return detail::concat("is ", fileTypeName(st.st_mode), ", not a directory");
  if (st.st_uid != ::geteuid()) {
    return detail::concat("is owned by uid ", st.st_uid, ", not by the current user (uid ",
                          ::geteuid(), ")");
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return fmt::format("is writable by group or others (mode {:04o})", st.st_mode & 07777);
  }
  return std::nullopt;
}

std::optional<fs::path> makePrivateTempDirectory(const fs::path& parent, std::string_view prefix,
                                                 std::string* error) {
  std::string pattern = (parent / (std::string(prefix) + "XXXXXX")).string();
  // mkdtemp creates the directory with mode 0700 and fails rather than reuse an existing name.
  if (::mkdtemp(pattern.data()) == nullptr) {
    if (error) {
      *error = detail::concat("cannot create a temporary directory in ", parent.string(), ": ",
                              std::strerror(errno));
    }
    return std::nullopt;
  }
  return fs::path(pattern);
}

}  // namespace loom
