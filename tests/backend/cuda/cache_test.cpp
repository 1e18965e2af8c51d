// SPDX-License-Identifier: Apache-2.0
// The cubin disk cache: hits skip NVRTC, keys include the options, bad files are misses.
#include "loom/backend/cuda/cubin_cache.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "backend/cuda/test_kernels.h"
#include "loom/backend/cuda/nvrtc.h"

namespace loom::cuda {
namespace {

using test::TempDir;

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

// A truncated or foreign file is a miss, not an error.
TEST(CubinCache, CorruptFileIsAMiss) {
  TempDir dir;
  CubinCache cache(dir.path());
  ASSERT_TRUE(cache.store(7, {"log", {'a', 'b', 'c'}}));
  std::filesystem::resize_file(cache.pathFor(7), 20);
  EXPECT_FALSE(cache.load(7).has_value());
  std::filesystem::copy_file(cache.pathFor(7), cache.pathFor(8));
  EXPECT_FALSE(cache.load(8).has_value());
}

// LOOM_CACHE_DIR picks the cache root.
TEST(CubinCache, CacheRootFromEnvironment) {
  const char* old = std::getenv("LOOM_CACHE_DIR");
  std::string saved = old ? old : "";
  setenv("LOOM_CACHE_DIR", "/tmp/loom-cache-root-test", 1);
  EXPECT_EQ(defaultCacheRoot(), std::filesystem::path("/tmp/loom-cache-root-test"));
  if (old) setenv("LOOM_CACHE_DIR", saved.c_str(), 1); else unsetenv("LOOM_CACHE_DIR");
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
  CompileResult again = compiler.compile(source, sm90());
  EXPECT_FALSE(again.cacheHit);
  EXPECT_EQ(compiler.stats().nvrtcCompiles, 2u);
  EXPECT_TRUE(compiler.cache()->load(first.key).has_value());
}

}  // namespace
}  // namespace loom::cuda
