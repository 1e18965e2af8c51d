// SPDX-License-Identifier: Apache-2.0
// The host kernel cache's trust rules: private directories, checksummed entries, no shell, and
// compiles from many threads at once; and what it survives: non-regular files in entries, a
// stuck lock, a cache deleted during a compile, a read-only cache.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "backend/host/host_compiler.h"
#include "backend/host_test_util.h"
#include "file_faults.h"
#include "loom/support/cache_root.h"
#include "loom/support/dump_sink.h"
#include "loom/support/private_dir.h"
#include "must_finish.h"
#include "scoped_env.h"

namespace loom::backend {
namespace {

namespace fs = std::filesystem;
using ::loom::test::mustFinishWithin;
using ::loom::test::ReadOnlyDir;
using ::loom::test::replaceWith;
using ::loom::test::ScopedEnv;
using ::loom::test::Special;
using namespace std::chrono_literals;

/// A fresh private directory under the temp dir, removed (permissions restored) at the end.
class Scratch {
 public:
  Scratch()
      : path_(*makePrivateTempDirectory(fs::temp_directory_path(), "loom-host-cache-test-")) {}
  ~Scratch() {
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(path_, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_directory() && !it->is_symlink()) ::chmod(it->path().c_str(), 0700);
    }
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

unsigned modeOf(const fs::path& p) {
  struct stat st;
  EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

bool isUnder(const fs::path& p, const fs::path& dir) {
  const std::string s = p.lexically_normal().string(), d = dir.lexically_normal().string();
  return s.compare(0, d.size(), d) == 0;
}

/// A kernel writing out[i] = i * k + `offset`; a different offset is a different cache key.
std::string kernelSource(int offset) {
  return "extern \"C\" __global__ void affine(int* out, int k) {\n"
         "  out[threadIdx.x] = threadIdx.x * k + " +
         std::to_string(offset) + ";\n}\n";
}

/// Launches affine on 8 threads and checks every value.
void expectRuns(const HostModule& m, int offset) {
  std::vector<int> out(8, -1);
  int* o = out.data();
  int k = 3;
  void* args[] = {&o, &k};
  m.launch({1}, {8}, 0, args);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(out[i], i * 3 + offset) << "element " << i;
}

HostCompileOptions optionsIn(const fs::path& dir) {
  HostCompileOptions o;
  o.cacheDir = dir;
  return o;
}

/// Compiles the kernel into the cache without loading it, so the test can damage the entry before
/// this process maps it.
fs::path compileOnly(const HostCompileOptions& opts, int offset) {
  host::CompiledObject obj = host::compileForHost(
      host::hostTranslationUnit(kernelSource(offset), "affine"), "affine", opts);
  EXPECT_TRUE(obj.temporaryDir.empty());
  return obj.objectPath.parent_path();
}

/// Loads the kernel with stderr (warnings) and the dump sink (LOOM_DUMP=host_compile) captured;
/// returns what was printed, warnings first.
std::string loadCapturing(const HostCompileOptions& opts, int offset,
                          std::unique_ptr<HostModule>& m) {
  std::ostringstream dumps;
  ScopedDumpSink into(dumps);
  ::testing::internal::CaptureStderr();
  try {
    m = HostModule::load(kernelSource(offset), "affine", opts);
  } catch (...) {
    ::testing::internal::GetCapturedStderr();
    throw;
  }
  return ::testing::internal::GetCapturedStderr() + dumps.str();
}

// The default cache root and every directory Loom creates in it are 0700 even under umask 0,
// and so is an entry's kernel.so; the entry has its checksum file.
TEST(HostCache, DirectoriesAreCreatedPrivate) {
  Scratch scratch;
  const fs::path root = scratch.path() / "new" / "root";
  ScopedEnv env("LOOM_CACHE_DIR", root.string());
  const mode_t oldMask = ::umask(0);
  std::unique_ptr<HostModule> m;
  try {
    m = HostModule::load(kernelSource(1), "affine");
  } catch (...) {
    ::umask(oldMask);
    throw;
  }
  ::umask(oldMask);
  expectRuns(*m, 1);
  const fs::path entry = m->objectPath().parent_path();
  EXPECT_EQ(entry.parent_path(), root / "host");
  EXPECT_EQ(modeOf(scratch.path() / "new"), 0700u);
  EXPECT_EQ(modeOf(root), 0700u);
  EXPECT_EQ(modeOf(root / "host"), 0700u);
  EXPECT_EQ(modeOf(entry), 0700u);
  EXPECT_EQ(modeOf(entry / "kernel.so"), 0700u);
  EXPECT_EQ(modeOf(entry / "kernel.cpp"), 0600u);
  EXPECT_EQ(modeOf(entry / "manifest"), 0600u);
  for (const auto& e : fs::directory_iterator(root / "host")) {
    EXPECT_EQ(e.path().filename().string().find(".build."), std::string::npos) << e.path();
  }
}

// A cache directory others can write to is not used: one warning names it and why, the kernel is
// compiled into a private temporary directory (removed with the module) and still runs.
TEST(HostCache, WritableCacheDirIsNotTrusted) {
  Scratch scratch;
  const fs::path open = scratch.path() / "open";
  fs::create_directory(open);
  ASSERT_EQ(::chmod(open.c_str(), 0777), 0);
  std::unique_ptr<HostModule> m;
  const std::string err = loadCapturing(optionsIn(open), 2, m);
  EXPECT_EQ(err, "loom: warning: host kernel cache " + open.string() +
                     " is not used: " + open.string() +
                     " is writable by group or others (mode 0777); compiling into private "
                     "temporary directories instead\n");
  expectRuns(*m, 2);
  EXPECT_FALSE(m->cacheHit());
  EXPECT_FALSE(isUnder(m->objectPath(), open)) << m->objectPath();
  EXPECT_TRUE(fs::is_empty(open));
  const fs::path temp = m->objectPath().parent_path();
  EXPECT_EQ(modeOf(temp), 0700u);
  m.reset();
  EXPECT_FALSE(fs::exists(temp)) << temp;
}

// A cache directory that is a symbolic link (here to a private directory of ours) is not used
// either, and nothing is written through the link.
TEST(HostCache, SymlinkedCacheDirIsNotTrusted) {
  Scratch scratch;
  const fs::path real = scratch.path() / "real";
  fs::create_directory(real);
  const fs::path link = scratch.path() / "link";
  fs::create_directory_symlink(real, link);
  std::unique_ptr<HostModule> m;
  const std::string err = loadCapturing(optionsIn(link), 3, m);
  EXPECT_NE(err.find("loom: warning: host kernel cache " + link.string() +
                     " is not used: " + link.string() + " is a symbolic link"),
            std::string::npos)
      << err;
  expectRuns(*m, 3);
  EXPECT_TRUE(fs::is_empty(real));
}

// A cache directory owned by another user is not used (only root can make one to test with).
TEST(HostCache, CacheDirOwnedBySomeoneElseIsNotTrusted) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a directory away";
  Scratch scratch;
  const fs::path theirs = scratch.path() / "theirs";
  fs::create_directory(theirs);
  ASSERT_EQ(::chown(theirs.c_str(), 12345, 12345), 0);
  std::unique_ptr<HostModule> m;
  const std::string err = loadCapturing(optionsIn(theirs), 4, m);
  EXPECT_NE(err.find(theirs.string() + " is owned by uid 12345, not by the current user (uid 0)"),
            std::string::npos)
      << err;
  expectRuns(*m, 4);
}

// A truncated kernel.so (which used to crash dlopen with SIGBUS) fails its checksum: one warning,
// the entry is rebuilt, the kernel runs, and the next load is a quiet hit.
TEST(HostCache, TruncatedObjectIsRebuilt) {
  Scratch scratch;
  const HostCompileOptions opts = optionsIn(scratch.path() / "cache");
  const fs::path entry = compileOnly(opts, 5);
  fs::resize_file(entry / "kernel.so", fs::file_size(entry / "kernel.so") / 2);
  const uint64_t before = HostModule::compilerRuns();
  std::unique_ptr<HostModule> m;
  const std::string err = loadCapturing(opts, 5, m);
  EXPECT_EQ(err, "loom: warning: host kernel cache entry " + entry.string() +
                     " failed its checksum; rebuilding\n");
  EXPECT_EQ(HostModule::compilerRuns(), before + 1);
  EXPECT_FALSE(m->cacheHit());
  EXPECT_EQ(m->objectPath(), entry / "kernel.so");
  expectRuns(*m, 5);
  std::unique_ptr<HostModule> again;
  EXPECT_EQ(loadCapturing(opts, 5, again), "");
  EXPECT_TRUE(again->cacheHit());
  expectRuns(*again, 5);
}

// One flipped byte in kernel.so is caught the same way.
TEST(HostCache, FlippedByteIsRebuilt) {
  Scratch scratch;
  const HostCompileOptions opts = optionsIn(scratch.path() / "cache");
  const fs::path entry = compileOnly(opts, 6);
  {
    std::fstream f(entry / "kernel.so", std::ios::in | std::ios::out | std::ios::binary);
    const auto at = std::streamoff(fs::file_size(entry / "kernel.so") / 3);
    f.seekg(at);
    char c = 0;
    f.get(c);
    f.seekp(at);
    f.put(char(c ^ 0x5a));
  }
  const uint64_t before = HostModule::compilerRuns();
  std::unique_ptr<HostModule> m;
  const std::string err = loadCapturing(opts, 6, m);
  EXPECT_EQ(err, "loom: warning: host kernel cache entry " + entry.string() +
                     " failed its checksum; rebuilding\n");
  EXPECT_EQ(HostModule::compilerRuns(), before + 1);
  expectRuns(*m, 6);
}

// An entry without its checksum file (an older Loom's, or a half-removed one) is rebuilt.
TEST(HostCache, MissingChecksumFileIsRebuilt) {
  Scratch scratch;
  const HostCompileOptions opts = optionsIn(scratch.path() / "cache");
  const fs::path entry = compileOnly(opts, 7);
  fs::remove(entry / "manifest");
  std::unique_ptr<HostModule> m;
  const std::string err = loadCapturing(opts, 7, m);
  EXPECT_EQ(err, "loom: warning: host kernel cache entry " + entry.string() +
                     " has no checksum file; rebuilding\n");
  EXPECT_FALSE(m->cacheHit());
  expectRuns(*m, 7);
  EXPECT_TRUE(fs::exists(entry / "manifest"));
}

// A kernel.so replaced by a symbolic link (to an intact copy) is not followed.
TEST(HostCache, SymlinkedObjectIsRebuilt) {
  Scratch scratch;
  const HostCompileOptions opts = optionsIn(scratch.path() / "cache");
  const fs::path entry = compileOnly(opts, 8);
  fs::rename(entry / "kernel.so", scratch.path() / "elsewhere.so");
  fs::create_symlink(scratch.path() / "elsewhere.so", entry / "kernel.so");
  std::unique_ptr<HostModule> m;
  const std::string err = loadCapturing(opts, 8, m);
  EXPECT_EQ(err, "loom: warning: host kernel cache entry " + entry.string() +
                     " has a kernel.so that is a symbolic link; rebuilding\n");
  expectRuns(*m, 8);
  EXPECT_FALSE(fs::is_symlink(entry / "kernel.so"));
}

// With none of LOOM_CACHE_DIR, XDG_CACHE_HOME and HOME set, the cache is a per-user directory in
// the temp dir, never the shared name /tmp/loom-cache.
TEST(HostCache, PerUserRootWithoutHome) {
  Scratch scratch;
  ScopedEnv a("LOOM_CACHE_DIR", std::nullopt), b("XDG_CACHE_HOME", std::nullopt),
      c("HOME", std::nullopt), t("TMPDIR", scratch.path().string());
  const fs::path expected = scratch.path() / ("loom-cache-" + std::to_string(::geteuid()));
  EXPECT_EQ(cacheRoot(), expected);
  {
    ScopedEnv tmp("TMPDIR", std::nullopt);
    EXPECT_NE(cacheRoot(), fs::path("/tmp/loom-cache"));
    EXPECT_EQ(cacheRoot().filename(), "loom-cache-" + std::to_string(::geteuid()));
  }
  std::unique_ptr<HostModule> m = HostModule::load(kernelSource(9), "affine");
  expectRuns(*m, 9);
  EXPECT_TRUE(isUnder(m->objectPath(), expected / "host")) << m->objectPath();
  EXPECT_EQ(modeOf(expected), 0700u);
}

// Paths are never shell text: a cache path with spaces, quotes, $(...) and backquotes works, and
// the command substitution in it never runs.
TEST(HostCache, CachePathWithShellCharactersWorks) {
  Scratch scratch;
  const fs::path odd =
      scratch.path() / "a b 'q' \"dq\" $(touch pwned1) `touch pwned2`; touch pwned3 &";
  ScopedEnv env("LOOM_CACHE_DIR", odd.string());
  std::unique_ptr<HostModule> m = HostModule::load(kernelSource(10), "affine");
  expectRuns(*m, 10);
  EXPECT_TRUE(isUnder(m->objectPath(), odd)) << m->objectPath();
  for (const char* f : {"pwned1", "pwned2", "pwned3"}) {
    EXPECT_FALSE(fs::exists(f)) << f;
    EXPECT_FALSE(fs::exists(scratch.path() / f)) << f;
    EXPECT_FALSE(fs::exists(m->objectPath().parent_path() / f)) << f;
  }
  // A compile error in such a directory reports it too.
  const std::string msg = testing::userErrorOf([&] {
    HostModule::load("extern \"C\" __global__ void bad(int* o) { o[0] = nope; }", "bad");
  });
  EXPECT_NE(msg.find("nope"), std::string::npos) << msg;
  EXPECT_NE(msg.find(odd.string()), std::string::npos) << msg;
}

// LOOM_HOST_CXX and LOOM_HOST_CXXFLAGS are split into words (no shell): a compiler given as
// "env c++" and two flags in one variable both work.
TEST(HostCache, CompilerAndFlagsAreWords) {
  Scratch scratch;
  ScopedEnv cxx("LOOM_HOST_CXX", "env c++");
  ScopedEnv flags("LOOM_HOST_CXXFLAGS", " -DLOOM_TEST_OFFSET=11\t-O1 ");
  auto m = HostModule::load(
      "extern \"C\" __global__ void affine(int* out, int k) {\n"
      "  out[threadIdx.x] = threadIdx.x * k + LOOM_TEST_OFFSET;\n}\n",
      "affine", optionsIn(scratch.path()));
  expectRuns(*m, 11);
}

// Eight threads loading at once, four kernels twice each, on a cold cache: every load succeeds and
// runs correctly; then eight threads on one key, warm. No build directory is left behind and every
// entry verifies afterwards.
TEST(HostCache, EightThreadsCompileConcurrently) {
  Scratch scratch;
  const HostCompileOptions opts = optionsIn(scratch.path() / "cache");
  auto runThreads = [&](auto offsetOf) {
    std::atomic<int> failures{0};
    std::vector<std::string> errors(8);
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&, t] {
        try {
          const int offset = offsetOf(t);
          auto m = HostModule::load(kernelSource(offset), "affine", opts);
          std::vector<int> out(8, -1);
          int* o = out.data();
          int k = 3;
          void* args[] = {&o, &k};
          m->launch({1}, {8}, 0, args);
          for (int i = 0; i < 8; ++i) {
            if (out[i] != i * 3 + offset) ++failures;
          }
        } catch (const std::exception& e) {
          errors[t] = e.what();
          ++failures;
        }
      });
    }
    for (auto& th : threads) th.join();
    for (const auto& e : errors) EXPECT_EQ(e, "");
    EXPECT_EQ(failures.load(), 0);
  };
  ::testing::internal::CaptureStderr();
  runThreads([](int t) { return 100 + t % 4; });  // same key pairwise, different keys across
  runThreads([](int) { return 200; });            // all on one key (cold, then warm below)
  runThreads([](int) { return 200; });
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err, "");
  int entries = 0;
  for (const auto& e : fs::directory_iterator(opts.cacheDir)) {
    const std::string name = e.path().filename().string();
    if (name == ".lock") continue;
    EXPECT_EQ(name.find('.'), std::string::npos) << "left behind: " << e.path();
    ++entries;
  }
  EXPECT_EQ(entries, 5);
  const uint64_t before = HostModule::compilerRuns();
  for (int offset : {100, 101, 102, 103, 200}) {
    auto m = HostModule::load(kernelSource(offset), "affine", opts);
    EXPECT_TRUE(m->cacheHit());
    expectRuns(*m, offset);
  }
  EXPECT_EQ(HostModule::compilerRuns(), before);
}

