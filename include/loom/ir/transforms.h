// SPDX-License-Identifier: Apache-2.0
// IterDomain transforms: Split and Merge. A tensor's schedule is the graph of these exprs between
// its root/logical, allocation and loop domains.
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

}  // namespace loom::ir
