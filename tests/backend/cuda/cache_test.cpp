// SPDX-License-Identifier: Apache-2.0
// The cubin disk cache: hits skip NVRTC, keys include the options, bad files (damaged, or not
// regular files at all) are misses that never wait, a read-only folder still serves its hits.
#include "loom/backend/cuda/cubin_cache.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "backend/cuda/test_kernels.h"
#include "file_faults.h"
#include "loom/backend/cuda/nvrtc.h"
#include "loom/support/dump_sink.h"
#include "must_finish.h"
#include "scoped_env.h"

namespace loom::cuda {
namespace {

using test::TempDir;
using ::loom::test::mustFinishWithin;
using ::loom::test::ReadOnlyDir;
using ::loom::test::replaceWith;
using ::loom::test::ScopedEnv;
using ::loom::test::Special;
using namespace std::chrono_literals;

#define SKIP_WITHOUT_NVRTC()                                                      \
  if (!nvrtcAvailable()) {                                                        \
    std::cout << "skipped: " << nvrtcUnavailableReason() << "\n";                 \
    GTEST_SKIP() << nvrtcUnavailableReason();                                     \
  }

CompileOptions sm90(std::vector<std::string> extra = {}) {
  CompileOptions o = CompileOptions::forArch("sm_90", "vector_add");
  o.extraOptions = std::move(extra);
  return o;
}

// A stored entry loads back byte for byte, and no temporary file is left beside it.
TEST(CubinCache, StoreThenLoadRoundTrips) {
  TempDir dir;
  CubinCache cache(dir.path() / "cuda");
  CubinCache::Entry entry{"ptxas info : Used 3 registers", {'\x7f', 'E', 'L', 'F', '\0', 'x'}};
  ASSERT_TRUE(cache.store(42, entry));
  auto loaded = cache.load(42);
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->log, entry.log);
  EXPECT_EQ(loaded->cubin, entry.cubin);
  EXPECT_FALSE(cache.load(43).has_value());
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(cache.dir())) {
    EXPECT_EQ(e.path().extension(), ".cubin") << e.path();
    ++files;
  }
  EXPECT_EQ(files, 1);
}

/// Runs `f` with stderr (warnings) and the dump sink (LOOM_DUMP=ptxas) captured and returns
/// what it printed, warnings first.
template <typename F>
std::string stderrOf(F&& f) {
  std::ostringstream dumps;
  ScopedDumpSink into(dumps);
  ::testing::internal::CaptureStderr();
  f();
  return ::testing::internal::GetCapturedStderr() + dumps.str();
}

unsigned modeOf(const std::filesystem::path& p) {
  struct stat st;
  EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

// A good entry is a quiet hit; the folder is created 0700 and the file 0600 even under umask 0.
TEST(CubinCache, GoodEntryIsAQuietHitInAPrivateFolder) {
  TempDir dir;
  CubinCache cache(dir.path() / "a" / "cuda");
  const mode_t oldMask = ::umask(0);
  const bool stored = cache.store(5, {"log", {'x', 'y'}});
  ::umask(oldMask);
  ASSERT_TRUE(stored);
  EXPECT_EQ(modeOf(dir.path() / "a"), 0700u);
  EXPECT_EQ(modeOf(cache.dir()), 0700u);
  EXPECT_EQ(modeOf(cache.pathFor(5)), 0600u);
  std::optional<CubinCache::Entry> loaded;
  EXPECT_EQ(stderrOf([&] { loaded = cache.load(5); }), "");
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->cubin, (std::vector<char>{'x', 'y'}));
  EXPECT_EQ(stderrOf([&] { EXPECT_FALSE(cache.load(6).has_value()); }), "");  // absent: quiet
}

// A truncated file, a flipped byte and another key's file are misses with one warning each, and
// the next store overwrites the bad entry.
TEST(CubinCache, DamagedEntriesAreWarnedMisses) {
  TempDir dir;
  CubinCache cache(dir.path());
  const CubinCache::Entry entry{"ptxas info", {'\x7f', 'E', 'L', 'F', 'a', 'b', 'c', 'd'}};
  ASSERT_TRUE(cache.store(7, entry));
  const auto path = cache.pathFor(7);
  const auto size = std::filesystem::file_size(path);

  std::filesystem::resize_file(path, size - 3);
  EXPECT_EQ(stderrOf([&] { EXPECT_FALSE(cache.load(7).has_value()); }),
            "loom: warning: cubin cache entry " + path.string() +
                " failed its checksum; recompiling\n");

  ASSERT_TRUE(cache.store(7, entry));
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(std::streamoff(size - 2));
    f.put('Z');
  }
  EXPECT_EQ(stderrOf([&] { EXPECT_FALSE(cache.load(7).has_value()); }),
            "loom: warning: cubin cache entry " + path.string() +
                " failed its checksum; recompiling\n");

  std::filesystem::resize_file(path, 20);  // shorter than the header
  EXPECT_EQ(stderrOf([&] { EXPECT_FALSE(cache.load(7).has_value()); }),
            "loom: warning: cubin cache entry " + path.string() +
                " is not a cubin cache file; recompiling\n");

  ASSERT_TRUE(cache.store(7, entry));
  std::filesystem::copy_file(path, cache.pathFor(8));
  EXPECT_EQ(stderrOf([&] { EXPECT_FALSE(cache.load(8).has_value()); }),
            "loom: warning: cubin cache entry " + cache.pathFor(8).string() +
                " holds the entry of another key; recompiling\n");

  std::optional<CubinCache::Entry> loaded;
  EXPECT_EQ(stderrOf([&] { loaded = cache.load(7); }), "");
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->cubin, entry.cubin);
  EXPECT_EQ(loaded->log, entry.log);
}