// A file of an entry replaced by something that is not a regular file (a FIFO once made the
// reader wait forever for a writer): one warning naming what it is, the entry is rebuilt and
// replaced, the kernel runs, and the next load is a quiet hit.
TEST(HostCache, NonRegularFilesInAnEntryAreRebuiltWithoutWaiting) {
  Scratch scratch;
  const HostCompileOptions opts = optionsIn(scratch.path() / "cache");
  struct Case {
    const char* file;  // in the entry; "" for the entry itself
    Special kind;
    const char* problem;
  };
  const Case cases[] = {
      {"manifest", Special::Fifo,
       "has a checksum file that is a FIFO (named pipe), not a regular file"},
      {"kernel.so", Special::Fifo,
       "has a kernel.so that is a FIFO (named pipe), not a regular file"},
      {"kernel.so", Special::Directory, "has a kernel.so that is a directory, not a regular file"},
      {"kernel.so", Special::LinkToDevZero, "has a kernel.so that is a symbolic link"},
      {"manifest", Special::Socket, "has a checksum file that is a socket, not a regular file"},
      {"", Special::Fifo, "is a FIFO (named pipe), not a directory"},
  };
  int offset = 300;
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.file) + " " + c.problem);
    ++offset;
    const fs::path entry = compileOnly(opts, offset);
    ASSERT_NO_FATAL_FAILURE(replaceWith(*c.file ? entry / c.file : entry, c.kind));
    std::unique_ptr<HostModule> m;
    std::string err;
    mustFinishWithin(60s, "loading from a damaged entry",
                     [&] { err = loadCapturing(opts, offset, m); });
    EXPECT_EQ(err, "loom: warning: host kernel cache entry " + entry.string() + " " + c.problem +
                       "; rebuilding\n");
    EXPECT_FALSE(m->cacheHit());
    expectRuns(*m, offset);
    std::unique_ptr<HostModule> again;
    EXPECT_EQ(loadCapturing(opts, offset, again), "");
    EXPECT_TRUE(again->cacheHit());
  }
}

