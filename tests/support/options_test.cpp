// SPDX-License-Identifier: Apache-2.0
// Tests of LOOM_DUMP and LOOM_DEBUG parsing (DumpOptions, DebugOptions).
#include "loom/support/options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "loom/support/error.h"

namespace loom {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::string parseError(std::string_view spec) {
  try {
    DumpOptions::parse(spec);
  } catch (const UserError& e) {
    return e.message();
  }
  ADD_FAILURE() << "parse('" << spec << "') did not throw";
  return "";
}

// Plain and parenthesized options are both enabled; arguments are kept in order.
TEST(OptionsTest, ParsesNamesAndArguments) {
  auto o = DumpOptions::parse("fusion_ir,kernel_ir(a,b)");
  EXPECT_TRUE(o.has(DumpOption::FusionIr));
  EXPECT_TRUE(o.has(DumpOption::KernelIr));
  EXPECT_FALSE(o.has(DumpOption::CudaKernel));
  EXPECT_THAT(o.args(DumpOption::FusionIr), IsEmpty());
  EXPECT_THAT(o.args(DumpOption::KernelIr), ElementsAre("a", "b"));
}

// Whitespace around names and arguments is ignored, and empty items are skipped.
TEST(OptionsTest, IgnoresWhitespaceAndEmptyItems) {
  auto o = DumpOptions::parse(" cuda_kernel , kernel_ir( insert_syncs , x ),,");
  EXPECT_TRUE(o.has(DumpOption::CudaKernel));
  EXPECT_THAT(o.args(DumpOption::KernelIr), ElementsAre("insert_syncs", "x"));
}

// hasWithArg is true for an option without arguments and for a listed argument only.
TEST(OptionsTest, HasWithArg) {
  auto o = DumpOptions::parse("fusion_ir,kernel_ir(a,b)");
  EXPECT_TRUE(o.hasWithArg(DumpOption::FusionIr, "anything"));
  EXPECT_TRUE(o.hasWithArg(DumpOption::KernelIr, "a"));
  EXPECT_TRUE(o.hasWithArg(DumpOption::KernelIr, "b"));
  EXPECT_FALSE(o.hasWithArg(DumpOption::KernelIr, "c"));
  EXPECT_FALSE(o.hasWithArg(DumpOption::CudaKernel, "a"));
}

// The empty string (and only whitespace) enables nothing.
TEST(OptionsTest, EmptyStringEnablesNothing) {
  for (std::string_view spec : {"", "   "}) {
    auto o = DumpOptions::parse(spec);
    for (size_t i = 0; i < size_t(DumpOption::kCount); ++i) {
      EXPECT_FALSE(o.has(DumpOption(i))) << dumpOptionName(DumpOption(i));
    }
  }
}

// Every option name round-trips through dumpOptionName and parse.
TEST(OptionsTest, EveryNameParses) {
  for (size_t i = 0; i < size_t(DumpOption::kCount); ++i) {
    auto option = DumpOption(i);
    EXPECT_TRUE(DumpOptions::parse(dumpOptionName(option)).has(option)) << dumpOptionName(option);
  }
}

// An unknown option is a user error that names it and lists every valid option.
TEST(OptionsTest, UnknownOptionListsValidOnes) {
  std::string msg = parseError("fusion_ir,kernal_ir");
  EXPECT_THAT(msg, HasSubstr("unknown option 'kernal_ir'"));
  EXPECT_THAT(msg, HasSubstr("valid options are"));
  for (size_t i = 0; i < size_t(DumpOption::kCount); ++i) {
    EXPECT_THAT(msg, HasSubstr(std::string(dumpOptionName(DumpOption(i)))));
  }
}

// A missing ')' is a user error.
TEST(OptionsTest, MissingCloseParenIsError) {
  EXPECT_THAT(parseError("kernel_ir(a,b"), HasSubstr("missing ')'"));
}

// A ')' without its '(' is a user error.
TEST(OptionsTest, StrayCloseParenIsError) {
  EXPECT_THAT(parseError("kernel_ir)"), HasSubstr("unbalanced ')'"));
}

// Text after the closing parenthesis is a user error.
TEST(OptionsTest, TextAfterArgumentsIsError) {
  EXPECT_THAT(parseError("kernel_ir(a)x"), HasSubstr("expected ')' at the end"));
}

// enable() adds an option programmatically, replacing earlier arguments.
TEST(OptionsTest, EnableReplacesArguments) {
  auto o = DumpOptions::parse("kernel_ir(a)");
  o.enable(DumpOption::KernelIr, {"z"});
  EXPECT_THAT(o.args(DumpOption::KernelIr), ElementsAre("z"));
}

std::string debugParseError(std::string_view spec) {
  try {
    DebugOptions::parse(spec);
  } catch (const UserError& e) {
    return e.message();
  }
  ADD_FAILURE() << "DebugOptions::parse('" << spec << "') did not throw";
  return "";
}

// LOOM_DEBUG: every name round-trips, whitespace and empty items are ignored, nothing is on by
// default.
TEST(DebugOptionsTest, EveryNameParsesAlone) {
  for (size_t i = 0; i < size_t(DebugOption::kCount); ++i) {
    auto option = DebugOption(i);
    auto o = DebugOptions::parse(" ," + std::string(debugOptionName(option)) + " ,");
    for (size_t j = 0; j < size_t(DebugOption::kCount); ++j) {
      EXPECT_EQ(o.has(DebugOption(j)), i == j) << debugOptionName(option);
    }
    EXPECT_FALSE(DebugOptions().has(option));
  }
  auto both = DebugOptions::parse("verify_kernel_ir,verify_ir");
  EXPECT_TRUE(both.has(DebugOption::VerifyKernelIr));
  EXPECT_TRUE(both.has(DebugOption::VerifyIr));
}

// LOOM_DEBUG: an unknown name is a user error listing the valid ones; arguments are refused.
TEST(DebugOptionsTest, UnknownNameAndArgumentsAreErrors) {
  std::string msg = debugParseError("verify_ir,verify_kernel");
  EXPECT_THAT(msg, HasSubstr("LOOM_DEBUG: unknown option 'verify_kernel'"));
  EXPECT_THAT(msg, HasSubstr("valid options are: verify_kernel_ir, verify_ir"));
  EXPECT_THAT(debugParseError("verify_ir(x)"), HasSubstr("debug options take no arguments"));
}

// "help" is a name only where the caller asks for it (the environment readers), and then
// enables nothing; elsewhere it is unknown, and the error says LOOM_DUMP=help lists the names.
TEST(OptionsTest, HelpIsANameOnlyWhenAskedFor) {
  bool help = false;
  auto o = DumpOptions::parse("help, cuda_kernel", &help);
  EXPECT_TRUE(help);
  EXPECT_TRUE(o.has(DumpOption::CudaKernel));
  EXPECT_FALSE(o.has(DumpOption::FusionIr));
  DumpOptions::parse("cuda_kernel", &help);
  EXPECT_FALSE(help);
  EXPECT_THAT(parseError("help"), HasSubstr("LOOM_DUMP=help says what each prints"));
  DebugOptions::parse("verify_ir,help", &help);
  EXPECT_TRUE(help);
  EXPECT_THAT(debugParseError("help"), HasSubstr("unknown option 'help'"));
}

// The help lists every name, with its arguments and its line, one per line.
TEST(OptionsTest, HelpListsEveryName) {
  const std::string dump = dumpOptionsHelp();
  for (size_t i = 0; i < size_t(DumpOption::kCount); ++i) {
    EXPECT_THAT(dump, HasSubstr("  " + std::string(dumpOptionName(DumpOption(i)))));
    EXPECT_THAT(dump, HasSubstr(std::string(dumpOptionDescription(DumpOption(i)))));
  }
  EXPECT_THAT(dump, HasSubstr("  kernel_ir(pass) "));
  EXPECT_EQ(std::count(dump.begin(), dump.end(), '\n'), int(DumpOption::kCount));
  const std::string debug = debugOptionsHelp();
  for (size_t i = 0; i < size_t(DebugOption::kCount); ++i) {
    EXPECT_THAT(debug, HasSubstr("  " + std::string(debugOptionName(DebugOption(i)))));
  }
}

// merge adds options; an option on both sides keeps the union of the arguments, or none (every
// pass) when one side gave none.
TEST(OptionsTest, MergeUnitesOptionsAndArguments) {
  auto a = DumpOptions::parse("kernel_ir(x),fusion_ir(input)");
  a.merge(DumpOptions::parse("kernel_ir(y,x),cuda_kernel,fusion_ir"));
  EXPECT_THAT(a.args(DumpOption::KernelIr), ElementsAre("x", "y"));
  EXPECT_TRUE(a.has(DumpOption::CudaKernel));
  EXPECT_THAT(a.args(DumpOption::FusionIr), IsEmpty());
  EXPECT_TRUE(a.hasWithArg(DumpOption::FusionIr, "any_pass"));
  DebugOptions d;
  d.merge(DebugOptions::parse("verify_ir"));
  EXPECT_TRUE(d.has(DebugOption::VerifyIr));
  EXPECT_FALSE(d.has(DebugOption::VerifyKernelIr));
}

// A ScopedOptions adds to what the environment readers return on its thread for its lifetime,
// nests, and is not seen by other threads.
TEST(OptionsTest, ScopedOptionsAddToTheEnvironmentOnThisThread) {
  const bool env_cuda = DumpOptions::fromEnvironment().has(DumpOption::CudaKernel);
  const bool env_segments = DumpOptions::fromEnvironment().has(DumpOption::Segments);
  const size_t env_disabled = disabledPassesFromEnvironment().size();
  ASSERT_FALSE(env_cuda || env_segments) << "run without LOOM_DUMP";
  ASSERT_EQ(disabledPassesFromEnvironment().count("simplify"), 0u) << "run without LOOM_DISABLE";
  {
    ScopedOptions outer(DumpOptions::parse("cuda_kernel"), DebugOptions::parse("verify_ir"),
                        {"simplify"});
    EXPECT_TRUE(DumpOptions::fromEnvironment().has(DumpOption::CudaKernel));
    EXPECT_TRUE(DebugOptions::fromEnvironment().has(DebugOption::VerifyIr));
    EXPECT_EQ(disabledPassesFromEnvironment().count("simplify"), 1u);
    {
      ScopedOptions inner(DumpOptions::parse("segments"), DebugOptions(), {"hoist_indices"});
      EXPECT_TRUE(DumpOptions::fromEnvironment().has(DumpOption::CudaKernel));
      EXPECT_TRUE(DumpOptions::fromEnvironment().has(DumpOption::Segments));
      EXPECT_EQ(disabledPassesFromEnvironment().count("simplify"), 1u);
      EXPECT_EQ(disabledPassesFromEnvironment().count("hoist_indices"), 1u);
    }
    EXPECT_FALSE(DumpOptions::fromEnvironment().has(DumpOption::Segments));
    bool other_thread_sees = true;
    std::thread([&] {
      other_thread_sees = DumpOptions::fromEnvironment().has(DumpOption::CudaKernel) ||
                          disabledPassesFromEnvironment().count("simplify") != 0;
    }).join();
    EXPECT_FALSE(other_thread_sees);
  }
  EXPECT_FALSE(DumpOptions::fromEnvironment().has(DumpOption::CudaKernel));
  EXPECT_EQ(disabledPassesFromEnvironment().size(), env_disabled);
}

}  // namespace
}  // namespace loom
