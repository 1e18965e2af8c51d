// SPDX-License-Identifier: Apache-2.0
// Private directories and files: created 0700/0600, and refused when others could have written
// them.
#include "loom/support/private_dir.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <utility>

#include "file_faults.h"
#include "loom/support/private_file.h"
#include "must_finish.h"

namespace loom {
namespace {

namespace fs = std::filesystem;

/// A fresh directory under the temp dir, removed at the end of the test.
struct ScratchDir {
  fs::path path;
  ScratchDir() {
    path = *makePrivateTempDirectory(fs::temp_directory_path(), "loom-private-test-");
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

unsigned modeOf(const fs::path& p) {
  struct stat st;
  EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

// Missing directories, ancestors included, are created 0700 whatever the umask; a temp dir is too.
TEST(PrivateDir, CreatesMissingDirectoriesWithMode0700) {
  ScratchDir scratch;
  EXPECT_EQ(modeOf(scratch.path), 0700u);
  const mode_t old = ::umask(0);
  const auto err = createPrivateDirectories(scratch.path / "a" / "b" / "c");
  ::umask(old);
  EXPECT_FALSE(err.has_value()) << *err;
  EXPECT_EQ(modeOf(scratch.path / "a"), 0700u);
  EXPECT_EQ(modeOf(scratch.path / "a" / "b" / "c"), 0700u);
  EXPECT_FALSE(privateDirectoryProblem(scratch.path / "a" / "b" / "c").has_value());
  EXPECT_FALSE(createPrivateDirectories(scratch.path / "a" / "b" / "c").has_value());  // exists
}

// A directory others can write to, a symbolic link and a plain file are not trusted.
TEST(PrivateDir, RefusesWritableDirectoriesAndLinks) {
  ScratchDir scratch;
  const fs::path open = scratch.path / "open";
  fs::create_directory(open);
  ::chmod(open.c_str(), 0777);
  EXPECT_EQ(privateDirectoryProblem(open), "is writable by group or others (mode 0777)");
  ::chmod(open.c_str(), 0770);
  EXPECT_EQ(privateDirectoryProblem(open), "is writable by group or others (mode 0770)");
  ::chmod(open.c_str(), 0755);
  EXPECT_FALSE(privateDirectoryProblem(open).has_value());
  fs::create_directory_symlink(open, scratch.path / "link");
  EXPECT_EQ(privateDirectoryProblem(scratch.path / "link"), "is a symbolic link");
  std::ofstream(scratch.path / "file") << "x";
  EXPECT_EQ(privateDirectoryProblem(scratch.path / "file"), "is a regular file, not a directory");
  EXPECT_TRUE(privateDirectoryProblem(scratch.path / "missing").has_value());
  if (::geteuid() == 0) {  // only root can give a directory away
    ASSERT_EQ(::chown(open.c_str(), 12345, 12345), 0);
    EXPECT_EQ(privateDirectoryProblem(open),
              "is owned by uid 12345, not by the current user (uid 0)");
  }
}

// An atomic write leaves exactly the final file, mode 0600, and replaces an existing one; a read
// refuses links and files others can write.
TEST(PrivateFile, AtomicWriteAndCheckedRead) {
  ScratchDir scratch;
  const fs::path file = scratch.path / "entry";
  ASSERT_FALSE(writeFileAtomically(file, "first").has_value());
  ASSERT_FALSE(writeFileAtomically(file, std::string("sec\0ond", 7)).has_value());
  EXPECT_EQ(modeOf(file), 0600u);
  int files = 0;
  for (const auto& e : fs::directory_iterator(scratch.path)) {
    EXPECT_EQ(e.path().filename(), "entry");
    ++files;
  }
  EXPECT_EQ(files, 1);
  std::string bytes;
  EXPECT_FALSE(readPrivateFile(file, bytes).has_value());
  EXPECT_EQ(bytes, std::string("sec\0ond", 7));
  ASSERT_FALSE(writeFileAtomically(scratch.path / "exe", "x", 0700).has_value());
  EXPECT_EQ(modeOf(scratch.path / "exe"), 0700u);

  fs::create_symlink(file, scratch.path / "link");
  EXPECT_EQ(readPrivateFile(scratch.path / "link", bytes), "is a symbolic link");
  EXPECT_EQ(readPrivateFile(scratch.path / "none", bytes), "does not exist");
  ::chmod(file.c_str(), 0666);
  EXPECT_EQ(readPrivateFile(file, bytes), "is writable by group or others (mode 0666)");
  EXPECT_TRUE(bytes.empty());
  EXPECT_TRUE(writeFileAtomically(scratch.path / "no" / "such" / "dir", "x").has_value());
}

// A FIFO, a directory, a link to a device or a socket in a file's place is refused, named, and
// never waited on (the open of a FIFO nobody writes to used to wait forever).
TEST(PrivateFile, NonRegularFilesAreRefusedWithoutWaiting) {
  using namespace std::chrono_literals;
  using test::Special;
  ScratchDir scratch;
  const fs::path file = scratch.path / "entry";
  const std::pair<Special, std::string> cases[] = {
      {Special::Fifo, "is a FIFO (named pipe), not a regular file"},
      {Special::Directory, "is a directory, not a regular file"},
      {Special::LinkToDevZero, "is a symbolic link"},
      {Special::Socket, "is a socket, not a regular file"},
  };
  for (const auto& [kind, problem] : cases) {
    ASSERT_NO_FATAL_FAILURE(test::replaceWith(file, kind));
    std::string bytes = "stale";
    std::optional<std::string> got;
    test::mustFinishWithin(30s, "readPrivateFile of a special file",
                           [&] { got = readPrivateFile(file, bytes); });
    EXPECT_EQ(got, problem);
    EXPECT_TRUE(bytes.empty());
  }
  // A FIFO or a socket in a directory's place is named too.
  ASSERT_NO_FATAL_FAILURE(test::replaceWith(file, Special::Fifo));
  EXPECT_EQ(privateDirectoryProblem(file), "is a FIFO (named pipe), not a directory");
}

}  // namespace
}  // namespace loom
