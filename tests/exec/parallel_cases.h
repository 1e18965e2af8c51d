// SPDX-License-Identifier: Apache-2.0
// Hand-scheduled fusions for parallel correctness and memory: thread predicates, mismatched
// parallel extents, shared-memory tensors with syncs, permutes, scalar inputs, aliased outputs.
#pragma once

#include <vector>

#include "exec/exec_cases.h"
#include "loom/transform/cache.h"

namespace loom::test {

inline std::vector<ExecCase> parallelCases() {
  using ir::ParallelType;
  std::vector<ExecCase> cases;
  // s = sum(x[6, 20], dim 1) reduced serially (one value per block: stored by thread 0 only),
  // then read back by all 64 TIDx threads of the block: out = y[6, 64] + s.
  cases.push_back({"SerialThenBroadcast",
                   [](ir::Fusion& f) {
                     auto* x = ops::TensorBuilder().shape({-1, -1}).build();
                     auto* y = ops::TensorBuilder().shape({-1, 64}).build();
                     f.addInput(x);
                     f.addInput(y);
                     auto* s = ops::sum(x, {1});
                     f.addOutput(s);
                     f.addOutput(ops::add(y, ops::broadcast(s, {false, true})));
                   },
                   [](ir::Fusion& f) {
                     auto* s = output(f, 0);
                     auto* out = output(f, 1);
                     s->axis(0)->parallelize(ParallelType::BIDx);
                     out->axis(0)->parallelize(ParallelType::BIDx);
                     out->axis(1)->parallelize(ParallelType::TIDx);
                     transform::inlineMost(f);
                   },
                   [] {
                     return std::vector<eval::Argument>{randomTensor({6, 20}, 3),
                                                        randomTensor({6, 64}, 4)};
                   },
                   20});
  // Two outputs split by 128 and by 96 on BIDx/TIDx: launch 128 threads and the larger grid,
  // each loop predicated on its own extent.
  cases.push_back({"MismatchedTidxExtents",
                   [](ir::Fusion& f) {
                     auto* x = ops::TensorBuilder().shape({-1}).build();
                     auto* y = ops::TensorBuilder().shape({-1}).build();
                     f.addInput(x);
                     f.addInput(y);
                     f.addOutput(ops::mul(x, 2.0));
                     f.addOutput(ops::exp(y));
                   },
                   [](ir::Fusion& f) {
                     for (auto [i, factor] : {std::pair<size_t, int64_t>{0, 128}, {1, 96}}) {
                       auto* out = output(f, i);
                       out->split(0, factor);
                       out->axis(0)->parallelize(ParallelType::BIDx);
                       out->axis(1)->parallelize(ParallelType::TIDx);
                     }
                     transform::inlineMost(f);
                   },
                   [] {
                     return std::vector<eval::Argument>{randomTensor({1000}, 5),
                                                        randomTensor({500}, 6)};
                   }});
  // out = permute(x[N, 3, 4, 32], {0, 1, 3, 2}) through a shared-memory copy of x: each of 3 serial
  // steps stages a 4 x 32 tile (thread t writes element t) and reads it transposed (another
  // thread's element): RAW sync inside the step, loop-carried WAR sync at its end.
  cases.push_back({"SharedStagedTranspose",
                   [](ir::Fusion& f) {
                     auto* x = ops::TensorBuilder().shape({-1, 3, 4, 32}).build();
                     f.addInput(x);
                     f.addOutput(ops::permute(x, {0, 1, 3, 2}));
                   },
                   [](ir::Fusion& f) {
                     auto* x = f.inputs()[0]->as<ir::TensorView>();
                     auto* out = output(f);
                     auto* c = transform::cacheAfter(x, ir::MemoryType::Shared);
                     out->merge(2);
                     out->axis(0)->parallelize(ParallelType::BIDx);
                     out->axis(2)->parallelize(ParallelType::TIDx);
                     transform::computeAt(c, out, 2);
                     c->merge(2);
                     c->axis(0)->parallelize(ParallelType::BIDx);
                     c->axis(2)->parallelize(ParallelType::TIDx);
                   },
                   [] { return std::vector<eval::Argument>{randomTensor({5, 3, 4, 32}, 7)}; }});
  // exp(x) through a shared copy of x inlined past its TIDx axis: the buffer still holds one
  // element per thread (it held one element that every thread of the block wrote and read). With
  // the copy's axes left serial (`copy_parallel` false), inlined into the consumer's BIDx and TIDx
  // loops, it runs on those threads, so its buffer is still one element per thread (every thread
  // wrote the one element of a buffer sized by the copy's own serial axis).
  for (bool copy_parallel : {true, false}) {
    cases.push_back(
        {copy_parallel ? "SharedInlinedPastThreads" : "SharedSerialInlinedIntoThreads",
         [](ir::Fusion& f) {
           auto* x = ops::TensorBuilder().shape({-1, 128}).build();
           f.addInput(x);
           f.addOutput(ops::exp(x));
         },
         [copy_parallel](ir::Fusion& f) {
           auto* x = f.inputs()[0]->as<ir::TensorView>();
           auto* out = output(f);
           auto* c = transform::cacheAfter(x, ir::MemoryType::Shared);
           for (auto* t : copy_parallel ? std::vector<ir::TensorView*>{c, out}
                                        : std::vector<ir::TensorView*>{out}) {
             t->axis(0)->parallelize(ParallelType::BIDx);
             t->axis(1)->parallelize(ParallelType::TIDx);
           }
           transform::computeAt(c, out, 2);
         },
         [copy_parallel] {
           return std::vector<eval::Argument>{randomTensor({7, 128}, copy_parallel ? 8 : 9)};
         }});
  }
  // y = exp(x) (an output) left serial and inlined into z = y * 2's TIDx loop: every thread
  // writes its own element of y (the single-writer guard of a serial global once let thread 0
  // alone write, leaving the rest of y unwritten).
  cases.push_back({"GlobalSerialInlinedIntoThreads",
                   [](ir::Fusion& f) {
                     auto* x = ops::TensorBuilder().shape({-1, 64}).build();
                     f.addInput(x);
                     auto* y = ops::exp(x);
                     f.addOutput(y);
                     f.addOutput(ops::mul(y, 2.0));
                   },
                   [](ir::Fusion& f) {
                     auto* y = output(f, 0);
                     auto* z = output(f, 1);
                     z->axis(0)->parallelize(ParallelType::BIDx);
                     z->axis(1)->parallelize(ParallelType::TIDx);
                     transform::computeAt(y, z, 2);
                   },
                   [] {
                     return std::vector<eval::Argument>{randomTensor({5, 64}, 10)};
                   }});
  // exp(permute(x)) fully inlined: the permute's root domain is x's order, its logical the
  // transposed one.
  cases.push_back({"PermuteInFusion",
                   [](ir::Fusion& f) {
                     auto* x = ops::TensorBuilder().shape({-1, -1}).build();
                     f.addInput(x);
                     f.addOutput(ops::exp(ops::permute(x, {1, 0})));
                   },
                   [](ir::Fusion& f) {
                     auto* out = output(f);
                     out->merge(0)->split(0, 128);
                     out->axis(0)->parallelize(ParallelType::BIDx);
                     out->axis(1)->parallelize(ParallelType::TIDx);
                     scheduleLike(f, out);
                   },
                   [] { return std::vector<eval::Argument>{randomTensor({40, 24}, 8)}; }});
  // x * alpha with alpha a scalar fusion input (a by-value kernel parameter).
  cases.push_back({"ScalarInput",
                   [](ir::Fusion& f) {
                     auto* x = ops::TensorBuilder().shape({-1}).build();
                     auto* alpha = ir::IrBuilder::symbolic(DataType::Float64);
                     f.addInput(x);
                     f.addInput(alpha);
                     f.addOutput(ops::mul(x, alpha));
                   },
                   [](ir::Fusion& f) {
                     auto* out = output(f);
                     out->split(0, 128);
                     out->axis(0)->parallelize(ParallelType::BIDx);
                     out->axis(1)->parallelize(ParallelType::TIDx);
                     scheduleLike(f, out);
                   },
                   [] { return std::vector<eval::Argument>{randomTensor({300}, 9), 1.75}; }});
  // A fusion output that is also its input comes back as a copy, next to a computed output.
  cases.push_back({"OutputIsInput",
                   [](ir::Fusion& f) {
                     auto* x = ops::TensorBuilder().shape({-1}).build();
                     f.addInput(x);
                     f.addOutput(ops::add(x, 1.0));
                     f.addOutput(x);
                   },
                   [](ir::Fusion& f) {
                     auto* out = output(f);
                     out->split(0, 64);
                     out->axis(0)->parallelize(ParallelType::BIDx);
                     out->axis(1)->parallelize(ParallelType::TIDx);
                   },
                   [] { return std::vector<eval::Argument>{randomTensor({200}, 10)}; }});
  return cases;
}

}  // namespace loom::test