// A lock file that is not a regular file (here a FIFO, then a directory) is replaced with one
// warning, and installs go on under the new lock.
TEST(HostCache, LockFileThatIsNotARegularFileIsReplaced) {
  Scratch scratch;
  const HostCompileOptions opts = optionsIn(scratch.path() / "cache");
  fs::create_directories(opts.cacheDir);
  ::chmod(opts.cacheDir.c_str(), 0700);
  const fs::path lock = opts.cacheDir / ".lock";
  int offset = 320;
  for (Special kind : {Special::Fifo, Special::Directory}) {
    ASSERT_NO_FATAL_FAILURE(replaceWith(lock, kind));
    std::unique_ptr<HostModule> m;
    std::string err;
    mustFinishWithin(60s, "installing under a damaged lock file",
                     [&] { err = loadCapturing(opts, ++offset, m); });
    EXPECT_EQ(err, "loom: warning: host kernel cache lock " + lock.string() + " is " +
                       (kind == Special::Fifo ? "a FIFO (named pipe)" : "a directory") +
                       ", not a regular file; replacing it\n");
    expectRuns(*m, offset);
    EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(lock))) << lock;
    EXPECT_EQ(m->objectPath().parent_path().parent_path(), opts.cacheDir);  // installed
  }
}

/// Holds an exclusive flock on `path` (as a stuck process would) for the scope.
class HeldLock {
 public:
  explicit HeldLock(const fs::path& path)
      : fd_(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600)) {
    EXPECT_GE(fd_, 0) << path;
    EXPECT_EQ(::flock(fd_, LOCK_EX | LOCK_NB), 0) << path;
  }
  ~HeldLock() { release(); }
  void release() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

