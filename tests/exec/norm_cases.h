// SPDX-License-Identifier: Apache-2.0
// Hand-scheduled layer_norm and consumers of grid reduction results, shared by the norm execution
// tests (both backends) and the NVRTC test.
#pragma once

#include "exec/exec_cases.h"
#include "loom/transform/cache.h"
#include "loom/transform/schedule.h"

namespace loom::test {

/// The avg output of the fusion's (one) WelfordOp: the reference the schedules below split.
inline ir::TensorView* welfordAvg(ir::Fusion& f) {
  for (ir::Expr* e : f.exprs()) {
    if (e->isA<ir::WelfordOp>()) return e->as<ir::WelfordOp>()->outAvg();
  }
  LOOM_THROW("no WelfordOp in the fusion");
}

/// layer_norm over the last dim of x [rows, cols] (-1: symbolic; column-major when `transposed`)
/// with weight and bias; outputs y, mean, rstd.
inline void buildLayerNorm(ir::Fusion& f, bool transposed = false, int64_t rows = -1,
                           int64_t cols = -1) {
  ops::TensorBuilder xb;
  xb.shape({rows, cols});
  if (transposed) xb.strideOrder({1, 0});
  auto* x = xb.build();
  auto* w = ops::TensorBuilder().shape({cols}).build();
  auto* b = ops::TensorBuilder().shape({cols}).build();
  f.addInput(x);
  f.addInput(w);
  f.addInput(b);
  auto r = ops::layerNorm(x, 1, w, b);
  f.addOutput(r.y);
  f.addOutput(r.mean);
  f.addOutput(r.rstd);
}

/// Random x [rows, cols] (given as the transpose of a [cols, rows] tensor when `transposed`), weight
/// and bias [cols].
inline std::vector<eval::Argument> layerNormInputs(int64_t rows, int64_t cols, uint64_t seed,
                                                   bool transposed = false) {
  Tensor x = transposed ? randomTensor({cols, rows}, seed).permute(std::vector<int64_t>{1, 0})
                        : randomTensor({rows, cols}, seed);
  return {x, randomTensor({cols}, seed + 1), randomTensor({cols}, seed + 2)};
}

/// Rows on BIDx, the row split by `threads` onto TIDx: block Welford, then the normalization of
/// each element with the row's mean and rstd broadcast over the threads.
inline void scheduleLayerNormBlock(ir::Fusion& f, int64_t threads) {
  auto* avg = welfordAvg(f);
  avg->split(1, threads);
  avg->axis(0)->parallelize(ir::ParallelType::BIDx);
  avg->axis(2)->parallelize(ir::ParallelType::TIDx);
  scheduleLike(f, avg);
}

inline std::vector<ExecCase> normCases() {
  using ir::ParallelType;
  std::vector<ExecCase> cases;
  // layer_norm, 300 columns over 128 threads (non-divisible), 5 rows on BIDx.
  cases.push_back({"LayerNormBlock", [](ir::Fusion& f) { buildLayerNorm(f); },
                   [](ir::Fusion& f) { scheduleLayerNormBlock(f, 128); },
                   [] { return layerNormInputs(5, 300, 21); }, 300});
  // layer_norm of a column-major (transposed) x: strided loads along the row; 200 over 64.
  cases.push_back({"LayerNormTransposedInput", [](ir::Fusion& f) { buildLayerNorm(f, true); },
                   [](ir::Fusion& f) { scheduleLayerNormBlock(f, 64); },
                   [] { return layerNormInputs(7, 200, 24, true); }, 200});
  // Two rows per block on TIDy, each row's Welford over TIDx only: [I/2 BIDx, 2 TIDy, R/32, 32 TIDx];
  // 7 rows (the last block half empty) of 90 (not a multiple of 32).
  cases.push_back({"LayerNormRowsOnTIDy", [](ir::Fusion& f) { buildLayerNorm(f); },
                   [](ir::Fusion& f) {
                     auto* avg = welfordAvg(f);
                     avg->split(0, 2)->split(2, 32);
                     avg->axis(0)->parallelize(ParallelType::BIDx);
                     avg->axis(1)->parallelize(ParallelType::TIDy);
                     avg->axis(3)->parallelize(ParallelType::TIDx);
                     scheduleLike(f, avg);
                   },
                   [] { return layerNormInputs(7, 90, 27); }, 90});
  // Persistent layer_norm with vectorized loads: x, weight and bias cached in registers by float4
  // copies, [BIDx, R/128 (Unroll), 32 TIDx, 4 (Vectorize)]; the row stays in registers between
  // the Welford and the normalization. 512 columns (divisible: vectorized accesses need it; a
  // constant: Unroll needs a constant extent).
  cases.push_back({"LayerNormVectorizedUnrolled",
                   [](ir::Fusion& f) { buildLayerNorm(f, false, -1, 512); },
                   [](ir::Fusion& f) {
                     std::vector<ir::TensorView*> caches;
                     for (ir::Val* in : std::vector<ir::Val*>(f.inputs())) {
                       caches.push_back(transform::cacheAfter(in->as<ir::TensorView>()));
                     }
                     auto* avg = welfordAvg(f);
                     avg->split(1, 4)->split(1, 32);
                     avg->axis(0)->parallelize(ParallelType::BIDx);
                     avg->axis(2)->parallelize(ParallelType::TIDx);
                     transform::propagateTransforms(avg);
                     transform::parallelizeAllLike(avg);
                     for (ir::TensorView* c : caches) {
                       int64_t n = c->nDims();
                       c->axis(n - 1)->parallelize(ParallelType::Vectorize);
                       c->axis(n - 3)->parallelize(ParallelType::Unroll);
                     }
                     // The weight/bias caches' loops line up with their consumers' by position
                     // only after the broadcast: the lowering shares loops by position.
                     transform::inlineMost(f);
                   },
                   [] { return layerNormInputs(4, 512, 30); }, 512});
  // Grid Welford over one row of 5000 (40 blocks x 128 threads) and values derived from its
  // result in the same kernel: var = m2 / (n - 1) and rstd = rsqrt(var + eps). Only the last
  // block holds the combined triple, so the derived values must come from it.
  cases.push_back({"GridVarMeanDerived",
                   [](ir::Fusion& f) {
                     auto* x = ops::TensorBuilder().shape({5000}).build();
                     f.addInput(x);
                     auto vm = ops::varMean(x, {0});
                     f.addOutput(vm.var);
                     f.addOutput(vm.mean);
                     f.addOutput(ops::rsqrt(ops::add(vm.var, 1e-5)));
                   },
                   [](ir::Fusion& f) {
                     auto* avg = welfordAvg(f);
                     avg->split(0, 128);
                     avg->axis(0)->parallelize(ParallelType::BIDx);
                     avg->axis(1)->parallelize(ParallelType::TIDx);
                     scheduleLike(f, avg);
                   },
                   [] { return std::vector<eval::Argument>{randomTensor({5000}, 33)}; }, 5000});
  // The same per row: 3 rows on BIDy (one grid-reduction segment each), 1000 over 8 x 128.
  cases.push_back({"GridVarMeanRowsOnBIDy",
                   [](ir::Fusion& f) {
                     auto* x = ops::TensorBuilder().shape({-1, -1}).build();
                     f.addInput(x);
                     auto vm = ops::varMean(x, {1});
                     f.addOutput(vm.var);
                     f.addOutput(ops::rsqrt(ops::add(vm.var, 1e-5)));
                   },
                   [](ir::Fusion& f) {
                     auto* avg = welfordAvg(f);
                     avg->split(1, 128);
                     avg->axis(0)->parallelize(ParallelType::BIDy);
                     avg->axis(1)->parallelize(ParallelType::BIDx);
                     avg->axis(2)->parallelize(ParallelType::TIDx);
                     scheduleLike(f, avg);
                   },
                   [] { return std::vector<eval::Argument>{randomTensor({3, 1000}, 34)}; }, 1000});
  // Grid sum per row followed by pointwise math on the sum (exp(s / 100) + s); rows on BIDy.
  cases.push_back({"GridSumThenPointwise",
                   [](ir::Fusion& f) {
                     auto* x = ops::TensorBuilder().shape({-1, -1}).build();
                     f.addInput(x);
                     auto* s = ops::sum(x, {1});
                     f.addOutput(ops::add(ops::exp(ops::div(s, 100.0)), s));
                   },
                   [](ir::Fusion& f) {
                     auto* s = f.outputs()[0]->definition()->input(1)->as<ir::TensorView>();
                     s->split(1, 128);
                     s->axis(0)->parallelize(ParallelType::BIDy);
                     s->axis(1)->parallelize(ParallelType::BIDx);
                     s->axis(2)->parallelize(ParallelType::TIDx);
                     scheduleLike(f, s);
                   },
                   [] { return std::vector<eval::Argument>{randomTensor({3, 1000}, 35)}; }, 1000});
  // Outer grid sum (columns on TIDx, the reduced dim on BIDx x TIDy) scaled per column.
  cases.push_back({"OuterGridSumThenScale",
                   [](ir::Fusion& f) {
                     auto* x = ops::TensorBuilder().shape({-1, -1}).build();
                     f.addInput(x);
                     f.addOutput(ops::mul(ops::sum(x, {0}), 0.5));
                   },
                   [](ir::Fusion& f) {
                     auto* s = f.outputs()[0]->definition()->input(0)->as<ir::TensorView>();
                     s->split(0, 8)->reorder(std::vector<int64_t>{2, 0, 1});  // [I, R/8, 8]
                     s->axis(0)->parallelize(ParallelType::TIDx);
                     s->axis(1)->parallelize(ParallelType::BIDx);
                     s->axis(2)->parallelize(ParallelType::TIDy);
                     scheduleLike(f, s);
                   },
                   [] { return std::vector<eval::Argument>{randomTensor({150, 20}, 36)}; }, 150});
  return cases;
}

}  // namespace loom::test
