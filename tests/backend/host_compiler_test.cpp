// SPDX-License-Identifier: Apache-2.0
// The host compiler driver: source rewriting, compile errors and the disk cache.
#include "backend/host/host_compiler.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "backend/host_test_util.h"

namespace loom::backend {
namespace {

using testing::userErrorOf;

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// `extern __shared__` becomes the per-block dynamic buffer and `__shared__` arrays become
// per-block scheduler storage; comments, lines and other text are left alone.
TEST(HostCompiler, RewritesSharedDeclarations) {
  const std::string src =
      "  extern __shared__ __align__(16) float smem[];\n"
      "  __shared__ int tile[4][8];\n"
      "  // __shared__ in a comment; stays\n"
      "  static __shared__ double s;\n";
  const std::string out = host::rewriteSharedDeclarations(src);
  EXPECT_TRUE(contains(out, "float* smem = reinterpret_cast<float*>(loom_emu_ctx->dynamic_smem);"))
      << out;
  EXPECT_TRUE(contains(out,
                       "auto& tile = *reinterpret_cast<int(*)[4][8]>(loom_emu_ctx->api->"
                       "static_shared(loom_emu_ctx, __COUNTER__, sizeof(int[4][8]), "
                       "alignof(int)));"))
      << out;
  EXPECT_TRUE(contains(out, "// __shared__ in a comment; stays")) << out;
  EXPECT_TRUE(contains(out, "auto& s = *reinterpret_cast<double*>")) << out;
  EXPECT_FALSE(contains(out, "static auto&")) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), std::count(src.begin(), src.end(), '\n'));
}

// A kernel that does not compile reports the compiler's log and where the source was written.
TEST(HostCompiler, CompileErrorShowsLogAndSource) {
  const char* src = R"(
extern "C" __global__ void broken(float* out) { out[0] = undeclared_name; }
)";
  const std::string msg =
      userErrorOf([&] { HostModule::load(src, "broken", testing::testCompileOptions()); });
  EXPECT_TRUE(contains(msg, "compiling kernel broken failed")) << msg;
  EXPECT_TRUE(contains(msg, "undeclared_name")) << msg;
  EXPECT_TRUE(contains(msg, "broken.cu")) << msg;  // the log points at the kernel's own lines
  EXPECT_TRUE(contains(msg, "source: ")) << msg;
  EXPECT_TRUE(contains(msg, "kernel.cpp")) << msg;
}

// A second load of the same source is served from the disk cache without running the compiler,
// and a changed source compiles again.
TEST(HostCompiler, CacheHitSkipsCompiler) {
  HostCompileOptions opts = testing::testCompileOptions();
  opts.cacheDir /=
      "fresh-" + std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  const std::string src =
      R"(extern "C" __global__ void cached(int* out) { out[threadIdx.x] = 7; })";
  const uint64_t before = HostModule::compilerRuns();
  auto first = HostModule::load(src, "cached", opts);
  EXPECT_FALSE(first->cacheHit());
  EXPECT_EQ(HostModule::compilerRuns(), before + 1);
  auto second = HostModule::load(src, "cached", opts);
  EXPECT_TRUE(second->cacheHit());
  EXPECT_EQ(HostModule::compilerRuns(), before + 1);
  EXPECT_EQ(first->objectPath(), second->objectPath());
  int out[2] = {0, 0};
  int* o = out;
  void* args[] = {&o};
  second->launch({1}, {2}, 0, args);
  EXPECT_EQ(out[0], 7);
  EXPECT_EQ(out[1], 7);
  auto other = HostModule::load(src + "\n// changed\n", "cached", opts);
  EXPECT_FALSE(other->cacheHit());
  EXPECT_EQ(HostModule::compilerRuns(), before + 2);
  std::filesystem::remove_all(opts.cacheDir);
}

// The embedded emulation header is the project file, complete.
TEST(HostCompiler, EmbeddedHeaderIsComplete) {
  const std::string_view h = cudaEmulationHeader();
  EXPECT_TRUE(contains(std::string(h), "#ifndef LOOM_CUDA_EMULATION_H"));
  EXPECT_TRUE(contains(std::string(h), "#endif  // LOOM_CUDA_EMULATION_H"));
}

}  // namespace
}  // namespace loom::backend