// An entry replaced by something that is not a regular file (a FIFO once made the load wait
// forever for a writer; a directory once could not be replaced by the next store) is a miss
// with one warning naming what it is, and the next store replaces it.
TEST(CubinCache, NonRegularEntriesAreWarnedMissesAndReplaced) {
  TempDir dir;
  CubinCache cache(dir.path() / "cuda");
  const CubinCache::Entry entry{"ptxas info", {'\x7f', 'E', 'L', 'F', '1'}};
  const std::pair<Special, std::string> cases[] = {
      {Special::Fifo, "is a FIFO (named pipe), not a regular file"},
      {Special::Directory, "is a directory, not a regular file"},
      {Special::LinkToDevZero, "is a symbolic link"},
      {Special::Socket, "is a socket, not a regular file"},
  };
  for (const auto& [kind, problem] : cases) {
    SCOPED_TRACE(problem);
    ASSERT_TRUE(cache.store(11, entry));
    const auto path = cache.pathFor(11);
    ASSERT_NO_FATAL_FAILURE(replaceWith(path, kind));
    if (kind == Special::Directory) std::ofstream(path / "inside") << "x";
    std::string err;
    mustFinishWithin(30s, "loading a cubin entry that is not a regular file",
                     [&] { err = stderrOf([&] { EXPECT_FALSE(cache.load(11).has_value()); }); });
    EXPECT_EQ(err, "loom: warning: cubin cache entry " + path.string() + " " + problem +
                       "; recompiling\n");
    ASSERT_TRUE(cache.store(11, entry));
    std::optional<CubinCache::Entry> loaded;
    EXPECT_EQ(stderrOf([&] { loaded = cache.load(11); }), "");
    ASSERT_TRUE(loaded.has_value());
    EXPECT_EQ(loaded->cubin, entry.cubin);
  }
}

// A read-only folder (the docs: a failed write is skipped, nothing here is an error) still serves
// its hits; a store is skipped quietly and leaves nothing behind.
TEST(CubinCache, ReadOnlyFolderServesHitsAndSkipsStores) {
  TempDir dir;
  CubinCache cache(dir.path() / "cuda");
  const CubinCache::Entry entry{"log", {'a', 'b'}};
  ASSERT_TRUE(cache.store(12, entry));
  ReadOnlyDir readOnly(cache.dir());
  ASSERT_TRUE(readOnly.ok()) << "cannot make " << cache.dir() << " read-only";
  std::optional<CubinCache::Entry> loaded;
  EXPECT_EQ(stderrOf([&] {
              loaded = cache.load(12);
              EXPECT_FALSE(cache.store(13, entry));
            }),
            "");
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->cubin, entry.cubin);
  EXPECT_FALSE(cache.load(13).has_value());
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(cache.dir())) {
    EXPECT_EQ(e.path(), cache.pathFor(12));
    ++files;
  }
  EXPECT_EQ(files, 1);
}

// A folder others can write to, or a symbolic link, is not used: loads miss and stores are
// skipped, with one warning per folder.
TEST(CubinCache, UntrustedFolderIsNotUsed) {
  TempDir dir;
  CubinCache good(dir.path() / "cuda");
  ASSERT_TRUE(good.store(9, {"log", {'c'}}));
  ASSERT_EQ(::chmod(good.dir().c_str(), 0777), 0);
  const std::string err = stderrOf([&] {
    EXPECT_FALSE(good.load(9).has_value());
    EXPECT_FALSE(good.store(10, {"log", {'d'}}));
  });
  EXPECT_EQ(err, "loom: warning: cubin cache " + good.dir().string() +
                     " is not used: it is writable by group or others (mode 0777)\n");
  EXPECT_FALSE(std::filesystem::exists(good.pathFor(10)));
  ASSERT_EQ(::chmod(good.dir().c_str(), 0700), 0);

  std::filesystem::create_directory_symlink(good.dir(), dir.path() / "link");
  CubinCache linked(dir.path() / "link");
  EXPECT_EQ(stderrOf([&] { EXPECT_FALSE(linked.load(9).has_value()); }),
            "loom: warning: cubin cache " + linked.dir().string() +
                " is not used: it is a symbolic link\n");
}

