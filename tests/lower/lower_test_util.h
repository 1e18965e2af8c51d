// SPDX-License-Identifier: Apache-2.0
// Small scheduled fusions for the lowering pass tests, and before/after printing of one pass.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "loom/ir/ir.h"
#include "loom/lower/lower.h"
#include "loom/ops/ops.h"
#include "loom/support/error.h"
#include "loom/transform/inlining.h"
#include "loom/transform/propagation.h"

namespace loom::test {

/// T2 = exp(T0) * 2 over [10] f32, split by 4: [ceilDiv(10, 4), 4] (non-divisible), fully inlined.
inline std::unique_ptr<ir::Fusion> splitPointwise() {
  auto f = std::make_unique<ir::Fusion>();
  ir::FusionGuard guard(f.get());
  auto* x = ops::TensorBuilder().shape({10}).build();
  f->addInput(x);
  auto* out = ops::mul(ops::exp(x), 2.0);
  f->addOutput(out);
  out->split(0, 4);
  transform::propagateTransforms(out);
  transform::inlineMost(*f);
  return f;
}

/// T1 = sum(T0[6, 8], dim 1): rows on BIDx, the reduction on TIDx.
inline std::unique_ptr<ir::Fusion> blockSum() {
  auto f = std::make_unique<ir::Fusion>();
  ir::FusionGuard guard(f.get());
  auto* x = ops::TensorBuilder().shape({6, 8}).build();
  f->addInput(x);
  auto* out = ops::sum(x, {1});
  f->addOutput(out);
  out->axis(0)->parallelize(ir::ParallelType::BIDx);
  out->axis(1)->parallelize(ir::ParallelType::TIDx);
  return f;
}

/// Two outputs with TIDx loops of different extents: neg(T0[256]) split by 128 and neg(T1[192])
/// split by 96, so the launch has 128 threads and the 96-wide loop is padded.
inline std::unique_ptr<ir::Fusion> mismatchedThreadLoops() {
  auto f = std::make_unique<ir::Fusion>();
  ir::FusionGuard guard(f.get());
  auto* x = ops::TensorBuilder().shape({256}).build();
  auto* y = ops::TensorBuilder().shape({192}).build();
  f->addInput(x);
  f->addInput(y);
  auto* a = ops::neg(x);
  auto* b = ops::neg(y);
  f->addOutput(a);
  f->addOutput(b);
  a->split(0, 128);
  b->split(0, 96);
  for (auto* t : {a, b}) t->axis(1)->parallelize(ir::ParallelType::TIDx);
  return f;
}

/// The kernel IR text after the pass before `pass` and after `pass`.
struct BeforeAfter {
  std::string before;
  std::string after;
};
inline BeforeAfter lowerAround(const ir::Fusion& f, std::string_view pass) {
  std::string_view prev;
  for (const lower::Pass& p : lower::pipeline()) {
    if (p.name == pass) break;
    prev = p.name;
  }
  return {kir::toString(*lower::lowerFusionUntil(f, prev)),
          kir::toString(*lower::lowerFusionUntil(f, pass))};
}

/// Lowers `f` expecting a UserError whose message contains `text`.
inline void expectLoweringError(ir::Fusion& f, const std::string& text) {
  try {
    lower::lowerFusion(f);
    ADD_FAILURE() << "lowered; expected an error containing: " << text;
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
}

}  // namespace loom::test
