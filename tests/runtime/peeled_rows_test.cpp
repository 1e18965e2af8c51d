// SPDX-License-Identifier: Apache-2.0
// Peeled vector rows (issue 29; docs/lowering.md "Peeled vector rows"): layer_norm, rms_norm,
// softmax and var_mean in fp32 and bf16 over rows that do not start on a vector boundary (odd
// widths, views at odd offsets, column slices), through FusionExecutorCache, outputs poisoned,
// against the reference evaluator. A vector access at a misaligned address traps on the host
// backend (and faults on a GPU), so a peel that took the vector path in the wrong place fails
// here. Built twice: host backend (emu) and CUDA (gpu; the inputs are then CUDA views, so the
// odd offsets reach the device).
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "loom/eval/compare.h"
#include "loom/eval/reference_evaluator.h"
#include "loom/ir/ir.h"
#include "loom/ops/ops.h"
#include "loom/runtime/fusion_executor_cache.h"
#include "loom/scheduler/normalization.h"
#include "runtime/runtime_test_backend.h"
#ifdef LOOM_RUNTIME_TEST_CUDA
#include "loom/backend/cuda/memory.h"
#endif

namespace loom::runtime {
namespace {

using ir::Fusion;
using ir::FusionGuard;

enum class Family { LayerNorm, RmsNorm, Softmax, VarMean };

std::string familyName(Family f) {
  switch (f) {
    case Family::LayerNorm: return "layer_norm";
    case Family::RmsNorm: return "rms_norm";
    case Family::Softmax: return "softmax";
    case Family::VarMean: return "var_mean";
  }
  return "?";
}

// The family over the last dim of x [rows, width] with weight (and bias) [width]; -1: symbolic
// (rows held in shared memory need constant sizes).
std::unique_ptr<Fusion> familyFusion(Family family, DataType dtype, int64_t rows = -1,
                                     int64_t width = -1) {
  auto f = std::make_unique<Fusion>();
  FusionGuard guard(f.get());
  auto* x = ops::TensorBuilder().shape({rows, width}).dtype(dtype).build();
  f->addInput(x);
  if (family == Family::Softmax) {
    f->addOutput(ops::softmax(x, 1));
  } else if (family == Family::VarMean) {
    auto r = ops::varMean(x, {1});
    f->addOutput(r.var);
    f->addOutput(r.mean);
  } else {
    auto* w = ops::TensorBuilder().shape({width}).dtype(dtype).build();
    f->addInput(w);
    if (family == Family::RmsNorm) {
      f->addOutput(ops::rmsNorm(x, 1, w, 1e-5));
    } else {
      auto* b = ops::TensorBuilder().shape({width}).dtype(dtype).build();
      f->addInput(b);
      auto r = ops::layerNorm(x, 1, w, b);
      f->addOutput(r.y);
      f->addOutput(r.mean);
      f->addOutput(r.rstd);
    }
  }
  return f;
}

// Elements per 16-byte vector.
int64_t vectorOf(DataType dtype) { return 16 / int64_t(dataTypeSize(dtype)); }

// A [rows, width] view whose element (r, c) is element offset + r * row_stride + c of a fresh
// random buffer: offset 1 puts every row start off the vector boundary, row_stride width + 1 (a
// column slice x[:, 1:]) moves it row by row. On the gpu target the buffer is on the GPU, so
// the kernel sees the same offsets.
Tensor viewOf(int64_t rows, int64_t width, int64_t offset, int64_t row_stride, DataType dtype,
              uint64_t seed) {
  Tensor base = Tensor::empty({offset + (rows - 1) * row_stride + width}, dtype);
  fillRandom(base, seed);
#ifdef LOOM_RUNTIME_TEST_CUDA
  base = cuda::toDevice(base);
#endif
  return Tensor(base.storage(), dtype, {rows, width}, {row_stride, 1}, offset);
}

Tensor onHost(const Tensor& t) {
#ifdef LOOM_RUNTIME_TEST_CUDA
  return t.device().isCuda() ? cuda::toHost(t).contiguous() : t.contiguous();
#else
  return t.contiguous();
#endif
}

struct Layout {
  int64_t offset = 0;  ///< of x's first element in its buffer
  int64_t extra = 0;   ///< x's row stride is width + extra
  int64_t weightOffset = 0;
};

std::vector<eval::Argument> familyArgs(Family family, int64_t rows, int64_t width, DataType dtype,
                                       Layout layout) {
  std::vector<eval::Argument> args{
      viewOf(rows, width, layout.offset, width + layout.extra, dtype, 91)};
  const int64_t weights = family == Family::LayerNorm ? 2 : family == Family::RmsNorm ? 1 : 0;
  for (int64_t k = 0; k < weights; ++k) {
    Tensor w = viewOf(1, width, layout.weightOffset, width, dtype, 92 + uint64_t(k));
    args.push_back(Tensor(w.storage(), dtype, {width}, {1}, w.offset()));
  }
  return args;
}

// The reference's inputs: host copies of the (maybe device) arguments.
std::vector<eval::Argument> hostArgs(const std::vector<eval::Argument>& args) {
  std::vector<eval::Argument> out;
  for (const eval::Argument& a : args) out.push_back(onHost(std::get<Tensor>(a)));
  return out;
}

// The parameters of the one inner-persistent kernel the cache ran last.
const scheduler::InnerPersistentParams* lastParams(FusionExecutorCache& cache) {
  const FusionKernelRuntime* rt = cache.lastRuntime();
  if (rt == nullptr || rt->segmented().segments().size() != 1) return nullptr;
  const segmenter::KernelWork* k = rt->segmented().segments().front().kernel();
  return k == nullptr ? nullptr
                      : dynamic_cast<const scheduler::InnerPersistentParams*>(k->params.get());
}

class PeeledRows : public ::testing::TestWithParam<std::tuple<Family, DataType>> {
 protected:
  void SetUp() override {
    if (auto why = loom::test::backendUnavailable(testBackend())) GTEST_SKIP() << *why;
  }
  Family family() const { return std::get<0>(GetParam()); }
  DataType dtype() const { return std::get<1>(GetParam()); }

