// SPDX-License-Identifier: Apache-2.0
// TensorDomain: the root, logical, allocation and loop domains of a tensor, and contiguity.
// See the IR contract in base.h.
#pragma once

#include <optional>
#include <vector>

#include "loom/ir/base.h"

namespace loom::ir {

class IterDomain;

using Contiguity = std::vector<std::optional<bool>>;

class TensorDomain : public Val {
 public:
  LOOM_DECLARE_CLONE(TensorDomain)

  /// logical == loop, no root, no allocation. Empty contiguity means "fully contiguous".
  explicit TensorDomain(std::vector<IterDomain*> logical, Contiguity contiguity = {});
  /// Every domain given explicitly; empty root/allocation mean "none"; empty loop means logical.
  TensorDomain(std::vector<IterDomain*> root, std::vector<IterDomain*> logical,
               std::vector<IterDomain*> allocation, std::vector<IterDomain*> loop,
               Contiguity contiguity = {});
  TensorDomain(const TensorDomain* src, IrCloner& cloner);

  const std::vector<IterDomain*>& root() const { return root_; }
  const std::vector<IterDomain*>& logical() const { return logical_; }
  const std::vector<IterDomain*>& allocation() const { return allocation_; }
  const std::vector<IterDomain*>& loop() const { return loop_; }
  bool hasRoot() const { return !root_.empty(); }
  bool hasAllocation() const { return !allocation_.empty(); }
  /// root when present, else logical.
  const std::vector<IterDomain*>& maybeRoot() const { return hasRoot() ? root_ : logical_; }
  /// allocation when present, else logical.
  const std::vector<IterDomain*>& maybeAllocation() const {
    return hasAllocation() ? allocation_ : logical_;
  }
  /// Aligned with maybeAllocation().
  const Contiguity& contiguity() const { return contiguity_; }

  int64_t nDims() const { return int64_t(loop_.size()); }
  /// Loop ID at `axis` (negative counts from the end). Throws UserError when out of range.
  IterDomain* axis(int64_t axis) const;
  /// Normalizes a possibly negative loop axis; throws UserError when out of range.
  int64_t normalizeAxis(int64_t axis) const;

  bool hasReduction() const;
  bool hasBroadcast() const;

  /// Replaces the loop domain. It must be reachable from logical through Split/Merge exprs
  /// (checked by the verifier).
  void setLoopDomain(std::vector<IterDomain*> loop);
  /// Replaces the allocation domain and its contiguity (empty contiguity: fully contiguous).
  /// Passing the logical domain itself clears the explicit allocation.
  void setAllocationDomain(std::vector<IterDomain*> allocation, Contiguity contiguity = {});
  /// Replaces the contiguity flags; size must match maybeAllocation().
  void setContiguity(Contiguity contiguity);

  /// `ids` without reduction IDs / without broadcast IDs.
  static std::vector<IterDomain*> noReductions(const std::vector<IterDomain*>& ids);
  static std::vector<IterDomain*> noBroadcasts(const std::vector<IterDomain*>& ids);
  /// true for Iteration/Symbolic IDs (or `contiguous`), nullopt for broadcast and reduction IDs.
  static Contiguity defaultContiguity(const std::vector<IterDomain*>& ids, bool contiguous = true);

  std::string toString() const override;

 private:
  void validateContiguity(const Contiguity& c) const;

  std::vector<IterDomain*> root_;
  std::vector<IterDomain*> logical_;
  std::vector<IterDomain*> allocation_;
  std::vector<IterDomain*> loop_;
  Contiguity contiguity_;
};

}  // namespace loom::ir
