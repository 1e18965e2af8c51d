// SPDX-License-Identifier: Apache-2.0
// NVRTC compilation without a GPU: cubins for a named arch, ptxas reports, compile errors.
#include "loom/backend/cuda/nvrtc.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

#include "backend/cuda/test_kernels.h"
#include "loom/backend/cuda/driver.h"
#include "loom/support/error.h"

namespace loom::cuda {
namespace {

using test::TempDir;

#define SKIP_WITHOUT_NVRTC()                                                      \
  if (!nvrtcAvailable()) {                                                        \
    std::cout << "skipped: " << nvrtcUnavailableReason() << "\n";                 \
    GTEST_SKIP() << nvrtcUnavailableReason();                                     \
  }

// ptxas -v output is parsed into one record per function, with registers, spills, stack and smem.
TEST(PtxasInfo, ParsesRegistersAndSpills) {
  const char* log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function 'k1' for 'sm_90'\n"
      "ptxas info    : Function properties for k1\n"
      "    16 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads\n"
      "ptxas info    : Used 255 registers, used 1 barriers, 2048 bytes smem, 380 bytes cmem[0]\n"
      "ptxas info    : Compiling entry function '_Z2k2Pf' for 'sm_90'\n"
      "ptxas info    : Function properties for _Z2k2Pf\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 10 registers, used 0 barriers, 360 bytes cmem[0]\n";
  auto kernels = parsePtxasInfo(log);
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels[0].function, "k1");
  EXPECT_EQ(kernels[0].registers, 255);
  EXPECT_EQ(kernels[0].spillStores, 8);
  EXPECT_EQ(kernels[0].spillLoads, 12);
  EXPECT_EQ(kernels[0].stackFrame, 16);
  EXPECT_EQ(kernels[0].sharedMemory, 2048);
  EXPECT_EQ(kernels[1].function, "_Z2k2Pf");
  EXPECT_EQ(kernels[1].registers, 10);
  EXPECT_EQ(kernels[1].spillStores, 0);
  CompileResult r;
  r.kernels = kernels;
  EXPECT_TRUE(r.hasSpills());
  EXPECT_EQ(r.kernel("_Z2k2Pf")->registers, 10);
  EXPECT_EQ(r.kernel("missing"), nullptr);
}

// The option list names the arch, C++17 and device-by-default, asks ptxas for its report, turns
// NVRTC 13's own cache off, and leaves fast math off unless asked.
TEST(NvrtcOptions, DefaultsAndSwitches) {
  CompileOptions o;
  auto flags = nvrtcOptions(o, "sm_90", 13);
  auto has = [&](const std::string& f) {
    return std::find(flags.begin(), flags.end(), f) != flags.end();
  };
  EXPECT_TRUE(has("--gpu-architecture=sm_90"));
  EXPECT_TRUE(has("-std=c++17"));
  EXPECT_TRUE(has("-default-device"));
  EXPECT_TRUE(has("--ptxas-options=-v"));
  EXPECT_FALSE(has("--use_fast_math"));
  EXPECT_FALSE(has("-lineinfo"));
  // NVRTC 13's own cache would swallow the ptxas report; NVRTC 12 does not know the option.
  EXPECT_TRUE(has("--no-cache"));
  EXPECT_TRUE(has("--minimal"));
  flags = nvrtcOptions(o, "sm_90", 12);
  EXPECT_FALSE(has("--no-cache"));
  EXPECT_FALSE(has("--minimal"));
  o.fastMath = true;
  o.lineInfo = true;
  o.extraOptions = {"-DN=4"};
  flags = nvrtcOptions(o, "sm_80", 13);
  EXPECT_TRUE(has("--gpu-architecture=sm_80"));
  EXPECT_TRUE(has("--use_fast_math"));
  EXPECT_TRUE(has("-lineinfo"));
  EXPECT_EQ(flags.back(), "-DN=4");
}

// Fast compile is off by default; a level from CompileOptions or LOOM_NVRTC_FAST_COMPILE (which
// wins) becomes --Ofast-compile=<level>, "0" turns it off, and a bad level is an error naming it.
TEST(NvrtcOptions, FastCompileLevel) {
  const char* old = std::getenv("LOOM_NVRTC_FAST_COMPILE");
  std::string saved = old ? old : "";
  unsetenv("LOOM_NVRTC_FAST_COMPILE");
  auto count = [](const std::vector<std::string>& flags, const std::string& f) {
    return std::count(flags.begin(), flags.end(), f);
  };
  CompileOptions o;
  auto flags = nvrtcOptions(o, "sm_90", 13);
  for (const auto& f : flags) EXPECT_EQ(f.find("Ofast-compile"), std::string::npos) << f;
  o.fastCompile = "min";
  EXPECT_EQ(count(nvrtcOptions(o, "sm_90", 13), "--Ofast-compile=min"), 1);
  EXPECT_EQ(count(nvrtcOptions(o, "sm_90", 12), "--Ofast-compile=min"), 0);
  setenv("LOOM_NVRTC_FAST_COMPILE", "0", 1);
  for (const auto& f : nvrtcOptions(o, "sm_90", 13)) {
    EXPECT_EQ(f.find("Ofast-compile"), std::string::npos) << f;
  }
  setenv("LOOM_NVRTC_FAST_COMPILE", "mid", 1);
  EXPECT_EQ(count(nvrtcOptions(o, "sm_90", 13), "--Ofast-compile=mid"), 1);
  setenv("LOOM_NVRTC_FAST_COMPILE", "fastest", 1);
  std::string msg;
  try {
    (void)nvrtcOptions(o, "sm_90", 13);
  } catch (const UserError& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("got 'fastest'"), std::string::npos) << msg;
  if (old) setenv("LOOM_NVRTC_FAST_COMPILE", saved.c_str(), 1);
  else unsetenv("LOOM_NVRTC_FAST_COMPILE");
}

// LOOM_NVRTC_OPTIONS adds its space-separated words after every other option.
TEST(NvrtcOptions, ExtraOptionsFromEnvironment) {
  const char* old = std::getenv("LOOM_NVRTC_OPTIONS");
  std::string saved = old ? old : "";
  setenv("LOOM_NVRTC_OPTIONS", " -DA=1  --maxrregcount=64 ", 1);
  CompileOptions o;
  o.extraOptions = {"-DB=2"};
  auto flags = nvrtcOptions(o, "sm_90", 13);
  ASSERT_GE(flags.size(), 3u);
  EXPECT_EQ(flags[flags.size() - 3], "-DB=2");
  EXPECT_EQ(flags[flags.size() - 2], "-DA=1");
  EXPECT_EQ(flags.back(), "--maxrregcount=64");
  if (old) setenv("LOOM_NVRTC_OPTIONS", saved.c_str(), 1);
  else unsetenv("LOOM_NVRTC_OPTIONS");
}

// A small kernel compiles to an sm_90 cubin (ELF) without a GPU; ptxas reports its registers and
// no spills.
TEST(Nvrtc, CompilesVectorAddForSm90) {
  SKIP_WITHOUT_NVRTC();
  NvrtcCompiler compiler(std::nullopt);
  CompileResult r = compiler.compile(test::readKernel("vector_add.cu"),
                                     CompileOptions::forArch("sm_90", "vector_add"));
  EXPECT_EQ(r.arch, "sm_90");
  ASSERT_GT(r.cubin.size(), 4u);
  EXPECT_EQ(std::string(r.cubin.data() + 1, 3), "ELF");
  const KernelResources* k = r.kernel("vector_add");
  ASSERT_NE(k, nullptr) << r.log;
  EXPECT_GT(k->registers, 0) << r.log;
  EXPECT_EQ(k->spillStores, 0);
  EXPECT_EQ(k->spillLoads, 0);
  EXPECT_FALSE(r.cacheHit);
  EXPECT_EQ(compiler.stats().nvrtcCompiles, 1u);
}

// Every kernel the CUDA backend tests use compiles for sm_90 without register spills.
TEST(Nvrtc, EveryTestKernelCompilesWithoutSpills) {
  SKIP_WITHOUT_NVRTC();
  NvrtcCompiler compiler(std::nullopt);
  auto kernels = test::allKernels();
  ASSERT_GE(kernels.size(), 2u);
  for (const auto& path : kernels) {
    std::string name = path.stem().string();
    CompileResult r = compiler.compile(test::readFile(path), CompileOptions::forArch("sm_90", name));
    ASSERT_NE(r.kernel(name), nullptr) << path << " should define extern \"C\" " << name;
    EXPECT_FALSE(r.hasSpills()) << path << " spills:\n" << r.log;
  }
}

// A syntax error is a UserError carrying NVRTC's log and the path of the written source.
TEST(Nvrtc, SyntaxErrorShowsLogAndSourcePath) {
  SKIP_WITHOUT_NVRTC();
  TempDir dir;
  NvrtcCompiler compiler(dir.path());
  std::string source = "extern \"C\" __global__ void broken(float* x) { x[0] = undefined_name; }\n";
  try {
    compiler.compile(source, CompileOptions::forArch("sm_90", "broken"));
    FAIL() << "expected a compile error";
  } catch (const UserError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("NVRTC could not compile 'broken' for sm_90"), std::string::npos) << msg;
    EXPECT_NE(msg.find("undefined_name"), std::string::npos) << msg;
    EXPECT_NE(msg.find("error"), std::string::npos) << msg;
    auto at = msg.find("source written to ");
    ASSERT_NE(at, std::string::npos) << msg;
    std::string path = msg.substr(at + 18, msg.find('\n', at) - at - 18);
    EXPECT_EQ(path.rfind(compiler.sourceDir().string(), 0), 0u) << path;
    EXPECT_EQ(test::readFile(path), source);
  }
}

// Compiling for "the current device" needs a driver: without one it is an UnavailableError that
// says a GPU is required.
TEST(Nvrtc, CurrentDeviceArchNeedsDriver) {
  SKIP_WITHOUT_NVRTC();
  if (cudaAvailable()) GTEST_SKIP() << "a CUDA driver is present";
  NvrtcCompiler compiler(std::nullopt);
  try {
    compiler.compile(test::readKernel("vector_add.cu"), CompileOptions::forArch("", "vector_add"));
    FAIL() << "expected UnavailableError";
  } catch (const UnavailableError& e) {
    EXPECT_NE(std::string(e.what()).find("a GPU is required for"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace loom::cuda