// A lock held by a stuck process no longer makes every miss wait forever: after
// LOOM_CACHE_LOCK_TIMEOUT the kernel is used from its private build directory (not installed,
// removed with the module), with one warning naming the lock file; later misses do not wait
// again, and a compile error then names the build directory. Once the lock is free, misses are
// cached again.
TEST(HostCache, StuckLockGivesPrivateBuildsWithAWarning) {
  Scratch scratch;
  const HostCompileOptions opts = optionsIn(scratch.path() / "cache");
  fs::create_directories(opts.cacheDir);
  ::chmod(opts.cacheDir.c_str(), 0700);
  const fs::path lockPath = opts.cacheDir / ".lock";
  HeldLock held(lockPath);
  ScopedEnv timeout("LOOM_CACHE_LOCK_TIMEOUT", "0.5");
  std::unique_ptr<HostModule> m;
  std::string err;
  mustFinishWithin(60s, "a miss under a held lock", [&] { err = loadCapturing(opts, 340, m); });
  EXPECT_EQ(err, "loom: warning: host kernel cache lock " + lockPath.string() +
                     " is held by another process (waited 0.5 s; LOOM_CACHE_LOCK_TIMEOUT sets the "
                     "wait); kernels are compiled into private directories, not cached, until it "
                     "is released\n");
  expectRuns(*m, 340);
  EXPECT_FALSE(m->cacheHit());
  const fs::path build = m->objectPath().parent_path();
  EXPECT_NE(build.filename().string().find(".build."), std::string::npos) << build;
  EXPECT_EQ(modeOf(build), 0700u);
  m.reset();
  EXPECT_FALSE(fs::exists(build)) << build;
  std::unique_ptr<HostModule> second;
  mustFinishWithin(60s, "a second miss under a held lock",
                   [&] { EXPECT_EQ(loadCapturing(opts, 341, second), ""); });
  expectRuns(*second, 341);
  std::string msg;
  mustFinishWithin(60s, "a failed compile under a held lock", [&] {
    msg = testing::userErrorOf([&] {
      HostModule::load("extern \"C\" __global__ void bad(int* o) { o[0] = nope; }", "bad", opts);
    });
  });
  EXPECT_NE(msg.find("nope"), std::string::npos) << msg;
  EXPECT_NE(msg.find(".build."), std::string::npos) << msg;
  for (const auto& e : fs::directory_iterator(opts.cacheDir)) {
    EXPECT_EQ(e.path().filename().string().find(".failed"), std::string::npos) << e.path();
  }

  held.release();
  std::unique_ptr<HostModule> cached;
  EXPECT_EQ(loadCapturing(opts, 342, cached), "");
  EXPECT_EQ(cached->objectPath().parent_path().parent_path(), opts.cacheDir);
  std::unique_ptr<HostModule> hit;
  EXPECT_EQ(loadCapturing(opts, 342, hit), "");
  EXPECT_TRUE(hit->cacheHit());
}

