// SPDX-License-Identifier: Apache-2.0
// Unit tests of the fuzzer's generator: seeds reproduce, every generated case is valid for the
// reference evaluator, and the op families, dtypes, ranks and input layouts are all reached.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "fuzz/fusion_generator.h"
#include "fuzz/fuzz_rng.h"
#include "loom/eval/reference_evaluator.h"
#include "loom/ir/ir.h"

namespace loom::fuzz {
namespace {

constexpr uint64_t kSeeds = 300;

// The PRNG is the project's own: its numbers are fixed, so a seed means the same case everywhere.
TEST(FuzzRng, NumbersAreFixed) {
  Rng r(1);
  EXPECT_EQ(r.next(), 0x5e41ab087439611eULL);
  EXPECT_EQ(r.below(10), 6u);
  Rng a(42), b(42);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.next(), b.next());
}

// The same seed gives the same fusion text, steps and inputs.
TEST(FusionGenerator, SeedsAreDeterministic) {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    FuzzCase a = generateCase(seed);
    FuzzCase b = generateCase(seed);
    ASSERT_EQ(a.fusion->toString(), b.fusion->toString()) << "seed " << seed;
    ASSERT_EQ(a.steps, b.steps) << "seed " << seed;
    auto args_a = makeArguments(a, a.classValues, 0);
    auto args_b = makeArguments(b, b.classValues, 0);
    ASSERT_EQ(describeArguments(a, args_a), describeArguments(b, args_b)) << "seed " << seed;
    for (size_t i = 0; i < args_a.size(); ++i) {
      if (const auto* ta = std::get_if<Tensor>(&args_a[i])) {
        const auto& tb = std::get<Tensor>(args_b[i]);
        for (int64_t k = 0; k < ta->numel(); ++k) {
          double x = ta->getDoubleLinear(k), y = tb.getDoubleLinear(k);
          ASSERT_TRUE(x == y || (x != x && y != y)) << "seed " << seed << " input " << i;
        }
      }
    }
  }
}

// The families of the ops with Resize IDs, factories and symbolic sizes.
const char* const kNewOpFamilies[] = {"slice", "pad",  "cat",  "rotary", "full",
                                      "iota",  "reshape_symbolic", "expand_symbolic"};

std::string familyOf(const std::string& step) { return step.substr(1, step.find(']') - 1); }

// Whether case c evaluates on the reference in its first and resized runs, within the size
// budgets and tolerances; the number of size scalars the resized run changed goes to *moved.
void expectValid(const FuzzCase& c, int* moved = nullptr) {
  const uint64_t seed = c.seed;
  ASSERT_FALSE(c.fusion->outputs().empty()) << "seed " << seed;
  ASSERT_EQ(c.outputs.size(), c.fusion->outputs().size());
  std::vector<std::vector<int64_t>> runs{c.classValues};
  if (auto v = resizedClassValues(c)) runs.push_back(*v);
  std::vector<std::vector<eval::Argument>> all_args;
  for (size_t r = 0; r < runs.size(); ++r) {
    auto args = makeArguments(c, runs[r], int(r == 0 ? 0 : 2));
    std::vector<Tensor> out;
    try {
      out = eval::evaluateFusion(*c.fusion, args);
    } catch (const std::exception& e) {
      FAIL() << "seed " << seed << (r == 0 ? "" : " (resized run)") << ": " << e.what() << "\n"
             << c.fusion->toString();
    }
    ASSERT_EQ(out.size(), c.outputs.size());
    // Sizes stay within the budgets, a 0 counting as 1 (what is computed from an empty
    // tensor, a reduction over its 0, need not be empty).
    auto budget = [](const Tensor& t) {
      int64_t n = 1;
      for (int64_t s : t.sizes()) n *= std::max<int64_t>(1, s);
      return n;
    };
    for (const eval::Argument& a : args) {
      if (const auto* t = std::get_if<Tensor>(&a)) {
        EXPECT_LE(budget(*t), 4096) << "seed " << seed;
      }
    }
    for (const Tensor& t : out) EXPECT_LE(budget(t), 16384) << "seed " << seed;
    for (size_t i = 0; i < out.size(); ++i) {
      eval::Tolerance tol = outputTolerance(c, i, out[i].dtype(), runs[r]);
      EXPECT_LE(tol.rtol, 1.0) << "seed " << seed << " output " << i;
    }
    all_args.push_back(std::move(args));
  }
  if (moved != nullptr && all_args.size() == 2) {
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      if (c.inputs[i].isTensor || c.inputs[i].scalarClass < 0) continue;
      if (std::get<int64_t>(all_args[0][i]) != std::get<int64_t>(all_args[1][i])) ++*moved;
    }
  }
}

