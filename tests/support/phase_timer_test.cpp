// SPDX-License-Identifier: Apache-2.0
// PhaseTimer (LOOM_DUMP=compile_time): one line per mark, renamed subjects, silence when disabled.
#include "loom/support/dump_sink.h"
#include "loom/support/phase_timer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <sstream>
#include <thread>

namespace loom {
namespace {

using ::testing::ContainsRegex;

TEST(PhaseTimer, PrintsOneLinePerMarkWithTheTimeSinceTheLast) {
  std::ostringstream sink;
  {
    ScopedDumpSink into(sink);
    PhaseTimer t(true, "fusion");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    t.mark("segment");
    t.rename("loom_kernel_ab");
    t.mark("codegen");
  }
  const std::string out = sink.str();
  EXPECT_THAT(out, ContainsRegex("^compile_time fusion: segment [0-9]+\\.[0-9]{3} ms\n"));
  EXPECT_THAT(out, ContainsRegex("\ncompile_time loom_kernel_ab: codegen [0-9]+\\.[0-9]{3} ms\n$"));
  // The first phase slept 20 ms; the second did nothing.
  const double first = std::stod(out.substr(out.find("segment ") + 8));
  const double second = std::stod(out.substr(out.find("codegen ") + 8));
  EXPECT_GE(first, 19.0);
  EXPECT_LT(second, first);
}

TEST(PhaseTimer, DisabledPrintsNothing) {
  std::ostringstream sink;
  ScopedDumpSink into(sink);
  PhaseTimer t(false, "fusion");
  t.mark("segment");
  EXPECT_FALSE(t.enabled());
  EXPECT_EQ(sink.str(), "");
}

// The sink is restored when the scope ends, and std::cout is the default.
TEST(DumpSink, ScopedAndRestored) {
  std::ostream& before = dumpSink();
  std::ostringstream a, b;
  {
    ScopedDumpSink outer(a);
    dumpSink() << "one\n";
    {
      ScopedDumpSink inner(b);
      dumpSink() << "two\n";
    }
    dumpSink() << "three\n";
  }
  EXPECT_EQ(a.str(), "one\nthree\n");
  EXPECT_EQ(b.str(), "two\n");
  EXPECT_EQ(&dumpSink(), &before);
  EXPECT_EQ(setDumpSink(nullptr), &std::cout);
  EXPECT_EQ(&dumpSink(), &std::cout);
}

}  // namespace
}  // namespace loom