// Eight threads storing and loading the same and different keys at once all see whole entries.
TEST(CubinCache, ConcurrentStoresAndLoads) {
  TempDir dir;
  CubinCache cache(dir.path() / "cuda");
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        const uint64_t key = uint64_t(t % 2 == 0 ? 1000 : 2000 + t);
        const CubinCache::Entry e{"log " + std::to_string(key),
                                  std::vector<char>(1000 + key % 7, char(key))};
        if (!cache.store(key, e)) ++bad;
        auto loaded = cache.load(key);
        if (!loaded || loaded->cubin != e.cubin || loaded->log != e.log) ++bad;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
  for (const auto& e : std::filesystem::directory_iterator(cache.dir())) {
    EXPECT_EQ(e.path().extension(), ".cubin") << "left behind: " << e.path();
  }
}

// LOOM_CACHE_DIR picks the cache root; without it, XDG_CACHE_HOME and HOME the root is a per-user
// folder in the temp dir, not a shared name.
TEST(CubinCache, CacheRootFromEnvironment) {
  {
    ScopedEnv env("LOOM_CACHE_DIR", "/tmp/loom-cache-root-test");
    EXPECT_EQ(defaultCacheRoot(), std::filesystem::path("/tmp/loom-cache-root-test"));
  }
  ScopedEnv a("LOOM_CACHE_DIR", std::nullopt), b("XDG_CACHE_HOME", std::nullopt),
      c("HOME", std::nullopt), t("TMPDIR", "/var/tmp");
  EXPECT_EQ(defaultCacheRoot(),
            std::filesystem::path("/var/tmp") / ("loom-cache-" + std::to_string(::geteuid())));
}

// The second compile of the same source and options is a hit that does not call NVRTC and keeps
// the register report; a different option misses.
TEST(NvrtcCache, SecondCompileIsAHitAndOptionsAreInTheKey) {
  SKIP_WITHOUT_NVRTC();
  TempDir dir;
  NvrtcCompiler compiler(dir.path() / "cuda");
  std::string source = test::readKernel("vector_add.cu");
  CompileResult first = compiler.compile(source, sm90());
  EXPECT_FALSE(first.cacheHit);
  CompileResult second = compiler.compile(source, sm90());
  EXPECT_TRUE(second.cacheHit);
  EXPECT_EQ(second.cubin, first.cubin);
  EXPECT_EQ(second.key, first.key);
  ASSERT_NE(second.kernel("vector_add"), nullptr);
  EXPECT_EQ(second.kernel("vector_add")->registers, first.kernel("vector_add")->registers);
  CompileStats s = compiler.stats();
  EXPECT_EQ(s.nvrtcCompiles, 1u);
  EXPECT_EQ(s.cacheHits, 1u);
  EXPECT_EQ(s.cacheMisses, 1u);
  EXPECT_EQ(s.cacheStores, 1u);

  CompileResult other = compiler.compile(source, sm90({"-DUNUSED=1"}));
  EXPECT_FALSE(other.cacheHit);
  EXPECT_NE(other.key, first.key);
  EXPECT_EQ(compiler.stats().nvrtcCompiles, 2u);
}

// A new compiler on a warm cache folder (a new process, in effect) never calls NVRTC's compiler.
TEST(NvrtcCache, WarmStartSkipsNvrtc) {
  SKIP_WITHOUT_NVRTC();
  TempDir dir;
  std::string source = test::readKernel("vector_add.cu");
  {
    NvrtcCompiler cold(dir.path());
    cold.compile(source, sm90());
  }
  NvrtcCompiler warm(dir.path());
  CompileResult r = warm.compile(source, sm90());
  EXPECT_TRUE(r.cacheHit);
  EXPECT_EQ(warm.stats().nvrtcCompiles, 0u);
  EXPECT_EQ(warm.stats().cacheHits, 1u);
}

// A damaged cache file is recompiled and rewritten.
TEST(NvrtcCache, DamagedEntryIsRecompiled) {
  SKIP_WITHOUT_NVRTC();
  TempDir dir;
  NvrtcCompiler compiler(dir.path());
  std::string source = test::readKernel("vector_add.cu");
  CompileResult first = compiler.compile(source, sm90());
  std::filesystem::resize_file(compiler.cache()->pathFor(first.key), 10);
  CompileResult again;
  EXPECT_EQ(stderrOf([&] { again = compiler.compile(source, sm90()); }),
            "loom: warning: cubin cache entry " + compiler.cache()->pathFor(first.key).string() +
                " is not a cubin cache file; recompiling\n");
  EXPECT_FALSE(again.cacheHit);
  EXPECT_EQ(compiler.stats().nvrtcCompiles, 2u);
  EXPECT_TRUE(compiler.cache()->load(first.key).has_value());
}

}  // namespace
}  // namespace loom::cuda
