// SPDX-License-Identifier: Apache-2.0
// Tests of Loom's two error channels (LOOM_CHECK -> UserError, LOOM_ASSERT -> InternalError).
#include "loom/support/error.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace loom {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// A failed LOOM_CHECK throws UserError whose what() is "file:line: message".
TEST(ErrorTest, CheckThrowsUserErrorWithLocation) {
  const int line = __LINE__ + 2;
  try {
    LOOM_CHECK(1 + 1 == 3, "tensor T", 7, " has rank ", 2, ", expected 3");
    FAIL() << "LOOM_CHECK did not throw";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()), "tests/support/error_test.cpp:" + std::to_string(line) +
                                         ": tensor T7 has rank 2, expected 3");
  }
}

// A passing LOOM_CHECK does not evaluate its message or throw.
TEST(ErrorTest, PassingCheckDoesNothing) {
  int evaluated = 0;
  auto count = [&] { return ++evaluated; };
  EXPECT_NO_THROW(LOOM_CHECK(true, "never ", count()));
  EXPECT_EQ(evaluated, 0);
}

// message() is the text without the "file:line: " prefix.
TEST(ErrorTest, MessageExcludesPrefix) {
  try {
    LOOM_CHECK(false, "bad axis ", -1);
    FAIL() << "LOOM_CHECK did not throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "bad axis -1");
    EXPECT_THAT(std::string(e.what()), StartsWith("tests/support/error_test.cpp:"));
    EXPECT_THAT(e.message(), Not(HasSubstr("error_test.cpp")));
  }
}

// A failed LOOM_ASSERT throws InternalError naming the condition and asking for a bug report.
TEST(ErrorTest, AssertThrowsInternalErrorAskingForReport) {
  const int line = __LINE__ + 3;
  try {
    int ids = 2;
    LOOM_ASSERT(ids == 3, "loop domain lost an ID");
    FAIL() << "LOOM_ASSERT did not throw";
  } catch (const InternalError& e) {
    std::string what = e.what();
    EXPECT_THAT(what, StartsWith("tests/support/error_test.cpp:" + std::to_string(line) + ": "));
    EXPECT_THAT(what, HasSubstr("ids == 3"));
    EXPECT_THAT(what, HasSubstr("loop domain lost an ID"));
    EXPECT_THAT(what, HasSubstr("bug in Loom"));
    EXPECT_THAT(e.message(), HasSubstr("bug in Loom"));
    EXPECT_THAT(e.message(), Not(HasSubstr("error_test.cpp")));
  }
}

// LOOM_ASSERT works without a message.
TEST(ErrorTest, AssertWithoutMessage) {
  try {
    LOOM_ASSERT(1 > 2);
    FAIL() << "LOOM_ASSERT did not throw";
  } catch (const InternalError& e) {
    EXPECT_THAT(e.message(), HasSubstr("internal error (1 > 2)"));
    EXPECT_THAT(e.message(), HasSubstr("bug in Loom"));
  }
}

// User and internal errors are distinct types, both catchable as loom::Error.
TEST(ErrorTest, ChannelsAreDistinctTypes) {
  EXPECT_THROW(LOOM_CHECK(false, "x"), UserError);
  EXPECT_THROW(LOOM_ASSERT(false, "x"), InternalError);
  EXPECT_THROW(LOOM_THROW("x"), UserError);
  EXPECT_THROW(LOOM_UNREACHABLE(), InternalError);
  bool caught_as_internal = false;
  try {
    LOOM_CHECK(false, "x");
  } catch (const InternalError&) {
    caught_as_internal = true;
  } catch (const Error&) {
  }
  EXPECT_FALSE(caught_as_internal);
}

// LOOM_THROW is an unconditional user error carrying its message.
TEST(ErrorTest, ThrowIsUnconditionalUserError) {
  try {
    LOOM_THROW("unknown op '", "foo", "'");
    FAIL() << "LOOM_THROW did not throw";
  } catch (const UserError& e) {
    EXPECT_EQ(e.message(), "unknown op 'foo'");
  }
}

}  // namespace
}  // namespace loom
