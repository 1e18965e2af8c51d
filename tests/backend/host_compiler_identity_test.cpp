// SPDX-License-Identifier: Apache-2.0
// The host compiler's identity in the kernel cache's key (host_compiler.h): `--version` runs
// once per compiler file, is remembered beside the cache for later processes, and a compiler
// whose file changes (size, modification time) is probed again and keys new entries. A fake
// compiler script counts its --version calls and hands real compiles to c++.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "backend/host/host_compiler.h"
#include "loom/backend/host_module.h"
#include "loom/support/private_dir.h"
#include "loom/support/tool_identity.h"
#include "scoped_env.h"

namespace loom::backend {
namespace {

namespace fs = std::filesystem;
using ::loom::test::ScopedEnv;

class HostCompilerIdentity : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = *makePrivateTempDirectory(fs::temp_directory_path(), "loom-cxx-identity-test-");
    script_ = dir_ / "fake-cxx";
    writeScript("1.0");
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  // A compiler that answers --version with `version` (counting the calls) and otherwise runs
  // c++ with its arguments.
  void writeScript(const std::string& version) {
    std::ofstream out(script_, std::ios::trunc);
    out << "#!/bin/sh\n"
        << "if [ \"$1\" = --version ]; then echo x >> '" << (dir_ / "probes").string()
        << "'; echo 'fake-cxx " << version << "'; exit 0; fi\n"
        << "exec c++ \"$@\"\n";
    out.close();
    fs::permissions(script_, fs::perms::owner_all);
  }
  int probes() const {
    std::ifstream in(dir_ / "probes");
    int n = 0;
    for (std::string line; std::getline(in, line);) ++n;
    return n;
  }
  fs::path dir_, script_;
};

// --version runs for a compiler file the identity folder does not know, not again for the same
// file (a later process reads the remembered answer), and again once the file changed.
TEST_F(HostCompilerIdentity, ProbesOncePerCompilerFile) {
  const std::vector<std::string> compiler = {script_.string()};
  const fs::path ids = dir_ / "identities";
  bool probed = false;
  const std::string first = host::hostCompilerIdentity(compiler, ids, &probed);
  EXPECT_TRUE(probed);
  EXPECT_EQ(probes(), 1);
  EXPECT_NE(first.find("fake-cxx 1.0"), std::string::npos) << first;
  EXPECT_NE(first.find(fs::canonical(script_).string()), std::string::npos) << first;
  EXPECT_EQ(host::hostCompilerIdentity(compiler, ids, &probed), first);
  EXPECT_FALSE(probed);
  EXPECT_EQ(probes(), 1);
  // The same version line from a changed file (another size): a new identity, probed again.
  writeScript("1.0   ");
  const std::string changed = host::hostCompilerIdentity(compiler, ids, &probed);
  EXPECT_TRUE(probed);
  EXPECT_EQ(probes(), 2);
  EXPECT_NE(changed, first);
  // Only the modification time changes: probed again too.
  const fs::file_time_type later = fs::last_write_time(script_) + std::chrono::seconds(5);
  fs::last_write_time(script_, later);
  const std::string touched = host::hostCompilerIdentity(compiler, ids, &probed);
  EXPECT_TRUE(probed);
  EXPECT_EQ(probes(), 3);
  EXPECT_NE(touched, changed);
}

// A compiler found on PATH is stamped by the file found there (no '/' in the command).
TEST_F(HostCompilerIdentity, FindsTheCompilerOnPath) {
  ScopedEnv path("PATH", dir_.string() + ":/usr/bin:/bin");
  ASSERT_EQ(findExecutable("fake-cxx"), script_);
  bool probed = false;
  const std::string id = host::hostCompilerIdentity({"fake-cxx"}, dir_ / "identities", &probed);
  EXPECT_TRUE(probed);
  EXPECT_NE(id.find(fs::canonical(script_).string()), std::string::npos) << id;
  EXPECT_EQ(findExecutable("loom-no-such-compiler"), std::nullopt);
}

// End to end: a kernel compiled with the fake compiler is a cache hit the second time, and a
// miss (the compiler runs) once the compiler file changed.
TEST_F(HostCompilerIdentity, ChangedCompilerRecompiles) {
  ScopedEnv root("LOOM_CACHE_DIR", (dir_ / "cache").string());
  HostCompileOptions options;
  options.compiler = script_.string();
  options.cacheDir = dir_ / "cache" / "host";
  const std::string source = "extern \"C\" __global__ void k(int* out) { out[threadIdx.x] = 7; }\n";
  const std::string tu = host::hostTranslationUnit(source, "k");
  const uint64_t runs = host::hostCompilerRuns();
  EXPECT_FALSE(host::compileForHost(tu, "k", options).cacheHit);
  EXPECT_EQ(host::hostCompilerRuns(), runs + 1);
  EXPECT_TRUE(host::compileForHost(tu, "k", options).cacheHit);
  EXPECT_EQ(probes(), 1);
  writeScript("1.0 (rebuilt)");
  const host::CompiledObject again = host::compileForHost(tu, "k", options);
  EXPECT_FALSE(again.cacheHit);
  EXPECT_EQ(host::hostCompilerRuns(), runs + 2);
  EXPECT_EQ(probes(), 2);
  // The remembered answers live beside the cache, private.
  EXPECT_FALSE(privateDirectoryProblem(dir_ / "cache" / "identities").has_value());
}

}  // namespace
}  // namespace loom::backend
