// SPDX-License-Identifier: Apache-2.0
// Hand-scheduled Welford, grid and outer reductions shared by the reduction execution tests (both
// backends) and their NVRTC test.
#pragma once

#include "exec/exec_cases.h"

namespace loom::test {

inline std::vector<ExecCase> reductionCases() {
  using ir::ParallelType;
  std::vector<ExecCase> cases;
  // var_mean over the last dim: rows on BIDx, block Welford over TIDx; 300 over 128 threads.
  cases.push_back({"WelfordBlockVarMean",
                   [](ir::Fusion& f) {
                     auto* x = ops::TensorBuilder().shape({-1, -1}).build();
                     f.addInput(x);
                     auto vm = ops::varMean(x, {1});
                     f.addOutput(vm.var);
                     f.addOutput(vm.mean);
                   },
                   [](ir::Fusion& f) {
                     auto* avg = output(f, 1);
                     while (!avg->definition()->isA<ir::WelfordOp>()) {
                       avg = avg->definition()->input(0)->as<ir::TensorView>();
                     }
                     avg->split(1, 128);
                     avg->axis(0)->parallelize(ParallelType::BIDx);
                     avg->axis(2)->parallelize(ParallelType::TIDx);
                     scheduleLike(f, avg);
                   },
                   [] { return std::vector<eval::Argument>{randomTensor({6, 300}, 11)}; }, 300});
  // Grid Welford: one row of 5000 over BIDx x TIDx (40 x 128); avg, m2, n are the outputs.
  cases.push_back({"WelfordGrid",
                   [](ir::Fusion& f) {
                     auto* x = ops::TensorBuilder().shape({5000}).build();
                     f.addInput(x);
                     auto w = ops::welford(x, {0});
                     f.addOutput(w.avg);
                     f.addOutput(w.m2);
                     f.addOutput(w.n);
                   },
                   [](ir::Fusion& f) {
                     auto* avg = output(f, 0);
                     avg->split(0, 128);
                     avg->axis(0)->parallelize(ParallelType::BIDx);
                     avg->axis(1)->parallelize(ParallelType::TIDx);
                     scheduleLike(f, avg);
                   },
                   [] { return std::vector<eval::Argument>{randomTensor({5000}, 12)}; }, 5000});
  // Grid sum over the last dim: rows on BIDy (one segment each), the reduction on BIDx x TIDx.
  cases.push_back({"GridSum",
                   [](ir::Fusion& f) {
                     auto* x = ops::TensorBuilder().shape({-1, -1}).build();
                     f.addInput(x);
                     f.addOutput(ops::sum(x, {1}));
                   },
                   [](ir::Fusion& f) {
                     auto* out = output(f);
                     out->split(1, 128);
                     out->axis(0)->parallelize(ParallelType::BIDy);
                     out->axis(1)->parallelize(ParallelType::BIDx);
                     out->axis(2)->parallelize(ParallelType::TIDx);
                     scheduleLike(f, out);
                   },
                   [] { return std::vector<eval::Argument>{randomTensor({3, 1000}, 13)}; }, 1000});
  // Grid sum over blockIdx.y: rows on BIDx (one segment each), the reduction on BIDy x TIDx.
  cases.push_back({"GridSumOverBIDy",
                   [](ir::Fusion& f) {
                     auto* x = ops::TensorBuilder().shape({-1, -1}).build();
                     f.addInput(x);
                     f.addOutput(ops::sum(x, {1}));
                   },
                   [](ir::Fusion& f) {
                     auto* out = output(f);
                     out->split(1, 128);
                     out->axis(0)->parallelize(ParallelType::BIDx);
                     out->axis(1)->parallelize(ParallelType::BIDy);
                     out->axis(2)->parallelize(ParallelType::TIDx);
                     scheduleLike(f, out);
                   },
                   [] { return std::vector<eval::Argument>{randomTensor({5, 1000}, 17)}; }, 1000});
  // Grid max over blockIdx.x and blockIdx.z together, rows on BIDy: [I, R/512 BIDz, 4 BIDx,
  // 128 TIDx]; 3000 % 512 != 0, so the last z blocks are partly masked.
  cases.push_back({"GridMaxOverBIDxAndBIDz",
                   [](ir::Fusion& f) {
                     auto* x = ops::TensorBuilder().shape({-1, -1}).build();
                     f.addInput(x);
                     f.addOutput(ops::max(x, {1}));
                   },
                   [](ir::Fusion& f) {
                     auto* out = output(f);
                     out->split(1, 128)->split(1, 4);
                     out->axis(0)->parallelize(ParallelType::BIDy);
                     out->axis(1)->parallelize(ParallelType::BIDz);
                     out->axis(2)->parallelize(ParallelType::BIDx);
                     out->axis(3)->parallelize(ParallelType::TIDx);
                     scheduleLike(f, out);
                   },
                   [] { return std::vector<eval::Argument>{randomTensor({3, 3000}, 18)}; }, 3000});
  // var_mean of 4 rows in a serial loop, each a grid Welford over BIDy x TIDx: one entrance per
  // row, var = m2 / (n - 1) computed in the same iteration by that row's last block.
  cases.push_back({"WelfordGridOverBIDyInSerialLoop",
                   [](ir::Fusion& f) {
                     auto* x = ops::TensorBuilder().shape({4, 2000}).build();
                     f.addInput(x);
                     auto vm = ops::varMean(x, {1});
                     f.addOutput(vm.var);
                     f.addOutput(vm.mean);
                   },
                   [](ir::Fusion& f) {
                     auto* avg = output(f, 1);
                     while (!avg->definition()->isA<ir::WelfordOp>()) {
                       avg = avg->definition()->input(0)->as<ir::TensorView>();
                     }
                     avg->split(1, 128);
                     avg->axis(1)->parallelize(ParallelType::BIDy);
                     avg->axis(2)->parallelize(ParallelType::TIDx);
                     scheduleLike(f, avg);
                   },
                   [] { return std::vector<eval::Argument>{randomTensor({4, 2000}, 19)}; }, 2000});
  // Outer reduction, serial: sum over dim 0 of [50, 37], columns on TIDx.
  cases.push_back({"OuterSerialSum",
                   [](ir::Fusion& f) {
                     auto* x = ops::TensorBuilder().shape({50, 37}).build();
                     f.addInput(x);
                     f.addOutput(ops::sum(x, {0}));
                   },
                   [](ir::Fusion& f) {
                     auto* out = output(f);
                     out->reorder(std::vector<int64_t>{1, 0});  // [I, R]: the result write needs the column loop
                     out->axis(0)->parallelize(ParallelType::TIDx);
                     scheduleLike(f, out);
                   },
                   [] { return std::vector<eval::Argument>{randomTensor({50, 37}, 14)}; }, 50});
  // Outer reduction over TIDy: [I TIDx, R/16, 16 TIDy], block reduce over y; 70 % 16 != 0.
  cases.push_back({"OuterBlockSumTIDy",
                   [](ir::Fusion& f) {
                     auto* x = ops::TensorBuilder().shape({-1, -1}).build();
                     f.addInput(x);
                     f.addOutput(ops::sum(x, {0}));
                   },
                   [](ir::Fusion& f) {
                     auto* out = output(f);
                     out->split(0, 16)->reorder(std::vector<int64_t>{2, 0, 1});  // [I, R/16, 16]
                     out->axis(0)->parallelize(ParallelType::TIDx);
                     out->axis(2)->parallelize(ParallelType::TIDy);
                     scheduleLike(f, out);
                   },
                   [] { return std::vector<eval::Argument>{randomTensor({70, 24}, 15)}; }, 70});
  // Outer grid reduction: [I TIDx, R/8 BIDx, 8 TIDy], block reduce over y then grid over x.
  cases.push_back({"OuterGridSum",
                   [](ir::Fusion& f) {
                     auto* x = ops::TensorBuilder().shape({-1, -1}).build();
                     f.addInput(x);
                     f.addOutput(ops::sum(x, {0}));
                   },
                   [](ir::Fusion& f) {
                     auto* out = output(f);
                     out->split(0, 8)->reorder(std::vector<int64_t>{2, 0, 1});  // [I, R/8, 8]
                     out->axis(0)->parallelize(ParallelType::TIDx);
                     out->axis(1)->parallelize(ParallelType::BIDx);
                     out->axis(2)->parallelize(ParallelType::TIDy);
                     scheduleLike(f, out);
                   },
                   [] { return std::vector<eval::Argument>{randomTensor({203, 24}, 16)}; }, 203});
  return cases;
}

}  // namespace loom::test
