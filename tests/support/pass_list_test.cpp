// SPDX-License-Identifier: Apache-2.0
// PassList (support/pass_list.h): passes run in order, runUntil stops after the named pass,
// hooks see every pass, optional passes can be switched off, required ones and unknown names
// cannot.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "loom/support/error.h"
#include "loom/support/options.h"
#include "loom/support/pass_list.h"

namespace loom {
namespace {

// The unit is a trace of the passes that ran; the context counts them.
using Trace = std::vector<std::string>;
struct Count {
  int runs = 0;
};

bool first(Trace& t, Count& c) {
  t.push_back("first");
  ++c.runs;
  return true;
}
bool second(Trace& t, Count& c) {
  t.push_back("second");
  ++c.runs;
  return false;  // changed nothing
}
bool third(Trace& t, Count& c) {
  t.push_back("third");
  ++c.runs;
  return true;
}

const PassList<Trace, Count>& passes() {
  static const PassList<Trace, Count> list(
      "test", {{"first", first}, {"second", second, /*optional=*/true}, {"third", third}});
  return list;
}

// Every pass runs in order; the report says which ran and which changed the unit; the dump hook
// sees the changing passes, the verify hook all of them.
TEST(PassList, RunsInOrderWithHooks) {
  Trace t;
  Count c;
  std::vector<std::string> dumped, verified;
  PassHooks<Trace> hooks;
  hooks.dumpAfter = [&](const Trace&, std::string_view p) { dumped.emplace_back(p); };
  hooks.verifyAfter = [&](const Trace&, std::string_view p) { verified.emplace_back(p); };
  PassReport r = passes().run(t, c, hooks);
  EXPECT_EQ(t, (Trace{"first", "second", "third"}));
  EXPECT_EQ(r.ran.size(), 3u);
  EXPECT_EQ(r.changed, (std::vector<std::string_view>{"first", "third"}));
  EXPECT_EQ(dumped, (std::vector<std::string>{"first", "third"}));
  EXPECT_EQ(verified, (std::vector<std::string>{"first", "second", "third"}));
  EXPECT_EQ(r.runsOf("second"), 1);
}

// runUntil stops after the named pass; an unknown name is a UserError listing the passes.
TEST(PassList, RunUntil) {
  Trace t;
  Count c;
  passes().runUntil(t, c, "second");
  EXPECT_EQ(t, (Trace{"first", "second"}));
  try {
    passes().runUntil(t, c, "fourth");
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("no test pass named 'fourth' (the passes: first, "
                                         "second, third)"),
              std::string::npos)
        << e.what();
  }
}

// An optional pass can be switched off (also as runUntil's last pass); a required one cannot.
TEST(PassList, DisablingPasses) {
  Trace t;
  Count c;
  PassHooks<Trace> hooks;
  hooks.disabled = {"second"};
  PassReport r = passes().run(t, c, hooks);
  EXPECT_EQ(t, (Trace{"first", "third"}));
  EXPECT_EQ(r.runsOf("second"), 0);
  t.clear();
  passes().runUntil(t, c, "second", hooks);
  EXPECT_EQ(t, (Trace{"first"}));
  hooks.disabled = {"third"};
  try {
    passes().run(t, c, hooks);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("the test pass 'third' cannot be disabled"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("optional test passes: second"), std::string::npos)
        << e.what();
  }
  // A name of no pass of this list is another list's business (LOOM_DISABLE is shared).
  hooks.disabled = {"not_here"};
  EXPECT_NO_THROW(passes().run(t, c, hooks));
}

// LOOM_DISABLE's form: names separated by commas, blanks ignored.
TEST(PassList, ParseDisabledPasses) {
  EXPECT_EQ(parseDisabledPasses(" simplify, ,hoist_indices "),
            (std::unordered_set<std::string>{"simplify", "hoist_indices"}));
  EXPECT_TRUE(parseDisabledPasses("").empty());
}

}  // namespace
}  // namespace loom