// LOOM_CACHE_LOCK_TIMEOUT that is not a number of seconds is an error naming the variable.
TEST(HostCache, BadLockTimeoutIsAnError) {
  Scratch scratch;
  for (const char* bad : {"soon", "-1", "1e99", "nan", "2s"}) {
    ScopedEnv timeout("LOOM_CACHE_LOCK_TIMEOUT", bad);
    const std::string msg = testing::userErrorOf(
        [&] { HostModule::load(kernelSource(350), "affine", optionsIn(scratch.path())); });
    EXPECT_NE(msg.find(std::string("LOOM_CACHE_LOCK_TIMEOUT must be a number of seconds from 0 "
                                   "up, got '") +
                       bad + "'"),
              std::string::npos)
        << msg;
  }
}

/// A compiler that deletes a directory while it compiles: `LOOM_TEST_DELETE` (default: its own
/// working directory) when run in a cache build directory, then the real compiler.
fs::path deletingCompiler(const fs::path& dir) {
  const fs::path script = dir / "deleting-cxx";
  std::ofstream(script)
      << "#!/bin/sh\n"
         "case \"$PWD\" in *.build.*) rm -rf \"${LOOM_TEST_DELETE:-$PWD}\";; esac\n"
         "exec c++ \"$@\"\n";
  fs::permissions(script, fs::perms::owner_all);
  return script;
}

