// SPDX-License-Identifier: Apache-2.0
// LOOM_DUMP=launch_params on the host backend: each launch is described on the dump sink, not on
// stderr. Its own executable, registered with LOOM_DUMP set (the option is read once per
// process).
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "backend/host_test_util.h"
#include "loom/support/dump_sink.h"
#include "loom/support/options.h"

namespace loom::backend {
namespace {

TEST(HostDump, LaunchParamsGoToTheDumpSink) {
  ASSERT_TRUE(DumpOptions::fromEnvironment().has(DumpOption::LaunchParams))
      << "run through ctest, which sets LOOM_DUMP=launch_params";
  const char* src = R"(
extern "C" __global__ void fill(int* out) {
  out[blockIdx.x * blockDim.x + threadIdx.x] = 7;
}
)";
  auto m = testing::loadKernel(src, "fill");
  std::vector<int> out(2 * 32, -1);
  int* o = out.data();
  void* args[] = {&o};
  std::ostringstream dumps;
  ::testing::internal::CaptureStderr();
  {
    ScopedDumpSink into(dumps);
    m->launch({2, 3, 4}, {32}, 48, args);
    HostLaunchOptions coop;
    coop.cooperative = true;
    m->launch({1}, {32}, 0, args, coop);
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(dumps.str(),
            "[loom launch_params] host kernel fill grid (2,3,4) block (32,1,1) dynamic shared 48 "
            "bytes\n"
            "[loom launch_params] host kernel fill grid (1,1,1) block (32,1,1) dynamic shared 0 "
            "bytes cooperative\n");
  EXPECT_EQ(err, "");
  EXPECT_EQ(out[1 * 32 + 31], 7);
}

}  // namespace
}  // namespace loom::backend
