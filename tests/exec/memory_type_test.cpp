// SPDX-License-Identifier: Apache-2.0
// Every hand-scheduled example with each intermediate moved to each memory type, inlined as
// printed or not inlined at all: the kernel either matches the reference evaluator (outputs
// poisoned first) or lowering refuses the schedule with a UserError. Never a wrong number, never
// an internal error. Emu (host backend) and gpu executables.
#include <gtest/gtest.h>

#include "backend_available.h"

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "exec/exec_test_util.h"
#include "loom/ir/parser.h"
#include "tools/loom/random_inputs.h"

namespace loom::test {
namespace {

std::filesystem::path scheduledDir() {
  const char* src = std::getenv("LOOM_SOURCE_DIR");
  return std::filesystem::path(src ? src : LOOM_SOURCE_DIR_DEFAULT) / "examples" / "scheduled";
}

std::string readFile(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Variant {
  std::string name;  ///< "softmax: T4 shared ca=0"
  std::string text;
};

// The tensors named on the "inputs:" and "outputs:" lines.
std::set<std::string> boundaryTensors(const std::string& text) {
  std::set<std::string> names;
  std::regex line(R"(^(inputs|outputs):(.*)$)", std::regex::multiline);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), line); it != std::sregex_iterator();
       ++it) {
    std::string rest = (*it)[2];
    std::regex name(R"(T\d+)");
    for (auto n = std::sregex_iterator(rest.begin(), rest.end(), name);
         n != std::sregex_iterator(); ++n) {
      names.insert(n->str());
    }
  }
  return names;
}

// For each intermediate: every memory type, with its compute-at position as printed and with
// none (computed in loops of its own).
std::vector<Variant> variantsOf(const std::string& example, const std::string& text) {
  std::vector<Variant> out;
  std::set<std::string> boundary = boundaryTensors(text);
  std::regex decl(R"(^(T\d+)(\s*:\s*\w+\s+)(local|shared|global)(\s+\[[^\n]*?\])( ca=\d+)?)",
                  std::regex::multiline);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), decl);
       it != std::sregex_iterator(); ++it) {
    const std::smatch& m = *it;
    std::string tv = m[1];
    if (boundary.count(tv)) continue;
    for (const char* memory : {"local", "shared", "global"}) {
      for (bool inlined : {true, false}) {
        if (!inlined && !m[5].matched) continue;  // already not inlined
        if (inlined && memory == m[3].str()) continue;  // the example itself
        std::string replaced = m[1].str() + m[2].str() + memory + m[4].str() +
                               (inlined ? m[5].str() : std::string());
        std::string name = example + ": " + tv + " " + memory + (inlined ? "" : " ca=0");
        out.push_back({name, text.substr(0, size_t(m.position(0))) + replaced +
                                 text.substr(size_t(m.position(0) + m.length(0)))});
      }
    }
  }
  return out;
}

enum class Outcome { Matches, Refused };

// Runs one variant: the outcome, or a test failure (wrong numbers, an internal error).
std::optional<Outcome> runVariant(const Variant& v) {
  std::unique_ptr<ir::Fusion> fusion;
  try {
    fusion = ir::parseFusion(v.text);
  } catch (const UserError& e) {
    ADD_FAILURE() << v.name << ": the variant does not parse: " << e.what();
    return std::nullopt;
  }
  std::unique_ptr<ir::Fusion> reference = fusion->clone();
  // The symbolic sizes of the examples that have them (pointwise_bias: s4 is the bias of s1).
  std::vector<eval::Argument> inputs =
      tools::randomInputs(*fusion, {{"s0", "6"}, {"s1", "300"}, {"s4", "300"}}, 7);
  exec::KernelExecutor ke;
  try {
    ke.compile(*fusion, testBackend(), {.poisonOutputs = true});
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("lowering"), std::string::npos)
        << v.name << ": refused, but not by lowering: " << e.what();
    return Outcome::Refused;
  }
  std::vector<Tensor> outs = ke.run(inputs);
  std::vector<Tensor> expected = eval::evaluateFusion(*reference, inputs);
  EXPECT_EQ(outs.size(), expected.size()) << v.name;
  for (size_t i = 0; i < outs.size() && i < expected.size(); ++i) {
    auto tol = eval::defaultTolerance(expected[i].dtype(), 5000);
    auto msg = eval::expectClose(outs[i].contiguous(), expected[i], tol,
                                 v.name + ", output " + std::to_string(i));
    EXPECT_FALSE(msg.has_value()) << *msg << "\n" << ke.generated().kernelText;
    if (msg) return std::nullopt;
  }
  return Outcome::Matches;
}

TEST(MemoryTypeVariants, EachRunsRightOrIsRefused) {
  if (auto why = test::backendUnavailable(testBackend())) GTEST_SKIP() << *why;
  std::vector<Variant> all;
  for (const auto& entry : std::filesystem::directory_iterator(scheduledDir())) {
    if (entry.path().extension() != ".fus") continue;
    std::vector<Variant> v = variantsOf(entry.path().stem().string(), readFile(entry.path()));
    all.insert(all.end(), v.begin(), v.end());
  }
  ASSERT_GE(all.size(), 40u) << "examples/scheduled lost its intermediates";
  int matches = 0;
  int refused = 0;
  std::string refusals;
  for (const Variant& v : all) {
    SCOPED_TRACE(v.name);
    std::optional<Outcome> o = runVariant(v);
    if (o == Outcome::Matches) ++matches;
    if (o == Outcome::Refused) {
      ++refused;
      refusals += "  " + v.name + "\n";
    }
  }
  std::cout << all.size() << " variants: " << matches << " match the reference, " << refused
            << " refused by lowering:\n"
            << refusals;
  // Moving an intermediate of these schedules to shared or global memory, inlined as printed,
  // keeps every read inside the block that wrote it: most variants must run, not be refused.
  EXPECT_GT(matches, refused);
}

// A reduction whose thread/block-parallel iteration loops sit inside its reduction loop (sum over
// dim 0 with the reduced dim outermost): the result, written after the reduction loop, is
// indexed by the thread's and block's own indices. It was an internal error ("no index").
TEST(MemoryTypeVariants, ParallelLoopsInsideTheReductionLoop) {
  if (auto why = test::backendUnavailable(testBackend())) GTEST_SKIP() << *why;
  std::string text = readFile(scheduledDir() / "sum_dim0.fus");
  const std::string loop = "loop       [i6{s3, BIDx}, i7{128, TIDx}, r4]";
  auto at = text.find(loop);
  ASSERT_NE(at, std::string::npos) << "sum_dim0.fus changed its schedule";
  text.replace(at, loop.size(), "loop       [r4, i6{s3, BIDx}, i7{128, TIDx}]");
  EXPECT_EQ(runVariant({"sum_dim0: reduction loop outermost", text}), Outcome::Matches);
}

}  // namespace
}  // namespace loom::test