// A cache deleted while a kernel compiles in it is reported as such (not as a failed compile
// with an empty log), and the kernel is compiled again in a private temporary directory and runs.
// Deleting only the build directory (allowed for leftovers) is reported the same way.
TEST(HostCache, CacheDeletedDuringCompileIsReportedAndRecompiled) {
  Scratch scratch;
  const fs::path root = scratch.path() / "root";
  const HostCompileOptions opts = optionsIn(root / "host");
  ScopedEnv cxx("LOOM_HOST_CXX", deletingCompiler(scratch.path()).string());
  {
    ScopedEnv target("LOOM_TEST_DELETE", root.string());
    std::unique_ptr<HostModule> m;
    const std::string err = loadCapturing(opts, 360, m);
    EXPECT_EQ(err, "loom: warning: host kernel cache " + opts.cacheDir.string() +
                       " was deleted while kernel affine was being compiled; compiling it again "
                       "in a private temporary directory\n");
    expectRuns(*m, 360);
    EXPECT_FALSE(isUnder(m->objectPath(), root)) << m->objectPath();
    EXPECT_FALSE(fs::exists(root));
  }
  std::unique_ptr<HostModule> m;
  const std::string err = loadCapturing(opts, 361, m);
  const std::string prefix = "loom: warning: build directory " + opts.cacheDir.string() + "/";
  EXPECT_EQ(err.substr(0, prefix.size()), prefix) << err;
  EXPECT_NE(err.find(".build."), std::string::npos) << err;
  EXPECT_NE(err.find(" in the host kernel cache was deleted while kernel affine was being "
                     "compiled; compiling it again in a private temporary directory\n"),
            std::string::npos)
      << err;
  expectRuns(*m, 361);
  EXPECT_FALSE(isUnder(m->objectPath(), opts.cacheDir)) << m->objectPath();
}

