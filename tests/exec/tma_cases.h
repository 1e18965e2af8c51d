// SPDX-License-Identifier: Apache-2.0
// Hand-scheduled bulk (TMA) copies: a TmaCopy between global and shared memory whose Bulk loop
// IDs are the box, in the forms nvFuser's TMA tutorial writes them (a 1-D box per block, several
// boxes per block, a 2-D box of non-adjacent axes, a TMA store whose boxes are issued by TIDx
// threads, TMA loads next to an unrolled consumer). Run on both backends (tma_exec_test.cpp) and
// compiled by NVRTC (nvrtc_test.cpp).
#pragma once

#include <vector>

#include "exec/exec_cases.h"
#include "loom/transform/cache.h"

namespace loom::test {

inline std::vector<ExecCase> tmaCases() {
  using ir::LoadStoreOpType;
  using ir::MemoryType;
  using ir::ParallelType;
  std::vector<ExecCase> cases;
  auto copy3d = [](ir::Fusion& f) {
    auto* x = ops::TensorBuilder().shape({-1, -1, -1}).contiguity({true, true, true}).build();
    f.addInput(x);
    f.addOutput(ops::set(x));
  };
  auto input3d = [] { return std::vector<eval::Argument>{randomTensor({5, 3, 300}, 21)}; };
  // A TMA load of one 256-element box per block (flattened [5 * 3 * 300], split by 256: the last
  // box is partial), read by 256 TIDx threads.
  cases.push_back({"TmaLoadOneBoxPerBlock", copy3d,
                   [](ir::Fusion& f) {
                     auto* x = f.inputs()[0]->as<ir::TensorView>();
                     auto* out = output(f);
                     auto* smem =
                         transform::cacheAfter(x, MemoryType::Shared, LoadStoreOpType::TmaCopy);
                     for (auto* t : {smem, out}) t->merge(0)->merge(0)->split(0, 256);
                     smem->axis(0)->parallelize(ParallelType::BIDx);
                     smem->axis(1)->parallelize(ParallelType::Bulk);
                     out->axis(0)->parallelize(ParallelType::BIDx);
                     out->axis(1)->parallelize(ParallelType::TIDx);
                   },
                   input3d});
  // Four 256-element boxes per block, loaded in a serial loop around the box, then read by the
  // block's 128 threads twice over.
  cases.push_back({"TmaLoadSeveralBoxesPerBlock", copy3d,
                   [](ir::Fusion& f) {
                     auto* x = f.inputs()[0]->as<ir::TensorView>();
                     auto* out = output(f);
                     auto* smem =
                         transform::cacheAfter(x, MemoryType::Shared, LoadStoreOpType::TmaCopy);
                     for (auto* t : {smem, out})
                       t->merge(0)->merge(0)->split(0, 1024)->split(1, 256);
                     smem->axis(0)->parallelize(ParallelType::BIDx);
                     smem->axis(2)->parallelize(ParallelType::Bulk);
                     out->split(2, 128);
                     out->axis(0)->parallelize(ParallelType::BIDx);
                     out->axis(3)->parallelize(ParallelType::TIDx);
                   },
                   input3d});
  // A 2-D box [4, 64] of non-adjacent loop IDs of the shared copy ([BIDx, 4 bulk, serial,
  // 64 bulk]): the inner box loop is shared by the threads, the outer one runs on each.
  cases.push_back(
      {"TmaLoadTwoDimensionalBox",
       [](ir::Fusion& f) {
         auto* x = ops::TensorBuilder().shape({-1, -1}).contiguity({true, true}).build();
         f.addInput(x);
         f.addOutput(ops::mul(x, 3.0));
       },
       [](ir::Fusion& f) {
         auto* x = f.inputs()[0]->as<ir::TensorView>();
         auto* out = output(f);
         auto* smem = transform::cacheAfter(x, MemoryType::Shared, LoadStoreOpType::TmaCopy);
         // [rows / 4, 4, cols / 128, 2, 64] -> [rows / 4, 4, 2, cols / 128, 64]
         for (auto* t : {smem, out}) t->split(0, 4)->split(2, 128)->split(3, 64);
         smem->reorder(std::unordered_map<int64_t, int64_t>{{2, 3}, {3, 2}});
         smem->axis(0)->parallelize(ParallelType::BIDx);
         smem->axis(1)->parallelize(ParallelType::Bulk);
         smem->axis(4)->parallelize(ParallelType::Bulk);
         out->axis(0)->parallelize(ParallelType::BIDx);
         out->axis(4)->parallelize(ParallelType::TIDx);
         transform::computeAt(smem, out, 1);
       },
       [] {
         return std::vector<eval::Argument>{randomTensor({10, 300}, 22)};
       }});
  // A TMA store: the shared cache computed by 256 TIDx threads, stored by four TIDx threads,
  // each issuing one 256-element box (the launch's other threads have no box to copy).
  cases.push_back({"TmaStoreBoxPerThread", copy3d,
                   [](ir::Fusion& f) {
                     auto* out = output(f);
                     auto* smem =
                         transform::cacheBefore(out, MemoryType::Shared, LoadStoreOpType::TmaCopy);
                     for (auto* t : {smem, out}) t->merge(0)->merge(0)->split(0, 256)->split(0, 4);
                     out->axis(0)->parallelize(ParallelType::BIDx);
                     out->axis(1)->parallelize(ParallelType::TIDx);
                     out->axis(2)->parallelize(ParallelType::Bulk);
                     smem->axis(0)->parallelize(ParallelType::BIDx);
                     smem->axis(2)->parallelize(ParallelType::TIDx);
                   },
                   input3d});
  // Two TMA loads feeding an add computed on [BIDx, unroll 4, TIDx 256] and a TMA store, all
  // inlined as far as they may go: the loads' TIDx axes meet the add's unrolled one, so they
  // stay in loops of their own below the block loop.
  cases.push_back(
      {"TmaLoadsAddTmaStore",
       [](ir::Fusion& f) {
         auto* x = ops::TensorBuilder().shape({-1, -1}).contiguity({true, true}).build();
         auto* y = ops::TensorBuilder().shape({-1, -1}).contiguity({true, true}).build();
         f.addInput(x);
         f.addInput(y);
         f.addOutput(ops::add(x, y));
       },
       [](ir::Fusion& f) {
         auto* x = f.inputs()[0]->as<ir::TensorView>();
         auto* y = f.inputs()[1]->as<ir::TensorView>();
         auto* out = output(f);
         auto* xs = transform::cacheAfter(x, MemoryType::Shared, LoadStoreOpType::TmaCopy);
         auto* ys = transform::cacheAfter(y, MemoryType::Shared, LoadStoreOpType::TmaCopy);
         auto* sum = transform::cacheBefore(out, MemoryType::Shared, LoadStoreOpType::TmaCopy);
         for (auto* t : {xs, ys, sum, out}) t->merge(0)->split(0, 256)->split(0, 4);
         for (auto* t : {xs, ys, out}) {
           t->axis(0)->parallelize(ParallelType::BIDx);
           t->axis(1)->parallelize(ParallelType::TIDx);
           t->axis(2)->parallelize(ParallelType::Bulk);
         }
         sum->axis(0)->parallelize(ParallelType::BIDx);
         sum->axis(1)->parallelize(ParallelType::Unroll);
         sum->axis(2)->parallelize(ParallelType::TIDx);
         transform::inlineMost(f);
       },
       [] {
         return std::vector<eval::Argument>{randomTensor({6, 700}, 23), randomTensor({6, 700}, 24)};
       }});
  return cases;
}

}  // namespace loom::test
