// SPDX-License-Identifier: Apache-2.0
// The .fus text form on fusions built with the ops layer, and on every file in examples/.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ir/text_test_util.h"
#include "loom/ops/ops.h"

namespace loom::ir {
namespace {

TensorView* input(Fusion& f, std::vector<int64_t> shape, DataType dtype = DataType::Float32) {
  TensorView* tv = ops::TensorBuilder().shape(std::move(shape)).dtype(dtype).build();
  f.addInput(tv);
  return tv;
}

// Composite ops (layer_norm with Welford, softmax) round-trip through the text form.
TEST(TextOpsTest, CompositeRoundTrip) {
  Fusion f;
  FusionGuard g(&f);
  auto* x = input(f, {-1, 64}, DataType::BFloat16);
  auto* w = input(f, {64}, DataType::BFloat16);
  auto r = ops::layerNorm(x, 1, w, nullptr);
  f.addOutput(r.y);
  f.addOutput(ops::softmax(x, -1));
  test::expectRoundTrip(f);
}

// Reshape, permute and expand built by ops keep their root domains and expanded extents.
TEST(TextOpsTest, ShapeOpsRoundTrip) {
  Fusion f;
  FusionGuard g(&f);
  auto* x = input(f, {4, 6, 8});
  auto* y = ops::reshape(x, {24, -1});
  auto* z = ops::permute(y, {1, 0});
  auto* b = input(f, {1, 8});
  auto* e = ops::expand(b, {5, 8});
  f.addOutput(z);
  f.addOutput(e);
  test::expectRoundTrip(f);
}

// A scheduled and sharded ops fusion (merge, split, TIDx/BIDx, outer DID split in allocation).
TEST(TextOpsTest, ScheduledRoundTrip) {
  Fusion f;
  FusionGuard g(&f);
  auto* x = input(f, {-1, 1024});
  auto* y = ops::sum(ops::exp(x), {1});
  f.addOutput(y);
  for (TensorView* tv : f.allTvs()) {
    tv->setDeviceMesh(DeviceMesh::arange(2));
    tv->outerSplit(0, 2);
    tv->axis(0)->parallelize(ParallelType::DIDx);
    tv->setAllocationDomain(tv->loop());
    tv->split(-1, 128);
    tv->axis(-1)->parallelize(ParallelType::TIDx);
  }
  test::expectRoundTrip(f);
}

std::string readFile(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Every example parses, prints exactly as stored (after its two comment lines) and round-trips;
// regenerate with tools/regen-examples.sh when the ops or the printer change.
TEST(TextOpsTest, ExamplesAreCanonical) {
  const char* src = std::getenv("LOOM_SOURCE_DIR");
  std::filesystem::path dir = std::filesystem::path(src ? src : LOOM_SOURCE_DIR_DEFAULT) /
                              "examples";
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".fus") continue;
    ++count;
    std::string text = readFile(entry.path());
    auto f = parseFusion(text, entry.path().string());
    std::string printed = printFusion(*f);
    size_t body = text.find("# Loom fusion");
    ASSERT_NE(body, std::string::npos) << entry.path();
    EXPECT_EQ(text.substr(body), printed) << entry.path() << " is stale: run tools/regen-examples.sh";
    test::expectRoundTrip(*f);
  }
  EXPECT_GE(count, 13);
}

// Every libFuzzer regression input (tests/libfuzzer/regressions) gives the outcome its first line
// states: "# expect: parses", or "# expect error: LINE:COL message" (a UserError there).
TEST(TextOpsTest, LibfuzzerRegressionsGiveTheirOutcome) {
  const char* src = std::getenv("LOOM_SOURCE_DIR");
  std::filesystem::path dir = std::filesystem::path(src ? src : LOOM_SOURCE_DIR_DEFAULT) /
                              "tests" / "libfuzzer" / "regressions";
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".fus") continue;
    ++count;
    const std::string text = readFile(entry.path());
    const std::string first = text.substr(0, text.find('\n'));
    const std::string name = entry.path().filename().string();
    if (first == "# expect: parses") {
      EXPECT_NO_THROW(parseFusion(text, name)) << name;
      continue;
    }
    const std::string tag = "# expect error: ";
    ASSERT_EQ(first.rfind(tag, 0), 0u) << name << " does not state its outcome on its first line";
    const std::string rest = first.substr(tag.size());
    const std::string location = rest.substr(0, rest.find(' '));
    const std::string message = rest.substr(rest.find(' ') + 1);
    try {
      parseFusion(text, name);
      ADD_FAILURE() << name << " parsed; expected: " << message;
    } catch (const UserError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind(name + ":" + location + ": ", 0), 0u) << what;
      EXPECT_NE(what.find(message), std::string::npos) << what;
    }
  }
  EXPECT_GE(count, 8);
}

}  // namespace
}  // namespace loom::ir
