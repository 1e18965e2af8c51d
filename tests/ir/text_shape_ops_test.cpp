// SPDX-License-Identifier: Apache-2.0
// The .fus text form of slice, pad, cat, full, iota, Resize and dynamic reshapes: exact round
// trips, the printed forms, and parser errors with their locations.
#include <gtest/gtest.h>

#include "ir/text_test_util.h"
#include "loom/ops/ops.h"

namespace loom::ir {
namespace {

TensorView* input(Fusion& f, std::vector<int64_t> shape, DataType dtype = DataType::Float32) {
  TensorView* tv = ops::TensorBuilder().shape(std::move(shape)).dtype(dtype).build();
  f.addInput(tv);
  return tv;
}

Scalar* scalarInput(Fusion& f) {
  auto* s = IrBuilder::symbolic(DataType::Int64);
  f.addInput(s);
  return s;
}

#define EXPECT_HAS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

// The parse error message of `text`, or "" when it parses.
using test::parseError;

void expectError(const std::string& text, const std::string& location, const std::string& message) {
  std::string err = parseError(text);
  EXPECT_EQ(err.rfind("bad.fus:" + location + ": ", 0), 0u) << err;
  EXPECT_NE(err.find(message), std::string::npos) << err;
}

// slice (constant and Scalar bounds) prints its Resize lines and `slice(T)`, and round-trips.
TEST(TextShapeOpsTest, SliceRoundTrip) {
  Fusion f;
  FusionGuard g(&f);
  auto* x = input(f, {8, -1});
  auto* start = scalarInput(f);
  f.addOutput(ops::slice(x, {1, start}, {-2, x->logical()[1]->extent()}));
  test::expectRoundTrip(f);
  std::string text = printFusion(f);
  EXPECT_HAS(text, " = resize(i");
  EXPECT_HAS(text, ", -1, -2)");
  EXPECT_HAS(text, " = slice(T0)");
}

// pad prints its value as a keyword argument of the tensor's dtype, and round-trips.
TEST(TextShapeOpsTest, PadRoundTrip) {
  Fusion f;
  FusionGuard g(&f);
  auto* x = input(f, {3, 4}, DataType::BFloat16);
  auto* w = scalarInput(f);
  f.addOutput(ops::pad(x, {1, -1, w, 0}, 0.5));
  test::expectRoundTrip(f);
  EXPECT_HAS(printFusion(f), " = pad(T0, value=bf16(0.5))");
}

// cat of three inputs prints three pads and `cat(..., dim=1)`, and round-trips.
TEST(TextShapeOpsTest, CatRoundTrip) {
  Fusion f;
  FusionGuard g(&f);
  auto* a = input(f, {2, 3});
  auto* b = input(f, {2, -1});
  auto* c = input(f, {2, 1}, DataType::Int32);
  f.addOutput(ops::cat({a, b, c}, 1));
  test::expectRoundTrip(f);
  std::string text = printFusion(f);
  EXPECT_HAS(text, " = cat(T");
  EXPECT_HAS(text, ", dim=1)");
}

// full and iota (and arange with a Scalar end) print their scalars as keyword arguments.
TEST(TextShapeOpsTest, FactoriesRoundTrip) {
  Fusion f;
  FusionGuard g(&f);
  auto* n = scalarInput(f);
  f.addOutput(ops::full({n, 1, 3}, 1.0, DataType::Float64));
  f.addOutput(ops::iota(4));
  f.addOutput(ops::arange(0.5, n, 0.25, DataType::Float32));
  test::expectRoundTrip(f);
  std::string text = printFusion(f);
  EXPECT_HAS(text, " = full(value=1.0)");
  EXPECT_HAS(text, " = iota(start=0, step=1)");
  EXPECT_HAS(text, " = iota(start=f32(0.5), step=f32(0.25))");
}

// A dynamic reshape prints Symbolic logical IDs not derived from its root, and round-trips;
// so does a Symbolic expand.
TEST(TextShapeOpsTest, DynamicReshapeRoundTrip) {
  Fusion f;
  FusionGuard g(&f);
  auto* x = input(f, {-1, 6});
  auto* n = scalarInput(f);
  auto* r = ops::reshape(x, {n, -1, 2});
  f.addOutput(ops::expand(ops::reshape(r, {-1, 1}), {-1, n}));
  f.addOutput(r);
  test::expectRoundTrip(f);
  std::string text = printFusion(f);
  EXPECT_HAS(text, "[u");
  EXPECT_HAS(text, " = reshape(T0)");
}

// A hand-written resize line and dynamic reshape build the expected nodes.
TEST(TextShapeOpsTest, HandWritten) {
  auto f = parseFusion(
      "inputs: T0, s0\noutputs: T1, T2\n"
      "s0 : i64\n"
      "T0 : f32 global [i0{8}]\n"
      "T1 : f32 global [i2{5, rf}]\n"
      "     root [i1{8}]\n"
      "     i2 = resize(i1, 1, -4)\n"
      "T2 : f32 global [u4{s0}, i5{2}]\n"
      "     root [i3{8}]\n"
      "T1 = pad(T0, value=f32(0))\n"
      "T2 = reshape(T0)\n");
  auto* t1 = f->outputs()[0]->as<TensorView>();
  auto* resize = t1->logical()[0]->definition()->as<Resize>();
  EXPECT_EQ(resize->in(), t1->root()[0]);
  EXPECT_EQ(resize->left()->constInt(), 1);
  EXPECT_EQ(resize->right()->constInt(), -4);
  auto* t2 = f->outputs()[1]->as<TensorView>();
  EXPECT_TRUE(t2->definition()->as<ReshapeOp>()->isDynamic());
  EXPECT_TRUE(t2->logical()[0]->isSymbolic());
}

// The conditions a fusion puts on its run's sizes (ExtentRequirement: broadcast_in_dim's sizes of
// run-time dims, the sharding passes' divisibility) print as `require` lines with their message
// in quotes (a quote and a backslash escaped) and parse back the same: a fusion rebuilt from its
// text checks what the original checks.
TEST(TextShapeOpsTest, ExtentRequirementsRoundTrip) {
  Fusion f;
  FusionGuard g(&f);
  auto* x = input(f, {-1, -1});
  TensorView* b = ops::broadcastInDim(x, {4, 7, 3}, {0, 1});
  f.addOutput(b);
  Scalar* e0 = x->logical()[0]->extent();
  f.addExtentRequirement({e0, 4, e0, R"(a "quoted" word and a \ backslash)"});
  ASSERT_EQ(f.extentRequirements().size(), 3u);
  test::expectRoundTrip(f);
  const std::string text = printFusion(f);
  const std::string to = "broadcast_in_dim to " + b->toString() + ": dimension ";
  EXPECT_HAS(text, "\n# requirements\nrequire s0 == 4, extent s0: \"" + to + "0 of");
  EXPECT_HAS(text, "require s1 == 7, extent s1: \"" + to + "1 of");
  EXPECT_HAS(text, R"(require s0 == 4, extent s0: "a \"quoted\" word and a \\ backslash")");
  std::unique_ptr<Fusion> back = parseFusion(text, "back.fus");
  ASSERT_EQ(back->extentRequirements().size(), 3u);
  EXPECT_EQ(back->extentRequirements()[2].what, R"(a "quoted" word and a \ backslash)");
  EXPECT_EQ(back->extentRequirements()[1].expected, 7);
  EXPECT_EQ(back->extentRequirements()[1].value,
            back->inputs()[0]->as<TensorView>()->logical()[1]->extent());
}

// A `require` line's errors point at the offending token; a string ends on its line.
TEST(TextShapeOpsTest, RequirementErrors) {
  const std::string head = "inputs: T0\noutputs: T0\ns0 : i64\nT0 : f32 global [i0{s0}]\n";
  expectError(head + "require s0 == 4, extent s0: oops\n", "5:29",
              "expected the requirement's message in quotes, got 'oops'");
  expectError(head + "require s0 == 4, span s0: \"x\"\n", "5:18", "expected 'extent', got 'span'");
  expectError(head + "require s0 = 4, extent s0: \"x\"\n", "5:14", "expected '='");
  expectError(head + "require s9 == 4, extent s0: \"x\"\n", "5:9", "undefined name s9");
  expectError(head + "require s0 == 4, extent s0: \"no end\n", "5:29",
              "a string that does not end on its line");
}

// Parser errors point at the offending token.
TEST(TextShapeOpsTest, Errors) {
  const std::string head = "inputs: T0\noutputs: T1\nT0 : f32 global [i0{8}]\n";
  expectError(head + "T1 : f32 global [i2{5}]\n  root [i1{8}]\n  i2 = resize(i1, 1.5, 0)\n", "6:19",
              "the left width of resize must be an integer scalar");
  expectError(head + "T1 : f32 global [i2{5}]\n  root [i1{8}]\n  i2 = stretch(i1, 1)\n", "6:8",
              "expected split, outer_split, merge or resize");
  expectError(head + "T1 : f32 global [i1{8}]\nT1 = pad(T0)\n", "5:6",
              "pad needs the argument value=");
  expectError(head + "T1 : f32 global [i1{8}]\nT1 = pad(T0, value=i32(0))\n", "5:20",
              "value of pad is i32 but T1 is declared f32");
  expectError(head + "T1 : f32 global [i1{8}]\nT1 = cat(T0, dim=s3)\n", "5:18",
              "undefined name s3");
  expectError(head + "T1 : f32 global [i1{8}]\nT1 = cat(T0, dim=-1)\n", "5:18",
              "dim must be a non-negative integer constant");
  expectError(head + "T1 : f32 global [i1{8}]\nT1 = cat(dim=0)\n", "5:6",
              "cat takes at least one operand");
  expectError(head + "T1 : f32 global [i1{8}]\nT1 = full(T0, value=0.0)\n", "5:6",
              "full takes 0 operands, got 1");
  expectError(head + "T1 : f32 global [i1{8}]\nT1 = iota(start=f32(0))\n", "5:6",
              "iota needs the argument step=");
  // Fresh logical IDs are only allowed for a dynamic reshape (the verifier names the tensor).
  expectError(head + "T1 : f32 global [u2{8}]\n  root [i1{8}]\nT1 = set(T0)\n", "4:1",
              "is not derived from the root domain");
}

}  // namespace
}  // namespace loom::ir
