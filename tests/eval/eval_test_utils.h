// SPDX-License-Identifier: Apache-2.0
// Shared fixture and helpers for the eval tests: host tensors from value lists, and fusions built
// with ops (or directly with IrBuilder where an op does not build the IR a test needs).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "loom/eval/argument.h"
#include "loom/eval/reference_evaluator.h"
#include "loom/ir/ir.h"
#include "loom/ops/ops.h"

namespace loom::eval::testing {

using ir::TensorView;

/// A contiguous host tensor holding `values` (row-major), stored as `dtype`.
inline Tensor makeTensor(std::vector<int64_t> sizes, const std::vector<double>& values,
                         DataType dtype = DataType::Float32) {
  Tensor t = Tensor::empty(std::move(sizes), dtype);
  EXPECT_EQ(t.numel(), int64_t(values.size()));
  for (size_t i = 0; i < values.size(); ++i) t.setDoubleLinear(int64_t(i), values[i]);
  return t;
}

/// The elements of a host tensor in row-major order, as doubles.
inline std::vector<double> valuesOf(const Tensor& t) {
  std::vector<double> out;
  for (int64_t i = 0; i < t.numel(); ++i) out.push_back(t.getDoubleLinear(i));
  return out;
}

/// evaluateFusion with the arguments written as a braced list.
inline std::vector<Tensor> evaluateWith(const ir::Fusion& fusion, std::vector<Argument> args) {
  return evaluateFusion(fusion, args);
}

/// Runs `fn`, expects a UserError and returns its message ("" and a failure otherwise).
inline std::string userErrorOf(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const UserError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected a UserError, got: " << e.what();
    return "";
  }
  ADD_FAILURE() << "expected a UserError, nothing was thrown";
  return "";
}

#define EXPECT_HAS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "message: " << (haystack)

/// Every test builds in its own fusion, made active for the test's lifetime.
class EvalTest : public ::testing::Test {
 protected:
  TensorView* input(std::vector<int64_t> sizes, DataType dtype = DataType::Float32) {
    TensorView* tv = ops::TensorBuilder().shape(std::move(sizes)).dtype(dtype).build();
    fusion_.addInput(tv);
    return tv;
  }

  /// Evaluates the fusion with these outputs (added in order) on `args`.
  std::vector<Tensor> run(std::vector<TensorView*> outs, std::vector<Argument> args) {
    for (auto* tv : outs) {
      if (!fusion_.isOutput(tv)) fusion_.addOutput(tv);
    }
    return evaluateFusion(fusion_, args);
  }

  /// Values of the single output `out` on `args`.
  std::vector<double> eval1(TensorView* out, std::vector<Argument> args) {
    auto outs = run({out}, std::move(args));
    EXPECT_EQ(outs.size(), 1u);
    return valuesOf(outs.at(0));
  }

  /// A pointwise expr built directly: output with fresh IDs like `like`, of `dtype`.
  TensorView* newLike(TensorView* like, DataType dtype) {
    std::vector<ir::IterDomain*> ids;
    for (auto* id : ir::TensorDomain::noReductions(like->logical())) {
      ids.push_back(id->cloneWithoutDefinition());
    }
    return ir::IrBuilder::create<TensorView>(ir::IrBuilder::create<ir::TensorDomain>(ids), dtype);
  }
  TensorView* binaryDirect(ir::BinaryOpType op, TensorView* a, TensorView* b, DataType dtype) {
    TensorView* out = newLike(a, dtype);
    ir::IrBuilder::create<ir::BinaryOp>(op, out, a, b);
    return out;
  }
  TensorView* unaryDirect(ir::UnaryOpType op, TensorView* a, DataType dtype) {
    TensorView* out = newLike(a, dtype);
    ir::IrBuilder::create<ir::UnaryOp>(op, out, a);
    return out;
  }

  ir::Fusion fusion_;
  ir::FusionGuard guard_{&fusion_};
};

/// Element-wise EXPECT_DOUBLE_EQ that treats NaN as equal to NaN.
inline void expectValues(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "element " << i << " is " << got[i] << ", want nan";
    } else {
      EXPECT_DOUBLE_EQ(got[i], want[i]) << "element " << i;
    }
  }
}

}  // namespace loom::eval::testing
