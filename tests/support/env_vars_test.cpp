// SPDX-License-Identifier: Apache-2.0
// The registry of environment variables (loom/support/env_vars.h) against the sources and the
// README: every variable the code reads is registered, every registered one is read, README.md
// lists each with the LOOM_DUMP and LOOM_DEBUG names, and each has a one-line description.
#include "loom/support/env_vars.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "loom/support/options.h"

namespace loom {
namespace {

namespace fs = std::filesystem;

fs::path sourceDir() {
  const char* src = std::getenv("LOOM_SOURCE_DIR");
  return src != nullptr ? fs::path(src) : fs::path();
}

std::string readFile(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

// Variable name -> a file that reads it. A read is getEnv("X"), std::getenv("X") or envInt("X")
// (the launcher's integers, multidevice/communicator.cpp). Whole string literals such as
// "LOOM_BLOCK_DIM_X" are not reads: codegen writes those as macro names into kernels. The
// registry's own source is left out, so that an entry nothing reads is found.
std::map<std::string, std::string> namesTheSourcesRead() {
  static const std::regex kCall(R"((?:getEnv|getenv|envInt)\(\s*"([A-Za-z_][A-Za-z0-9_]*)\")");
  std::map<std::string, std::string> found;
  for (const char* dir : {"csrc", "include", "tools", "benchmarks"}) {
    for (const auto& entry : fs::recursive_directory_iterator(sourceDir() / dir)) {
      const fs::path& p = entry.path();
      if (!entry.is_regular_file()) continue;
      const std::string ext = p.extension().string();
      if (ext != ".cpp" && ext != ".h" && ext != ".cu" && ext != ".cuh") continue;
      if (p.filename() == "env_vars.cpp") continue;
      const std::string text = readFile(p);
      for (auto it = std::sregex_iterator(text.begin(), text.end(), kCall);
           it != std::sregex_iterator(); ++it) {
        found.emplace((*it)[1].str(), fs::relative(p, sourceDir()).string());
      }
    }
  }
  return found;
}

class EnvVarsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (sourceDir().empty() || !fs::exists(sourceDir() / "csrc")) {
      GTEST_SKIP() << "LOOM_SOURCE_DIR is not set to the source tree (ctest sets it)";
    }
  }
};

// The scan itself finds what it must: a variable read with getEnv, one with std::getenv, and one
// of the launcher's integers (so an empty scan cannot pass the next test).
TEST_F(EnvVarsTest, ScanFindsKnownReads) {
  auto found = namesTheSourcesRead();
  EXPECT_EQ(found.count("LOOM_BACKEND"), 1u);
  EXPECT_EQ(found.count("LOOM_NCCL_LIBRARY"), 1u);
  EXPECT_EQ(found.count("OMPI_COMM_WORLD_RANK"), 1u);
}

TEST_F(EnvVarsTest, EveryVariableTheSourcesReadIsRegistered) {
  for (const auto& [name, file] : namesTheSourcesRead()) {
    EXPECT_NE(findEnvironmentVariable(name), nullptr)
        << file << " reads " << name
        << ", which is not in csrc/support/env_vars.cpp (add it with a one-line description, and "
           "to README.md)";
  }
}

TEST_F(EnvVarsTest, EveryRegisteredVariableIsRead) {
  auto found = namesTheSourcesRead();
  for (const EnvVar& v : environmentVariables()) {
    EXPECT_EQ(found.count(std::string(v.name)), 1u)
        << v.name << " is registered but no source reads it any more";
  }
}

TEST_F(EnvVarsTest, ReadmeListsEveryVariableAndDumpName) {
  const std::string readme = readFile(sourceDir() / "README.md");
  ASSERT_FALSE(readme.empty());
  for (const EnvVar& v : environmentVariables()) {
    EXPECT_NE(readme.find("`" + std::string(v.name)), std::string::npos)
        << "README.md does not list " << v.name;
  }
  for (size_t i = 0; i < size_t(DumpOption::kCount); ++i) {
    std::string name(dumpOptionName(DumpOption(i)));
    EXPECT_NE(readme.find("`" + name), std::string::npos)
        << "README.md does not list LOOM_DUMP=" << name;
  }
  for (size_t i = 0; i < size_t(DebugOption::kCount); ++i) {
    std::string name(debugOptionName(DebugOption(i)));
    EXPECT_NE(readme.find("`" + name + "`"), std::string::npos)
        << "README.md does not list LOOM_DEBUG=" << name;
  }
}

// One line each, no duplicates, every name spelled as a variable.
TEST(EnvVarsRegistry, EntriesAreWellFormed) {
  std::set<std::string_view> seen;
  for (const EnvVar& v : environmentVariables()) {
    EXPECT_TRUE(seen.insert(v.name).second) << v.name << " is registered twice";
    EXPECT_TRUE(std::regex_match(std::string(v.name), std::regex("[A-Z_][A-Z0-9_]*"))) << v.name;
    EXPECT_FALSE(v.values.empty()) << v.name;
    EXPECT_FALSE(v.description.empty()) << v.name;
    EXPECT_EQ(v.description.find('\n'), std::string_view::npos) << v.name;
    EXPECT_LE(v.description.size(), 100u) << v.name << ": keep it to one line";
  }
  EXPECT_EQ(findEnvironmentVariable("LOOM_NOT_A_VARIABLE"), nullptr);
  ASSERT_NE(findEnvironmentVariable("LOOM_CACHE_DIR"), nullptr);
  EXPECT_EQ(findEnvironmentVariable("LOOM_CACHE_DIR")->values, "DIR");
}

// Every LOOM_DUMP and LOOM_DEBUG name has a one-line description; only the options that take
// arguments say which.
TEST(EnvVarsRegistry, DumpAndDebugNamesAreDescribed) {
  for (size_t i = 0; i < size_t(DumpOption::kCount); ++i) {
    auto o = DumpOption(i);
    EXPECT_FALSE(dumpOptionDescription(o).empty()) << dumpOptionName(o);
    EXPECT_EQ(dumpOptionDescription(o).find('\n'), std::string_view::npos);
  }
  EXPECT_EQ(dumpOptionArguments(DumpOption::KernelIr), "pass");
  EXPECT_EQ(dumpOptionArguments(DumpOption::CudaKernel), "");
  for (size_t i = 0; i < size_t(DebugOption::kCount); ++i) {
    EXPECT_FALSE(debugOptionDescription(DebugOption(i)).empty());
  }
}

}  // namespace
}  // namespace loom
