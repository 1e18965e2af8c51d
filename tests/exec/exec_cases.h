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

/// A view of `sizes` with `strides` and `offset` into a fresh random tensor of `storage` elements
/// (a slice, a padded row layout, a strided column pick).
inline Tensor stridedRandom(std::vector<int64_t> sizes, std::vector<int64_t> strides,
                            int64_t offset, int64_t storage, uint64_t seed) {
  Tensor base = randomTensor({storage}, seed);
  return Tensor(base.storage(), DataType::Float32, std::move(sizes), std::move(strides), offset);
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
  // Inputs whose declared contiguity is partial, each with a layout that has exactly it, on the
  // merged [BIDx, TIDx] schedule of PointwiseBias: indexing folds only the dims the flags allow.
  // [f, t]: columns 3..127 of [8, 130] rows (each row dense, rows 130 apart).
  // [t, f]: every other column of [8, 250] (rows dense with the strided columns).
  // [t, f, t]: [4, 6, 50] in rows padded to 64 (dim 1 strided, dim 0 dense with it).
  struct Layout {
    const char* name;
    ir::Contiguity contiguity;
    std::vector<int64_t> sizes, strides;
    int64_t offset, storage;
  };
  for (const Layout& l : std::vector<Layout>{
           {"SlicedColumnsDeclaredFT", {false, true}, {8, 125}, {130, 1}, 3, 8 * 130},
           {"StridedColumnsDeclaredTF", {true, false}, {8, 125}, {250, 2}, 1, 8 * 250},
           {"PaddedRowsDeclaredTFT", {true, false, true}, {4, 6, 50}, {384, 64, 1}, 0, 4 * 384}}) {
    cases.push_back({l.name,
                     [l](ir::Fusion& f) {
                       auto* x = ops::TensorBuilder()
                                     .rank(int64_t(l.sizes.size()))
                                     .contiguity(l.contiguity)
                                     .build();
                       f.addInput(x);
                       f.addOutput(ops::mul(ops::exp(x), 2.0));
                     },
                     [](ir::Fusion& f) {
                       auto* out = output(f);
                       out->flatten()->split(0, 128);
                       out->axis(0)->parallelize(ParallelType::BIDx);
                       out->axis(1)->parallelize(ParallelType::TIDx);
                       scheduleLike(f, out);
                     },
                     [l] {
                       return std::vector<eval::Argument>{
                           stridedRandom(l.sizes, l.strides, l.offset, l.storage, 20)};
                     }});
  }
  // A block sum over rows of a column slice declared [f, t]: rows 320 apart.
  cases.push_back({"BlockSumOfSlicedRows",
                   [](ir::Fusion& f) {
                     auto* x = ops::TensorBuilder().rank(2).contiguity({false, true}).build();
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
                   [] {
                     return std::vector<eval::Argument>{
                         stridedRandom({6, 300}, {320, 1}, 10, 6 * 320, 21)};
                   },
                   300});
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
