// SPDX-License-Identifier: Apache-2.0
// IterDomain transforms: Split, Merge and Resize. A tensor's schedule is the graph of these exprs
// between its root/logical, allocation and loop domains. Resize appears only between root and
// logical (slice, pad); allocation and loop derive from logical through Split and Merge alone.
#pragma once

#include "loom/ir/base.h"

namespace loom::ir {

class IterDomain;
class Scalar;

/// in -> (outer, inner). inner_split: inner extent = factor, outer = ceilDiv(in, factor).
/// Outer split: outer extent = factor, inner = ceilDiv(in, factor).
class Split : public Expr {
 public:
  LOOM_DECLARE_CLONE(Split)
  Split(IterDomain* outer, IterDomain* inner, IterDomain* in, Scalar* factor, bool inner_split);
  Split(const Split* src, IrCloner& cloner);

  IterDomain* in() const;
  IterDomain* outer() const;
  IterDomain* inner() const;
  Scalar* factor() const { return factor_; }
  bool innerSplit() const { return inner_split_; }

  std::vector<Val*> attributeVals() const override;
  std::string opName() const override;
  bool sameAttributes(const Expr* other) const override;

 private:
  Scalar* factor_;
  bool inner_split_;
};

/// (outer, inner) -> out, with out = outer_index * inner_extent + inner_index.
class Merge : public Expr {
 public:
  LOOM_DECLARE_CLONE(Merge)
  Merge(IterDomain* out, IterDomain* outer, IterDomain* inner);
  Merge(const Merge* src, IrCloner& cloner);

  IterDomain* out() const;
  IterDomain* outer() const;
  IterDomain* inner() const;

  std::string opName() const override;
  bool sameAttributes(const Expr* other) const override;
};

/// in -> out, widened by `left` elements before and `right` elements after (negative values
/// shrink): out extent = left + logical extent of in + right, and out index i is in index
/// i - left; out indices outside [left, left + extent(in)) have no input element (pad fills
/// them). Made by slice (left = -start, right = stop - extent) and pad (the pad widths).
class Resize : public Expr {
 public:
  LOOM_DECLARE_CLONE(Resize)
  Resize(IterDomain* out, IterDomain* in, Scalar* left, Scalar* right);
  Resize(const Resize* src, IrCloner& cloner);

  IterDomain* in() const;
  IterDomain* out() const;
  Scalar* left() const { return left_; }
  Scalar* right() const { return right_; }

  std::vector<Val*> attributeVals() const override;
  std::string opName() const override;
  bool sameAttributes(const Expr* other) const override;

 private:
  Scalar* left_;
  Scalar* right_;
};

}  // namespace loom::ir
