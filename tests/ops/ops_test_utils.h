// SPDX-License-Identifier: Apache-2.0
// Shared fixture and inspection helpers for the ops tests.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <unordered_set>
#include <vector>

#include "loom/ir/ir.h"
#include "loom/ops/ops.h"

namespace loom::ops::testing {

using ir::IterDomain;
using ir::IterType;

/// Every test builds in its own fusion, made active for the test's lifetime.
class OpsTest : public ::testing::Test {
 protected:
  TensorView* input(std::vector<int64_t> sizes, DataType dtype = DataType::Float32) {
    TensorView* tv = TensorBuilder().shape(std::move(sizes)).dtype(dtype).build();
    fusion_.addInput(tv);
    return tv;
  }

  /// Marks the tensors as outputs and runs the IR verifier.
  void verifyOutputs(std::vector<TensorView*> outs) {
    for (auto* tv : outs) {
      if (!fusion_.isOutput(tv)) fusion_.addOutput(tv);
    }
    EXPECT_NO_THROW(ir::verify(fusion_));
  }

  ir::Fusion fusion_;
  ir::FusionGuard guard_{&fusion_};
};

/// The user-visible logical sizes (reductions skipped); -1 for a symbolic extent.
inline std::vector<int64_t> sizes(const TensorView* tv) {
  std::vector<int64_t> out;
  for (auto* id : ir::TensorDomain::noReductions(tv->logical())) {
    out.push_back(id->logicalExtent()->constInt().value_or(-1));
  }
  return out;
}

/// IterTypes of the whole logical domain, e.g. "iter,bcast,red".
inline std::string types(const TensorView* tv) {
  std::string out;
  for (auto* id : tv->logical()) {
    if (!out.empty()) out += ",";
    out += std::string(ir::iterTypeName(id->iterType()));
  }
  return out;
}

/// Runs `fn`, expects a UserError and returns its message ("" and a failure otherwise).
inline std::string userError(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const UserError& e) {
    return e.message();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected a UserError, got: " << e.what();
    return "";
  }
  ADD_FAILURE() << "expected a UserError, nothing was thrown";
  return "";
}

#define EXPECT_HAS(msg, text) \
  EXPECT_NE(std::string(msg).find(text), std::string::npos) << "message: " << (msg)

/// True when no IterDomain object appears in two tensors' logical/root domains.
inline bool idsDisjoint(const std::vector<TensorView*>& tvs) {
  std::unordered_set<const IterDomain*> seen;
  for (auto* tv : tvs) {
    std::unordered_set<const IterDomain*> mine(tv->logical().begin(), tv->logical().end());
    mine.insert(tv->root().begin(), tv->root().end());
    for (auto* id : mine) {
      if (!seen.insert(id).second) return false;
    }
  }
  return true;
}

}  // namespace loom::ops::testing
