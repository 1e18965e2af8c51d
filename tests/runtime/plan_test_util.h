// SPDX-License-Identifier: Apache-2.0
// Small hand-scheduled fusions and reference checks shared by the launch-plan tests (emu, gpu).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "loom/eval/compare.h"
#include "loom/eval/reference_evaluator.h"
#include "loom/exec/kernel_executor.h"
#include "loom/ir/ir.h"
#include "loom/ops/ops.h"
#include "loom/transform/inlining.h"
#include "loom/transform/propagation.h"

namespace loom::test {

inline Tensor randomTensor(std::vector<int64_t> sizes, uint64_t seed) {
  Tensor t = Tensor::empty(std::move(sizes), DataType::Float32);
  fillRandom(t, seed);
  return t;
}

// Splits every tensor like `ref`, copies its parallel types, inlines most.
inline void scheduleLike(ir::Fusion& f, ir::TensorView* ref) {
  transform::propagateTransforms(ref);
  transform::parallelizeAllLike(ref);
  transform::inlineMost(f);
}

inline ir::TensorView* outputTv(ir::Fusion& f, size_t i = 0) {
  return f.outputs().at(i)->as<ir::TensorView>();
}

/// (x[I0, I1] + y[I0, I1]) * alpha, flattened and split by 128 on BIDx/TIDx. With
/// `with_scalar` false the scale is the constant 2.
inline std::unique_ptr<ir::Fusion> scaledAddFusion(bool with_scalar) {
  auto f = std::make_unique<ir::Fusion>();
  ir::FusionGuard g(f.get());
  auto* x = ops::TensorBuilder().shape({-1, -1}).build();
  auto* y = ops::TensorBuilder().shape({-1, -1}).build();
  f->addInput(x);
  f->addInput(y);
  ir::TensorView* out = nullptr;
  if (with_scalar) {
    auto* alpha = ir::IrBuilder::symbolic(DataType::Float64);
    f->addInput(alpha);
    out = ops::mul(ops::add(x, y), alpha);
  } else {
    out = ops::mul(ops::add(x, y), 2.0);
  }
  f->addOutput(out);
  return f;
}

inline void schedulePointwise(ir::Fusion& f) {
  ir::FusionGuard g(&f);
  ir::TensorView* out = outputTv(f);
  out->merge(0)->split(0, 128);
  out->axis(0)->parallelize(ir::ParallelType::BIDx);
  out->axis(1)->parallelize(ir::ParallelType::TIDx);
  scheduleLike(f, out);
}

/// sum(x[I0, I1], dim 1): rows on BIDy, the reduction on BIDx x TIDx (a grid reduction with
/// work buffers and semaphores).
inline std::unique_ptr<ir::Fusion> gridSumFusion() {
  auto f = std::make_unique<ir::Fusion>();
  ir::FusionGuard g(f.get());
  auto* x = ops::TensorBuilder().shape({-1, -1}).build();
  f->addInput(x);
  f->addOutput(ops::sum(x, {1}));
  return f;
}

inline void scheduleGridSum(ir::Fusion& f) {
  ir::FusionGuard g(&f);
  ir::TensorView* out = outputTv(f);
  out->split(1, 128);
  out->axis(0)->parallelize(ir::ParallelType::BIDy);
  out->axis(1)->parallelize(ir::ParallelType::BIDx);
  out->axis(2)->parallelize(ir::ParallelType::TIDx);
  scheduleLike(f, out);
}

/// x + 1 and x itself as the two outputs (the second aliases the input).
inline std::unique_ptr<ir::Fusion> aliasFusion() {
  auto f = std::make_unique<ir::Fusion>();
  ir::FusionGuard g(f.get());
  auto* x = ops::TensorBuilder().shape({-1}).build();
  f->addInput(x);
  f->addOutput(ops::add(x, 1.0));
  f->addOutput(x);
  return f;
}

inline void scheduleAlias(ir::Fusion& f) {
  ir::FusionGuard g(&f);
  ir::TensorView* out = outputTv(f);
  out->split(0, 64);
  out->axis(0)->parallelize(ir::ParallelType::BIDx);
  out->axis(1)->parallelize(ir::ParallelType::TIDx);
}

/// `got` (host tensors) matches the reference evaluator on `reference` within the default
/// tolerance; `what` names the run in failures.
inline void expectMatches(const ir::Fusion& reference, const std::vector<eval::Argument>& args,
                          const std::vector<Tensor>& got, int64_t reduction_size,
                          const std::string& what) {
  std::vector<Tensor> expected = eval::evaluateFusion(reference, args);
  ASSERT_EQ(got.size(), expected.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_TRUE(got[i].device().isCpu()) << what;
    auto err = eval::expectClose(got[i].contiguous(), expected[i],
                                 eval::defaultTolerance(expected[i].dtype(), reduction_size),
                                 what + " output " + std::to_string(i));
    EXPECT_FALSE(err.has_value()) << *err;
  }
}

/// The message of the UserError `f` throws; fails the test when it throws nothing.
template <typename F>
std::string userErrorOf(F&& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a UserError";
  return "";
}

}  // namespace loom::test