// Every case evaluates on the reference evaluator (a failure here is a generator bug), in each
// of its runs, and the outputs have the tolerance the case asks for.
TEST(FusionGenerator, CasesAreValidForTheReference) {
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    FuzzCase c = generateCase(seed);
    ASSERT_NO_FATAL_FAILURE(expectValid(c));
  }
}

// With the new-op families weighted up, every case is still valid (every run, the resized one
// included, keeps its slices, pads, cats and reshapes valid), the resized run moves size scalars,
// and each family reaches the variants it is meant to cover.
TEST(FusionGenerator, NewOpFamiliesAreValidAndCoverTheirVariants) {
  GeneratorOptions o;
  for (const char* f : kNewOpFamilies) o.familyWeights[f] = 12;
  std::map<std::string, int> features;
  int moved = 0;
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    FuzzCase c;
    try {
      c = generateCase(seed, o);
    } catch (const std::exception& e) {
      FAIL() << "seed " << seed << ": " << e.what();
    }
    ASSERT_NO_FATAL_FAILURE(expectValid(c, &moved));
    for (const std::string& f : c.features) ++features[f];
  }
  for (const char* f :
       {"slice", "slice-of-input", "slice-several-dims", "slice-scalar-bound", "slice-empty",
        "pad", "pad-negative", "pad-fewer-pairs", "pad-special-value", "cat", "cat-mixed-dtype",
        "cat-symbolic-extent", "rotary", "full", "full-scalar-size", "full-operand", "iota",
        "iota-float", "iota-scalar-length", "iota-combined", "arange-fractional",
        "dynamic-reshape", "reshape-merge", "reshape-split", "reshape-minus-one",
        "reshape-size-1-at-run-time", "symbolic-expand", "size-scalar"}) {
    EXPECT_GT(features[f], 0) << f;
  }
  EXPECT_GT(moved, 0);
}

// Over a few hundred seeds every family is implemented and applied (the new-op families in about
// a quarter of the cases), every dtype is an input, every rank 0-4 occurs, and each layout and
// fusion shape the fuzzer aims at shows up.
TEST(FusionGenerator, CoversFamiliesDtypesRanksAndShapes) {
  std::map<std::string, int> families;
  std::set<DataType> dtypes;
  std::set<size_t> ranks;
  std::map<std::string, int> features;
  int resized = 0;
  int with_new_ops = 0;
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    FuzzCase c = generateCase(seed);
    bool new_ops = false;
    for (const std::string& s : c.steps) {
      ++families[familyOf(s)];
      for (const char* f : kNewOpFamilies) new_ops = new_ops || familyOf(s) == f;
    }
    with_new_ops += new_ops;
    for (const InputSpec& in : c.inputs) {
      if (!in.isTensor) continue;
      dtypes.insert(in.dtype);
      ranks.insert(in.declared.size());
    }
    for (const std::string& f : c.features) ++features[f];
    resized += c.resizedRun && resizedClassValues(c).has_value();
  }
  for (const FamilyInfo& f : opFamilies()) {
    EXPECT_TRUE(f.implemented) << f.name;
    if (f.implemented && f.weight > 0) {
      EXPECT_GT(families[std::string(f.name)], 0) << f.name;
    }
  }
  // The new-op families appear in about a quarter of the cases.
  EXPECT_GE(with_new_ops, int(kSeeds) * 15 / 100);
  EXPECT_LE(with_new_ops, int(kSeeds) * 40 / 100);
  for (DataType t : kAllDataTypes) {
    // The generator makes no complex fusions, nor any of the narrow or unsigned integer types
    // (tests/runtime/small_int_test.cpp covers those) or the 8-bit floats (float8_test.cpp).
    if (isComplexType(t) || (isIntegralType(t) && integerBits(t) < 32) || isUnsignedType(t) ||
        isFloat8Type(t)) {
      continue;
    }
    EXPECT_TRUE(dtypes.count(t)) << t;
  }
  for (size_t r = 0; r <= 4; ++r) EXPECT_TRUE(ranks.count(r)) << "rank " << r;
  for (const char* f :
       {"fan-out", "fan-in", "broadcast-against-larger", "normalization", "outer-reduction",
        "multi-output", "output-is-input", "16-bit-reduction", "reshape", "permuted-input",
        "sliced-input", "offset-input", "expanded-input", "zero-size", "scalar-input",
        "special-scalar", "expand", "welford"}) {
    EXPECT_GT(features[f], 0) << f;
  }
  EXPECT_GT(resized, 0);
}

