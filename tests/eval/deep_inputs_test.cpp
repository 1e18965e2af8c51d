// SPDX-License-Identifier: Apache-2.0
// Deep inputs through the front of the pipeline: a chain of 100,000 tensor ops and one of 100,000
// scalar ops are parsed, printed (and read back), cloned, verified and evaluated by the reference
// evaluator on a 1 MiB stack, each in seconds: none of these walks recurses once per op, and
// none is quadratic in the chain's length.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "loom/eval/reference_evaluator.h"
#include "loom/ir/ir.h"
#include "loom/ir/parser.h"
#include "loom/ir/printer.h"
#include "loom/ir/verifier.h"
#include "small_stack.h"
#include "time_budget.h"

namespace loom {
namespace {

constexpr int64_t kChain = 100000;

// T_{k+1} = add(T_k, 1) over i64 [4]: the output is the input plus kChain.
std::string tensorChain() {
  std::string decls = "inputs: T0\noutputs: T" + std::to_string(kChain) + "\n";
  std::string math;
  for (int64_t k = 0; k <= kChain; ++k) {
    decls += "T" + std::to_string(k) + " : i64 " + (k == 0 || k == kChain ? "global" : "local") +
             " [i" + std::to_string(k) + "{4}]\n";
    if (k > 0) math += "T" + std::to_string(k) + " = add(T" + std::to_string(k - 1) + ", 1)\n";
  }
  return decls + math;
}

// s_{k+1} = add(s_k, 1) from the scalar input s0, and T1 = add(T0, s_kChain).
std::string scalarChain() {
  std::string text = "inputs: T0, s0\noutputs: T1\ns0 : i64\n";
  for (int64_t k = 1; k <= kChain; ++k) {
    text += "s" + std::to_string(k) + " : i64 = add(s" + std::to_string(k - 1) + ", 1)\n";
  }
  return text + "T0 : i64 global [i0{4}]\nT1 : i64 global [i1{4}]\nT1 = add(T0, s" +
         std::to_string(kChain) + ")\n";
}

// Parses, prints and re-parses, clones, verifies and evaluates `text` on a small stack; returns
// the output and the seconds it all took.
std::pair<Tensor, double> throughTheFront(const std::string& text,
                                          const std::vector<eval::Argument>& args) {
  Tensor out;
  double seconds = 0;
  test::onSmallStack([&] {
    const auto start = std::chrono::steady_clock::now();
    std::unique_ptr<ir::Fusion> f = ir::parseFusion(text, "chain.fus");
    const std::string printed = ir::printFusion(*f);
    EXPECT_EQ(ir::printFusion(*ir::parseFusion(printed, "printed.fus")), printed);
    std::unique_ptr<ir::Fusion> copy = f->clone();
    EXPECT_EQ(ir::printFusion(*copy), printed);
    ir::verify(*copy);
    out = eval::evaluateFusion(*copy, args).at(0);
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  });
  return {out, seconds};
}

Tensor input() {
  Tensor t = Tensor::empty({4}, DataType::Int64);
  for (int64_t i = 0; i < 4; ++i) t.setDoubleLinear(i, double(10 * i - 7));
  return t;
}

// 100,000 chained tensor adds: each op adds 1.
TEST(DeepInputs, TensorChain) {
  Tensor x = input();
  auto [out, seconds] = throughTheFront(tensorChain(), {x});
  for (int64_t i = 0; i < 4; ++i) {
    EXPECT_EQ(out.getDoubleLinear(i), x.getDoubleLinear(i) + double(kChain)) << i;
  }
  EXPECT_LT(seconds, test::timeBudget(60.0));
}

// 100,000 chained scalar adds feeding one tensor op.
TEST(DeepInputs, ScalarChain) {
  Tensor x = input();
  auto [out, seconds] = throughTheFront(scalarChain(), {x, int64_t(5)});
  for (int64_t i = 0; i < 4; ++i) {
    EXPECT_EQ(out.getDoubleLinear(i), x.getDoubleLinear(i) + 5.0 + double(kChain)) << i;
  }
  EXPECT_LT(seconds, test::timeBudget(60.0));
}

}  // namespace
}  // namespace loom
