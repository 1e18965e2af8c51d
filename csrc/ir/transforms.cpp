// SPDX-License-Identifier: Apache-2.0
// Split, Merge and Resize exprs.
#include "loom/ir/transforms.h"

#include "loom/ir/cloner.h"
#include "loom/ir/iter_domain.h"
#include "loom/ir/scalar.h"

namespace loom::ir {

Split::Split(IterDomain* outer, IterDomain* inner, IterDomain* in, Scalar* factor,
             bool inner_split)
    : Expr(NodeKind::Split, {in}, {outer, inner}), factor_(factor), inner_split_(inner_split) {}
Split::Split(const Split* src, IrCloner& c)
    : Expr(NodeKind::Split, c.clone(src->inputs()), c.clone(src->outputs())),
      factor_(c.clone(src->factor_)),
      inner_split_(src->inner_split_) {}
Statement* Split::cloneInto(IrCloner& cloner) const { return new Split(this, cloner); }
IterDomain* Split::in() const { return input(0)->as<IterDomain>(); }
IterDomain* Split::outer() const { return output(0)->as<IterDomain>(); }
IterDomain* Split::inner() const { return output(1)->as<IterDomain>(); }
std::vector<Val*> Split::attributeVals() const { return {factor_}; }
std::string Split::opName() const { return inner_split_ ? "split" : "outer_split"; }
bool Split::sameAttributes(const Expr* other) const {
  return other->as<Split>()->inner_split_ == inner_split_;
}

Merge::Merge(IterDomain* out, IterDomain* outer, IterDomain* inner)
    : Expr(NodeKind::Merge, {outer, inner}, {out}) {}
Merge::Merge(const Merge* src, IrCloner& c)
    : Expr(NodeKind::Merge, c.clone(src->inputs()), c.clone(src->outputs())) {}
Statement* Merge::cloneInto(IrCloner& cloner) const { return new Merge(this, cloner); }
IterDomain* Merge::out() const { return output(0)->as<IterDomain>(); }
IterDomain* Merge::outer() const { return input(0)->as<IterDomain>(); }
IterDomain* Merge::inner() const { return input(1)->as<IterDomain>(); }
std::string Merge::opName() const { return "merge"; }
bool Merge::sameAttributes(const Expr*) const { return true; }

Resize::Resize(IterDomain* out, IterDomain* in, Scalar* left, Scalar* right)
    : Expr(NodeKind::Resize, {in}, {out}), left_(left), right_(right) {}
Resize::Resize(const Resize* src, IrCloner& c)
    : Expr(NodeKind::Resize, c.clone(src->inputs()), c.clone(src->outputs())),
      left_(c.clone(src->left_)),
      right_(c.clone(src->right_)) {}
Statement* Resize::cloneInto(IrCloner& cloner) const { return new Resize(this, cloner); }
IterDomain* Resize::in() const { return input(0)->as<IterDomain>(); }
IterDomain* Resize::out() const { return output(0)->as<IterDomain>(); }
std::vector<Val*> Resize::attributeVals() const { return {left_, right_}; }
std::string Resize::opName() const { return "resize"; }
bool Resize::sameAttributes(const Expr*) const { return true; }

}  // namespace loom::ir
