// SPDX-License-Identifier: Apache-2.0
// Hand-scheduled fusions shared by the execution tests (both backends) and the NVRTC test.
#pragma once

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "loom/eval/argument.h"
#include "loom/ir/ir.h"
#include "loom/ops/ops.h"
#include "loom/transform/inlining.h"
#include "loom/transform/propagation.h"

namespace loom::test {

/// One case: builds the unscheduled fusion into `f`, schedules it in `schedule`, and makes inputs.
struct ExecCase {
  std::string name;
  std::function<void(ir::Fusion& f)> build;
  std::function<void(ir::Fusion& f)> schedule;
  std::function<std::vector<eval::Argument>()> inputs;
  int64_t reductionSize = 1;
};

/// gtest prints a failing case by its name (not its bytes).
inline void PrintTo(const ExecCase& c, std::ostream* os) { *os << c.name; }

inline Tensor randomTensor(std::vector<int64_t> sizes, uint64_t seed) {
  Tensor t = Tensor::empty(std::move(sizes), DataType::Float32);
  fillRandom(t, seed);
  return t;
}

inline ir::TensorView* output(ir::Fusion& f, size_t i = 0) {
  return f.outputs().at(i)->as<ir::TensorView>();
}

// Splits every tensor like `ref` (propagation), copies ref's parallel types, inlines most.
inline void scheduleLike(ir::Fusion& f, ir::TensorView* ref) {
  transform::propagateTransforms(ref);
  transform::parallelizeAllLike(ref);
  transform::inlineMost(f);
}

inline std::vector<ExecCase> execCases() {
  using ir::ParallelType;
  std::vector<ExecCase> cases;
  // x[I0, I1] + bias[I1], flattened, split by 128 on BIDx/TIDx; 8 * 125 = 1000 elements.
  cases.push_back({"PointwiseBias",
                   [](ir::Fusion& f) {
                     auto* x = ops::TensorBuilder().shape({-1, -1}).build();
                     auto* bias = ops::TensorBuilder().shape({-1}).build();
                     f.addInput(x);
                     f.addInput(bias);
                     f.addOutput(ops::add(x, bias));
                   },
                   [](ir::Fusion& f) {
                     auto* out = output(f);
                     out->merge(0)->split(0, 128);
                     out->axis(0)->parallelize(ParallelType::BIDx);
                     out->axis(1)->parallelize(ParallelType::TIDx);
                     scheduleLike(f, out);
                   },
                   [] {
                     return std::vector<eval::Argument>{randomTensor({8, 125}, 1),
                                                        randomTensor({125}, 2)};
                   }});
  // exp of a transposed (non-contiguous) input, 2-D schedule [BIDx, serial, TIDx].
  cases.push_back({"PermutedInput",
                   [](ir::Fusion& f) {
                     auto* x = ops::TensorBuilder().shape({-1, -1}).strideOrder({1, 0}).build();
                     f.addInput(x);
                     f.addOutput(ops::mul(ops::exp(x), 2.0));
                   },
                   [](ir::Fusion& f) {
                     auto* out = output(f);
                     out->split(1, 32);
                     out->axis(0)->parallelize(ParallelType::BIDx);
                     out->axis(2)->parallelize(ParallelType::TIDx);
                     scheduleLike(f, out);
                   },
                   [] {
                     Tensor t = randomTensor({45, 7}, 3);  // transposed view: [7, 45]
                     std::vector<int64_t> perm{1, 0};
                     return std::vector<eval::Argument>{t.permute(perm)};
                   }});
  // Serial inner reduction: sum over the last dim, one thread per row.
  cases.push_back({"SerialInnerSum",
                   [](ir::Fusion& f) {
                     auto* x = ops::TensorBuilder().shape({37, 50}).build();
                     f.addInput(x);
                     f.addOutput(ops::sum(ops::relu(x), {1}));
                   },
                   [](ir::Fusion& f) {
                     auto* out = output(f);
                     out->axis(0)->parallelize(ParallelType::TIDx);
                     scheduleLike(f, out);
                   },
                   [] { return std::vector<eval::Argument>{randomTensor({37, 50}, 4)}; }, 50});
  // Block reduction over TIDx, rows on BIDx; 300 does not divide by 128.
  cases.push_back({"BlockInnerSum",
                   [](ir::Fusion& f) {
                     auto* x = ops::TensorBuilder().shape({-1, -1}).build();
                     f.addInput(x);
                     f.addOutput(ops::sum(x, {1}));
                   },
                   [](ir::Fusion& f) {
                     auto* out = output(f);
                     out->split(1, 128);
                     out->axis(0)->parallelize(ParallelType::BIDx);
                     out->axis(2)->parallelize(ParallelType::TIDx);
                     scheduleLike(f, out);
                   },
                   [] { return std::vector<eval::Argument>{randomTensor({6, 300}, 5)}; }, 300});
  // Block max reduction with an inlined producer and a pointwise consumer of the result.
  cases.push_back({"BlockMaxThenScale",
                   [](ir::Fusion& f) {
                     auto* x = ops::TensorBuilder().shape({5, 96}).build();
                     f.addInput(x);
                     f.addOutput(ops::mul(ops::max(ops::abs(x), {1}), 3.0));
                   },
                   [](ir::Fusion& f) {
                     auto* red = f.outputs()[0]->definition()->input(0)->as<ir::TensorView>();
                     red->axis(0)->parallelize(ParallelType::BIDx);
                     red->axis(1)->parallelize(ParallelType::TIDx);
                     scheduleLike(f, red);
                   },
                   [] { return std::vector<eval::Argument>{randomTensor({5, 96}, 6)}; }, 96});
  // Softmax over the last dim: two block reductions and broadcasts, rows on BIDx.
  cases.push_back({"Softmax",
                   [](ir::Fusion& f) {
                     auto* x = ops::TensorBuilder().shape({4, 200}).build();
                     f.addInput(x);
                     auto* m = ops::max(x, {1}, /*keepdim=*/true);
                     auto* e = ops::exp(ops::sub(x, m));
                     auto* s = ops::sum(e, {1}, /*keepdim=*/true);
                     f.addOutput(ops::div(e, s));
                   },
                   [](ir::Fusion& f) {
                     auto* out = output(f);
                     out->split(1, 128);
                     out->axis(0)->parallelize(ParallelType::BIDx);
                     out->axis(2)->parallelize(ParallelType::TIDx);
                     scheduleLike(f, out);
                   },
                   [] { return std::vector<eval::Argument>{randomTensor({4, 200}, 7)}; }, 200});
  return cases;
}

}  // namespace loom::test
