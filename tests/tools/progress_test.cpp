// SPDX-License-Identifier: Apache-2.0
// Progress (tools/loom/progress.h): a step reports only once it has run past the threshold, then
// periodically, and says how long it took; a short step prints nothing.
#include "tools/loom/progress.h"

#include <gtest/gtest.h>

#include <sstream>
#include <thread>

namespace loom::tools {
namespace {

using std::chrono::milliseconds;

TEST(Progress, ShortStepPrintsNothing) {
  std::ostringstream out;
  Progress progress(out, milliseconds(2000));
  { Progress::Step step = progress.step("parsing"); }
  EXPECT_EQ(out.str(), "");
}

TEST(Progress, LongStepReportsThenSaysWhenDone) {
  std::ostringstream out;
  Progress progress(out, milliseconds(20), milliseconds(40));
  double seconds = 0;
  {
    Progress::Step step = progress.step("compiling");
    std::this_thread::sleep_for(milliseconds(150));
    seconds = step.end();
  }
  const std::string text = out.str();
  EXPECT_GE(seconds, 0.15);
  EXPECT_EQ(text.rfind("loom: compiling ...\n", 0), 0u) << text;
  EXPECT_NE(text.find("loom: compiling: 0 s so far\n"), std::string::npos) << text;
  EXPECT_NE(text.find("loom: compiling: done in 0."), std::string::npos) << text;
  // Ended once: the destructor after end() prints nothing more.
  EXPECT_EQ(text.find("done in"), text.rfind("done in")) << text;
}

TEST(Progress, ZeroThresholdReportsEveryStepAndNegativeNone) {
  std::ostringstream out;
  Progress every(out, milliseconds(0));
  { Progress::Step step = every.step("checking"); }
  EXPECT_EQ(out.str().rfind("loom: checking ...\nloom: checking: done in ", 0), 0u) << out.str();
  std::ostringstream quiet;
  Progress none(quiet, milliseconds(-1));
  {
    Progress::Step step = none.step("checking");
    std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_EQ(quiet.str(), "");
}

}  // namespace
}  // namespace loom::tools
