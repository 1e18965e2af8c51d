// SPDX-License-Identifier: Apache-2.0
// Deep loop structures lower in time linear in their depth and without recursion per loop or per
// split: a chain of 20,000 splits (a loop nest 20,001 deep, an index of 20,001 terms) built in
// C++ and read from a .fus text lowers and prints on a 1 MiB stack within seconds (it overflowed
// the stack, and 4,000 splits took minutes). docs/testing.md, "Hardening II", has the timings.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "loom/codegen/kernel_codegen.h"
#include "loom/ir/ir.h"
#include "loom/ir/parser.h"
#include "loom/ir/printer.h"
#include "loom/ir/verifier.h"
#include "loom/lower/lower.h"
#include "loom/ops/ops.h"
#include "small_stack.h"
#include "time_budget.h"

namespace loom {
namespace {

constexpr int64_t kSplits = 20000;

// T1 = neg(T0) over [64], T1's innermost loop ID split by 1 `n` times: loop [64, 1, 1, ...].
std::unique_ptr<ir::Fusion> splitChain(int64_t n) {
  auto f = std::make_unique<ir::Fusion>();
  ir::FusionGuard guard(f.get());
  ir::TensorView* x = ops::TensorBuilder().shape({64}).build();
  f->addInput(x);
  ir::TensorView* y = ops::neg(x);
  f->addOutput(y);
  for (int64_t i = 0; i < n; ++i) y->split(y->nDims() - 1, 1);
  return f;
}

// The same chain as .fus text, as a user would write it.
std::string splitChainText(int64_t n) {
  std::string text =
      "inputs: T0\noutputs: T1\nT0 : f32 global [i0{64}]\nT1 : f32 global [i1{64}]\n";
  std::string loop = "  loop [";
  std::string splits;
  std::string in = "i1";
  for (int64_t k = 0; k < n; ++k) {
    const std::string outer = "i" + std::to_string(2 * k + 2);
    const std::string inner = "i" + std::to_string(2 * k + 3);
    loop += outer + (k == 0 ? "{64}, " : "{1}, ");
    splits += "  " + outer + ", " + inner + (k + 1 == n ? "" : "{1}") + " = split(" + in + ", 1)\n";
    in = inner;
  }
  loop += in + "{1}]\n";
  return text + loop + splits + "T1 = neg(T0)\n";
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

// Lowers and prints `f` on a small stack; returns the kernel text and the seconds it took.
std::pair<std::string, double> lowerAndPrint(const ir::Fusion& f) {
  std::string code;
  double seconds = 0;
  test::onSmallStack([&] {
    const auto start = std::chrono::steady_clock::now();
    std::unique_ptr<kir::Kernel> kernel = lower::lowerFusion(f);
    code = codegen::generateKernel(*kernel).kernelText;
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  });
  return {code, seconds};
}

// A split chain built in C++: one loop per loop ID, each element stored once, in seconds.
TEST(DeepLoops, SplitChainLowers) {
  std::unique_ptr<ir::Fusion> f = splitChain(kSplits);
  auto [code, seconds] = lowerAndPrint(*f);
  EXPECT_EQ(count(code, "for ("), size_t(kSplits + 1));
  EXPECT_EQ(count(code, "storeOutput("), 1u);
  // Linear-time lowering takes a few seconds on a loaded 2-core machine; the quadratic and cubic
  // walks it replaced took minutes for a fifth of this depth.
  EXPECT_LT(seconds, test::timeBudget(30.0));
}

// The same chain read from its .fus text: the parser, the printer, the cloner, the verifier and
// lowering handle it.
TEST(DeepLoops, SplitChainFromText) {
  const std::string text = splitChainText(kSplits);
  std::unique_ptr<ir::Fusion> f;
  std::string printed;
  test::onSmallStack([&] {
    f = ir::parseFusion(text, "chain.fus");
    printed = ir::printFusion(*f);
    std::unique_ptr<ir::Fusion> copy = f->clone();
    ir::verify(*copy);
    EXPECT_EQ(ir::printFusion(*copy), printed);
  });
  EXPECT_EQ(count(printed, "= split("), size_t(kSplits));
  auto [code, seconds] = lowerAndPrint(*f);
  EXPECT_EQ(count(code, "for ("), size_t(kSplits + 1));
  EXPECT_LT(seconds, test::timeBudget(30.0));
}

// An intermediate with the chain in a local buffer (not inlined): its buffer is indexed forward
// from its logical domain through the chain, and its consumer reads it through its own chain.
TEST(DeepLoops, SplitChainOfAnIntermediate) {
  auto f = std::make_unique<ir::Fusion>();
  {
    ir::FusionGuard guard(f.get());
    ir::TensorView* x = ops::TensorBuilder().shape({64}).build();
    f->addInput(x);
    ir::TensorView* t = ops::exp(x);
    ir::TensorView* y = ops::neg(t);
    f->addOutput(y);
    for (ir::TensorView* tv : {t, y}) {
      for (int64_t i = 0; i < kSplits; ++i) tv->split(tv->nDims() - 1, 1);
    }
  }
  auto [code, seconds] = lowerAndPrint(*f);
  EXPECT_EQ(count(code, "for ("), size_t(2 * (kSplits + 1)));
  EXPECT_EQ(count(code, "float T1["), 1u) << code.substr(0, 2000);
  EXPECT_LT(seconds, test::timeBudget(30.0));
}

// A chain of 20,000 splits each merged back (split by 2, merge the halves): the ID graph maps
// every step to the one before (merge undoes split), and the index folds back to the loop index.
// Mapping the chain scanned the whole chain at each step, and the index grew as a DAG whose
// printed tree doubled at each step.
TEST(DeepLoops, SplitMergeChainLowers) {
  auto f = std::make_unique<ir::Fusion>();
  {
    ir::FusionGuard guard(f.get());
    ir::TensorView* x = ops::TensorBuilder().shape({64}).build();
    f->addInput(x);
    ir::TensorView* y = ops::neg(x);
    f->addOutput(y);
    for (int64_t i = 0; i < kSplits; ++i) {
      y->split(0, 2);
      y->merge(0);
    }
  }
  auto [code, seconds] = lowerAndPrint(*f);
  EXPECT_EQ(count(code, "for ("), 1u);
  EXPECT_LT(code.size(), size_t(4096)) << code.substr(0, 4096);
  EXPECT_LT(seconds, test::timeBudget(30.0));
}

}  // namespace
}  // namespace loom
