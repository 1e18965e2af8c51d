// SPDX-License-Identifier: Apache-2.0
// support/tool_identity.h: file stamps change with a file's size and modification time; a
// remembered probe runs once per identity, is read back by later calls (later processes), and
// runs again for another identity, a damaged record, an answer `valid` refuses, or a folder
// others may write.
#include "loom/support/tool_identity.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "loom/support/private_dir.h"

namespace loom {
namespace {

namespace fs = std::filesystem;

class ToolIdentity : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = *makePrivateTempDirectory(fs::temp_directory_path(), "loom-tool-identity-test-");
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string probeOf(const std::string& identity, int& calls, bool* probed,
                      const std::function<bool(const std::string&)>& valid = {}) {
    return rememberedProbe(
        dir_ / "ids", "tool", identity,
        [&] {
          ++calls;
          return "answer " + std::to_string(calls);
        },
        probed, valid);
  }
  fs::path dir_;
};

TEST_F(ToolIdentity, StampFollowsSizeAndTime) {
  const fs::path f = dir_ / "lib.so";
  std::ofstream(f) << "abc";
  const std::optional<std::string> a = fileStamp(f);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->rfind(fs::canonical(f).string(), 0), 0u) << *a;
  EXPECT_EQ(fileStamp(f), a);
  std::ofstream(f, std::ios::app) << "d";
  const std::optional<std::string> b = fileStamp(f);
  EXPECT_NE(b, a);
  fs::last_write_time(f, fs::last_write_time(f) + std::chrono::seconds(3));
  EXPECT_NE(fileStamp(f), b);
  // A symbolic link is stamped as the file it names.
  fs::create_symlink(f, dir_ / "link.so");
  EXPECT_EQ(fileStamp(dir_ / "link.so"), fileStamp(f));
  EXPECT_EQ(fileStamp(dir_ / "absent"), std::nullopt);
}

TEST_F(ToolIdentity, ProbesOncePerIdentity) {
  int calls = 0;
  bool probed = false;
  EXPECT_EQ(probeOf("tool at /a 10 20 30", calls, &probed), "answer 1");
  EXPECT_TRUE(probed);
  EXPECT_EQ(probeOf("tool at /a 10 20 30", calls, &probed), "answer 1");
  EXPECT_FALSE(probed);
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(privateDirectoryProblem(dir_ / "ids").has_value());
  EXPECT_EQ(probeOf("tool at /a 11 20 30", calls, &probed), "answer 2");
  EXPECT_TRUE(probed);
  // An answer the caller no longer accepts (the file it names changed) is probed again.
  EXPECT_EQ(
      probeOf("tool at /a 11 20 30", calls, &probed, [](const std::string&) { return false; }),
      "answer 3");
  EXPECT_TRUE(probed);
  EXPECT_EQ(probeOf("tool at /a 11 20 30", calls, &probed), "answer 3");
  EXPECT_FALSE(probed);
}

TEST_F(ToolIdentity, DamagedRecordOrOpenFolderIsProbedAgain) {
  int calls = 0;
  bool probed = false;
  (void)probeOf("id", calls, &probed);
  ASSERT_EQ(calls, 1);
  for (const auto& e : fs::directory_iterator(dir_ / "ids")) {
    std::string bytes;
    {
      std::ifstream in(e.path(), std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), {});
    }
    bytes.back() ^= 1;  // the answer's last byte: the checksum no longer matches
    std::ofstream(e.path(), std::ios::binary | std::ios::trunc) << bytes;
  }
  EXPECT_EQ(probeOf("id", calls, &probed), "answer 2");
  EXPECT_TRUE(probed);
  EXPECT_EQ(probeOf("id", calls, &probed), "answer 2");
  EXPECT_FALSE(probed);
  // A folder others may write is not trusted: every call probes, nothing is stored there.
  fs::permissions(dir_ / "ids", fs::perms::others_write, fs::perm_options::add);
  EXPECT_EQ(probeOf("id", calls, &probed), "answer 3");
  EXPECT_TRUE(probed);
  EXPECT_EQ(probeOf("id", calls, &probed), "answer 4");
}

TEST_F(ToolIdentity, ProbeErrorsStoreNothing) {
  EXPECT_THROW(rememberedProbe(dir_ / "ids", "tool", "id",
                               []() -> std::string { throw std::runtime_error("no tool"); }),
               std::runtime_error);
  int calls = 0;
  bool probed = false;
  EXPECT_EQ(probeOf("id", calls, &probed), "answer 1");
  EXPECT_TRUE(probed);
}

}  // namespace
}  // namespace loom
