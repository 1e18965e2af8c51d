// SPDX-License-Identifier: Apache-2.0
// readInputFile: regular files and pipes are read whole; directories, devices, sockets and FIFOs
// nobody writes to are errors naming them, never a wait.
#include "loom/support/input_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "file_faults.h"
#include "loom/support/error.h"
#include "loom/support/private_dir.h"
#include "must_finish.h"
#include "user_error_of.h"

namespace loom {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using test::Special;

struct ScratchDir {
  fs::path path = *makePrivateTempDirectory(fs::temp_directory_path(), "loom-input-file-test-");
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

/// The message of readInputFile's UserError for `path`, within 30 s.
std::string errorReading(const fs::path& path) {
  std::string msg;
  test::mustFinishWithin(30s, "readInputFile", [&] {
    msg = test::userErrorOf([&] { readInputFile(path, "fusion file"); });
  });
  return msg;
}

bool endsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// A regular file is read byte for byte, NUL bytes included.
TEST(InputFile, ReadsARegularFile) {
  ScratchDir scratch;
  const std::string text("inputs: T0\n\0x", 13);
  std::ofstream(scratch.path / "f.fus", std::ios::binary) << text;
  EXPECT_EQ(readInputFile(scratch.path / "f.fus", "fusion file"), text);
}

// Everything that is not a regular file or a pipe is an error naming the file and what it is; a
// FIFO nobody writes to is an error too (it used to wait forever for a writer).
TEST(InputFile, RefusesWhatIsNotAFile) {
  ScratchDir scratch;
  const fs::path p = scratch.path / "x.fus";
  const std::string name = "fusion file '" + p.string() + "'";
  ASSERT_NO_FATAL_FAILURE(test::replaceWith(p, Special::Directory));
  EXPECT_TRUE(endsWith(errorReading(p), name + " is a directory, not a file")) << errorReading(p);
  ASSERT_NO_FATAL_FAILURE(test::replaceWith(p, Special::Fifo));
  EXPECT_TRUE(
      endsWith(errorReading(p), name + " is a FIFO (named pipe) and nothing was written to it"))
      << errorReading(p);
  ASSERT_NO_FATAL_FAILURE(test::replaceWith(p, Special::LinkToDevZero));
  EXPECT_TRUE(endsWith(errorReading(p), name + " is a character device, not a regular file"))
      << errorReading(p);
  ASSERT_NO_FATAL_FAILURE(test::replaceWith(p, Special::Socket));
  EXPECT_TRUE(endsWith(errorReading(p), name + " is a socket, not a regular file"))
      << errorReading(p);
  fs::remove(p);
  EXPECT_TRUE(endsWith(errorReading(p), "cannot open " + name + ": No such file or directory"))
      << errorReading(p);
}

// A FIFO with a writer is read to its end, even when the writer is slower than the reader (as
// with process substitution, `loom print <(...)`).
TEST(InputFile, ReadsAPipeToItsEnd) {
  ScratchDir scratch;
  const fs::path p = scratch.path / "pipe.fus";
  ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0);
  // O_RDWR opens a FIFO without waiting for a reader, so the writer is in before the read starts.
  const int fd = ::open(p.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  const std::string text(200000, 'x');
  std::thread writer([&] {
    std::this_thread::sleep_for(50ms);
    for (size_t done = 0; done < text.size();) {
      const ssize_t n = ::write(fd, text.data() + done, std::min<size_t>(4096, text.size() - done));
      if (n <= 0) break;
      done += size_t(n);
    }
    ::close(fd);
  });
  std::string got;
  test::mustFinishWithin(30s, "reading a pipe with a writer",
                         [&] { got = readInputFile(p, "fusion file"); });
  writer.join();
  EXPECT_EQ(got.size(), text.size());
  EXPECT_EQ(got, text);
}

}  // namespace
}  // namespace loom
