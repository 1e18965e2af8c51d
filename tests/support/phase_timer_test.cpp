// SPDX-License-Identifier: Apache-2.0
// PhaseTimer (LOOM_DUMP=compile_time): one line per mark, renamed subjects, silence when disabled.
#include "loom/support/phase_timer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace loom {
namespace {

using ::testing::ContainsRegex;

TEST(PhaseTimer, PrintsOneLinePerMarkWithTheTimeSinceTheLast) {
  testing::internal::CaptureStderr();
  PhaseTimer t(true, "fusion");
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  t.mark("segment");
  t.rename("loom_kernel_ab");
  t.mark("codegen");
  const std::string out = testing::internal::GetCapturedStderr();
  EXPECT_THAT(out, ContainsRegex("^compile_time fusion: segment [0-9]+\\.[0-9]{3} ms\n"));
  EXPECT_THAT(out, ContainsRegex("\ncompile_time loom_kernel_ab: codegen [0-9]+\\.[0-9]{3} ms\n$"));
  // The first phase slept 20 ms; the second did nothing.
  const double first = std::stod(out.substr(out.find("segment ") + 8));
  const double second = std::stod(out.substr(out.find("codegen ") + 8));
  EXPECT_GE(first, 19.0);
  EXPECT_LT(second, first);
}

TEST(PhaseTimer, DisabledPrintsNothing) {
  testing::internal::CaptureStderr();
  PhaseTimer t(false, "fusion");
  t.mark("segment");
  EXPECT_FALSE(t.enabled());
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

}  // namespace
}  // namespace loom
