// SPDX-License-Identifier: Apache-2.0
// The NVRTC identity in the cubin cache's key (nvrtc.h): a new process whose kernels all come
// from the cache never loads libnvrtc, and a changed library file (here a copy of the real one
// whose modification time moves) keys new cubins. Each step runs this binary again as a child
// (NvrtcIdentityChild.DISABLED_Compile), since the library is loaded once per process.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "backend/cuda/test_kernels.h"
#include "loom/backend/cuda/nvrtc.h"

namespace loom::cuda {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

// The child: compiles one kernel through the default cache (LOOM_CACHE_DIR) and says what it
// took.
TEST(NvrtcIdentityChild, DISABLED_Compile) {
  NvrtcCompiler compiler;
  const CompileResult r =
      compiler.compile("extern \"C\" __global__ void nvrtc_identity(float* x) { x[0] = 1.0f; }\n",
                       CompileOptions::forArch("sm_90", "nvrtc_identity"));
  std::printf("nvrtc_identity_child key=%016llx hit=%d loaded=%d compiles=%llu\n",
              static_cast<unsigned long long>(r.key), r.cacheHit ? 1 : 0, nvrtcLoaded() ? 1 : 0,
              static_cast<unsigned long long>(compiler.stats().nvrtcCompiles));
}

struct Child {
  int status = -1;
  unsigned long long key = 0, compiles = 0;
  int hit = -1, loaded = -1;
  std::string log;
};

Child runChild(const fs::path& cache, const fs::path& library) {
  const std::string cmd = "LOOM_CACHE_DIR='" + cache.string() + "' LOOM_NVRTC_LIBRARY='" +
                          library.string() + "' '" + fs::read_symlink("/proc/self/exe").string() +
                          "' --gtest_also_run_disabled_tests "
                          "--gtest_filter=NvrtcIdentityChild.DISABLED_Compile 2>&1";
  Child c;
  FILE* pipe = popen(cmd.c_str(), "r");
  EXPECT_NE(pipe, nullptr);
  if (pipe == nullptr) return c;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) c.log.append(buf.data(), n);
  const int status = pclose(pipe);
  c.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  const size_t at = c.log.find("nvrtc_identity_child ");
  if (at != std::string::npos) {
    std::sscanf(c.log.c_str() + at, "nvrtc_identity_child key=%llx hit=%d loaded=%d compiles=%llu",
                &c.key, &c.hit, &c.loaded, &c.compiles);
  }
  return c;
}

TEST(NvrtcIdentity, WarmStartDoesNotLoadNvrtcAndAChangedLibraryRecompiles) {
  if (!nvrtcAvailable()) GTEST_SKIP() << nvrtcUnavailableReason();
  TempDir dir;
  // A private copy of the library (its builtins linked beside it, where it looks for them).
  const fs::path real = fs::canonical(nvrtcLibraryPath());
  const fs::path lib = dir.path() / "lib";
  fs::create_directories(lib);
  const fs::path copy = lib / real.filename();
  fs::copy_file(real, copy);
  for (const auto& e : fs::directory_iterator(real.parent_path())) {
    if (e.path().filename().string().rfind("libnvrtc-builtins", 0) == 0) {
      fs::create_symlink(e.path(), lib / e.path().filename());
    }
  }
  const fs::path cache = dir.path() / "cache";
  const Child cold = runChild(cache, copy);
  ASSERT_EQ(cold.status, 0) << cold.log;
  ASSERT_EQ(cold.hit, 0) << cold.log;
  EXPECT_EQ(cold.loaded, 1);
  EXPECT_EQ(cold.compiles, 1u);
  const Child warm = runChild(cache, copy);
  ASSERT_EQ(warm.status, 0) << warm.log;
  EXPECT_EQ(warm.hit, 1) << warm.log;
  EXPECT_EQ(warm.loaded, 0) << "a cache hit loaded libnvrtc";
  EXPECT_EQ(warm.key, cold.key);
  // The same bytes with a new modification time: another library file as far as keys go.
  fs::last_write_time(copy, fs::last_write_time(copy) + std::chrono::seconds(5));
  const Child changed = runChild(cache, copy);
  ASSERT_EQ(changed.status, 0) << changed.log;
  EXPECT_EQ(changed.hit, 0) << changed.log;
  EXPECT_EQ(changed.loaded, 1);
  EXPECT_NE(changed.key, cold.key);
  const Child again = runChild(cache, copy);
  ASSERT_EQ(again.status, 0) << again.log;
  EXPECT_EQ(again.hit, 1);
  EXPECT_EQ(again.loaded, 0);
  EXPECT_EQ(again.key, changed.key);
}

}  // namespace
}  // namespace loom::cuda