// The families of weight 0 by default (added after seeds were recorded), weighted up: each is
// applied and every case stays valid.
TEST(FusionGenerator, LateFamiliesAreValidWhenWeighted) {
  GeneratorOptions o;
  o.familyWeights["unary_math"] = 12;
  int applied = 0;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    FuzzCase c = generateCase(seed, o);
    ASSERT_NO_FATAL_FAILURE(expectValid(c));
    for (const std::string& s : c.steps) applied += familyOf(s) == "unary_math";
  }
  EXPECT_GT(applied, 0);
  // transpose_tile as loom_fuzz_emu_transpose runs it (at most 10 steps: its dims of 32 and more
  // under several chained reductions would need more than the generator's largest tolerance).
  GeneratorOptions t;
  t.maxSteps = 10;
  t.familyWeights["transpose_tile"] = 14;
  t.familyWeights["channels_last"] = 6;
  int tiles = 0, channels_last = 0;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    FuzzCase c = generateCase(seed, t);
    ASSERT_NO_FATAL_FAILURE(expectValid(c));
    for (const std::string& s : c.steps) {
      tiles += familyOf(s) == "transpose_tile";
      channels_last += familyOf(s) == "channels_last";
    }
  }
  EXPECT_GT(tiles, 20);
  EXPECT_GT(channels_last, 5);
  // norm_backward as loom_fuzz_emu_norm_backward runs it.
  GeneratorOptions b;
  b.maxSteps = 10;
  b.familyWeights["norm_backward"] = 14;
  int backward = 0;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    FuzzCase c = generateCase(seed, b);
    ASSERT_NO_FATAL_FAILURE(expectValid(c));
    for (const std::string& s : c.steps) backward += familyOf(s) == "norm_backward";
  }
  EXPECT_GT(backward, 20);
  // outer_persistent as loom_fuzz_emu_outer_persistent runs it.
  GeneratorOptions op = t;
  op.familyWeights.clear();
  op.familyWeights["outer_persistent"] = 14;
  int outer = 0;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    FuzzCase c = generateCase(seed, op);
    ASSERT_NO_FATAL_FAILURE(expectValid(c));
    for (const std::string& s : c.steps) outer += familyOf(s) == "outer_persistent";
  }
  EXPECT_GT(outer, 20);
}

// Family weights: with every family but one at 0, only that family (and the inputs) appears.
TEST(FusionGenerator, FamilyWeightsSelectFamilies) {
  GeneratorOptions o;
  for (const FamilyInfo& f : opFamilies()) o.familyWeights[std::string(f.name)] = 0;
  o.familyWeights["softmax"] = 1;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    FuzzCase c = generateCase(seed, o);
    for (const std::string& s : c.steps) {
      std::string fam = s.substr(1, s.find(']') - 1);
      EXPECT_TRUE(fam == "input" || fam == "softmax") << s;
    }
  }
}

}  // namespace
}  // namespace loom::fuzz