  // Runs the family on `args` (outputs poisoned) with `overrides`, compares every output with
  // the reference, and returns "" or what differs; `params` gets the kernel's parameters. The
  // fusion's sizes are symbolic, or the arguments' when `constant`.
  std::string runAndCompare(const std::vector<eval::Argument>& args, int64_t width,
                            std::vector<std::pair<std::string, int64_t>> overrides,
                            scheduler::InnerPersistentParams* params, bool constant) {
    RuntimeOptions options = poisonedOptions();
    options.paramOverrides = std::move(overrides);
    const int64_t rows = std::get<Tensor>(args[0]).size(0);
    FusionExecutorCache cache(
        constant ? familyFusion(family(), dtype(), rows, width) : familyFusion(family(), dtype()),
        options);
    std::vector<Tensor> got = cache.run(args);
    const scheduler::InnerPersistentParams* p = lastParams(cache);
    if (params != nullptr) {
      if (p == nullptr) return "not one inner-persistent kernel";
      *params = *p;
    }
    std::vector<Tensor> expected = eval::evaluateFusion(cache.fusion(), hostArgs(args));
    for (size_t i = 0; i < got.size(); ++i) {
      auto tol = eval::defaultTolerance(expected[i].dtype(), width);
      if (auto msg =
              eval::expectClose(onHost(got[i]), expected[i], tol, "output " + std::to_string(i))) {
        return *msg + "\n" + (p != nullptr ? p->toString() : std::string());
      }
    }
    return "";
  }
};

// Widths around the vector (3, 7, v - 1, v + 1, 2v +- 1, 127, 16v +- 1) with the peel asked for
// at the 16-byte width: rows shorter than a vector, rows whose head and tail cover them, rows of a
// few vectors; 300 rows, so that narrow rows share blocks (TIDy) and every row start alignment
// occurs. Contiguous inputs with symbolic sizes (the row may be shorter than its shift), and x at
// offset 1 with constant sizes. (Rows of width 1 are no reduction a kernel peels: the runtime
// makes them broadcasts; they run and match, by whatever schedule.)
TEST_P(PeeledRows, OddWidthsWithThePeelAskedFor) {
  const int64_t v = vectorOf(dtype());
  for (int64_t width : {int64_t(1), int64_t(3), int64_t(7), v - 1, v + 1, 2 * v - 1, 2 * v + 1,
                        int64_t(127), 16 * v - 1, 16 * v + 1}) {
    for (int64_t offset : {0, 1}) {
      SCOPED_TRACE(familyName(family()) + " " + std::string(dataTypeName(dtype())) + " width " +
                   std::to_string(width) + " offset " + std::to_string(offset));
      std::vector<eval::Argument> args = familyArgs(family(), 300, width, dtype(), {offset, 0, 0});
      if (width == 1) {
        EXPECT_EQ(runAndCompare(args, width, {}, nullptr, offset == 1), "");
        continue;
      }
      scheduler::InnerPersistentParams p;
      EXPECT_EQ(runAndCompare(args, width, {{"peel", 1}, {"vectorize", v}}, &p, offset == 1), "");
      EXPECT_TRUE(p.peel);
      EXPECT_EQ(p.vectorize, v);
    }
  }
}

// GPT-2's vocabulary (50257, prime): the heuristic peels by itself, and the rows (3, each at
// another alignment) match.
TEST_P(PeeledRows, VocabularyWidthIsPeeled) {
  scheduler::InnerPersistentParams p;
  EXPECT_EQ(runAndCompare(familyArgs(family(), 3, 50257, dtype(), {}), 50257, {}, &p, true), "");
  EXPECT_TRUE(p.peel) << p.toString();
  EXPECT_EQ(p.vectorize, vectorOf(dtype())) << p.toString();
}

// Views whose rows start off the vector boundary: x at offset 1 of an aligned width, a column
// slice x[:, 1:] (row stride width + 1), weights at offset 1; the heuristic peels each (the
// aligned width at offset 0 keeps its aligned vectors), and all match.
TEST_P(PeeledRows, MisalignedViewsArePeeled) {
  const int64_t v = vectorOf(dtype());
  struct Case {
    int64_t width;
    Layout layout;
    bool peel;
  };
  for (Case c :
       {Case{1024, {0, 0, 0}, false}, Case{1024, {1, 0, 0}, true}, Case{1024, {1, 1, 0}, true},
        Case{1024, {0, 0, 1}, true}, Case{2049, {3, 1, 1}, true}, Case{50257, {1, 1, 1}, true}}) {
    const bool weighted = family() == Family::LayerNorm || family() == Family::RmsNorm;
    if (c.layout.weightOffset != 0 && !weighted) continue;
    SCOPED_TRACE(familyName(family()) + " " + std::string(dataTypeName(dtype())) + " width " +
                 std::to_string(c.width) + " offset " + std::to_string(c.layout.offset) +
                 " row stride +" + std::to_string(c.layout.extra) + " weight offset " +
                 std::to_string(c.layout.weightOffset));
    scheduler::InnerPersistentParams p;
    EXPECT_EQ(
        runAndCompare(familyArgs(family(), 5, c.width, dtype(), c.layout), c.width, {}, &p, true),
        "");
    EXPECT_EQ(p.peel, c.peel) << p.toString();
    EXPECT_EQ(p.vectorize, v) << p.toString();
  }
}

INSTANTIATE_TEST_SUITE_P(Families, PeeledRows,
                         ::testing::Combine(::testing::Values(Family::LayerNorm, Family::RmsNorm,
                                                              Family::Softmax, Family::VarMean),
                                            ::testing::Values(DataType::Float32,
                                                              DataType::BFloat16)),
                         [](const ::testing::TestParamInfo<std::tuple<Family, DataType>>& info) {
                           return familyName(std::get<0>(info.param)) + "_" +
                                  std::string(dataTypeName(std::get<1>(info.param)));
                         });

}  // namespace
}  // namespace loom::runtime