// A read-only cache (as the docs say: a cache is an optimization) still serves its hits, and a
// miss is compiled into a private temporary directory with one warning, not an error; a read-only
// cache root whose host/ folder is missing is not used at all, with its warning.
TEST(HostCache, ReadOnlyCacheServesHitsAndBuildsMissesPrivately) {
  Scratch scratch;
  const fs::path root = scratch.path() / "root";
  const HostCompileOptions opts = optionsIn(root / "host");
  compileOnly(opts, 370);
  ReadOnlyDir readOnly(opts.cacheDir);
  ASSERT_TRUE(readOnly.ok()) << "cannot make " << opts.cacheDir << " read-only";
  const uint64_t before = HostModule::compilerRuns();
  std::unique_ptr<HostModule> hit;
  EXPECT_EQ(loadCapturing(opts, 370, hit), "");
  EXPECT_TRUE(hit->cacheHit());
  expectRuns(*hit, 370);
  EXPECT_EQ(HostModule::compilerRuns(), before);

  std::unique_ptr<HostModule> miss;
  EXPECT_EQ(loadCapturing(opts, 371, miss),
            "loom: warning: host kernel cache " + opts.cacheDir.string() +
                " cannot take new entries (cannot create a temporary directory in " +
                opts.cacheDir.string() +
                ": Permission denied); compiling kernels it lacks into private temporary "
                "directories\n");
  expectRuns(*miss, 371);
  EXPECT_FALSE(isUnder(miss->objectPath(), root)) << miss->objectPath();
  const fs::path temp = miss->objectPath().parent_path();
  miss.reset();
  EXPECT_FALSE(fs::exists(temp)) << temp;

  const fs::path bare = scratch.path() / "bare";
  fs::create_directory(bare);
  ReadOnlyDir bareReadOnly(bare);
  ASSERT_TRUE(bareReadOnly.ok());
  ScopedEnv env("LOOM_CACHE_DIR", bare.string());
  std::unique_ptr<HostModule> uncached;
  EXPECT_EQ(loadCapturing({}, 372, uncached),
            "loom: warning: host kernel cache " + (bare / "host").string() +
                " is not used: cannot create " + (bare / "host").string() +
                ": Permission denied; compiling into private temporary directories instead\n");
  expectRuns(*uncached, 372);
}

}  // namespace
}  // namespace loom::backend
