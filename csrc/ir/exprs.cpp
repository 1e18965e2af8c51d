// SPDX-License-Identifier: Apache-2.0
// Math exprs: constructors, clones, names and attribute comparison.
#include "loom/ir/exprs.h"

#include "loom/ir/cloner.h"
#include "loom/ir/scalar.h"
#include "loom/ir/tensor_view.h"

namespace loom::ir {

#define LOOM_DEFINE_CLONE(T) \
  Statement* T::cloneInto(IrCloner& cloner) const { return new T(this, cloner); }

// ---- UnaryOp
UnaryOp::UnaryOp(UnaryOpType op, Val* out, Val* in)
    : Expr(NodeKind::UnaryOp, {in}, {out}), op_(op) {}
UnaryOp::UnaryOp(const UnaryOp* src, IrCloner& c)
    : Expr(NodeKind::UnaryOp, c.clone(src->inputs()), c.clone(src->outputs())), op_(src->op_) {}
LOOM_DEFINE_CLONE(UnaryOp)
std::string UnaryOp::opName() const { return std::string(opTypeName(op_)); }
bool UnaryOp::sameAttributes(const Expr* other) const {
  return other->as<UnaryOp>()->op_ == op_;
}

// ---- BinaryOp
BinaryOp::BinaryOp(BinaryOpType op, Val* out, Val* lhs, Val* rhs)
    : Expr(NodeKind::BinaryOp, {lhs, rhs}, {out}), op_(op) {}
BinaryOp::BinaryOp(const BinaryOp* src, IrCloner& c)
    : Expr(NodeKind::BinaryOp, c.clone(src->inputs()), c.clone(src->outputs())), op_(src->op_) {}
LOOM_DEFINE_CLONE(BinaryOp)
std::string BinaryOp::opName() const { return std::string(opTypeName(op_)); }
bool BinaryOp::sameAttributes(const Expr* other) const {
  return other->as<BinaryOp>()->op_ == op_;
}

// ---- TernaryOp
TernaryOp::TernaryOp(TernaryOpType op, Val* out, Val* a, Val* b, Val* c)
    : Expr(NodeKind::TernaryOp, {a, b, c}, {out}), op_(op) {}
TernaryOp::TernaryOp(const TernaryOp* src, IrCloner& c)
    : Expr(NodeKind::TernaryOp, c.clone(src->inputs()), c.clone(src->outputs())),
      op_(src->op_) {}
LOOM_DEFINE_CLONE(TernaryOp)
std::string TernaryOp::opName() const { return std::string(opTypeName(op_)); }
bool TernaryOp::sameAttributes(const Expr* other) const {
  return other->as<TernaryOp>()->op_ == op_;
}

// ---- ReductionOp
ReductionOp::ReductionOp(ReductionOpType op, Scalar* init, TensorView* out, TensorView* in)
    : Expr(NodeKind::ReductionOp, {in}, {out}), op_(op), init_(init) {}
ReductionOp::ReductionOp(const ReductionOp* src, IrCloner& c)
    : Expr(NodeKind::ReductionOp, c.clone(src->inputs()), c.clone(src->outputs())),
      op_(src->op_),
      init_(c.clone(src->init_)) {}
LOOM_DEFINE_CLONE(ReductionOp)
TensorView* ReductionOp::out() const { return output(0)->as<TensorView>(); }
TensorView* ReductionOp::in() const { return input(0)->as<TensorView>(); }
std::vector<Val*> ReductionOp::attributeVals() const { return {init_}; }
std::string ReductionOp::opName() const { return std::string(opTypeName(op_)); }
bool ReductionOp::sameAttributes(const Expr* other) const {
  return other->as<ReductionOp>()->op_ == op_;
}

// ---- WelfordOp
WelfordOp::WelfordOp(TensorView* out_avg, TensorView* out_m2, TensorView* out_n, Val* in_avg,
                     Val* in_m2, Val* in_n, Scalar* init_avg, Scalar* init_m2, Scalar* init_n)
    : Expr(NodeKind::WelfordOp, {in_avg, in_m2, in_n}, {out_avg, out_m2, out_n}),
      init_avg_(init_avg),
      init_m2_(init_m2),
      init_n_(init_n) {}
WelfordOp::WelfordOp(const WelfordOp* src, IrCloner& c)
    : Expr(NodeKind::WelfordOp, c.clone(src->inputs()), c.clone(src->outputs())),
      init_avg_(c.clone(src->init_avg_)),
      init_m2_(c.clone(src->init_m2_)),
      init_n_(c.clone(src->init_n_)) {}
LOOM_DEFINE_CLONE(WelfordOp)
TensorView* WelfordOp::outAvg() const { return output(0)->as<TensorView>(); }
TensorView* WelfordOp::outM2() const { return output(1)->as<TensorView>(); }
TensorView* WelfordOp::outN() const { return output(2)->as<TensorView>(); }
bool WelfordOp::hasRawInput() const {
  auto* m2 = inM2()->dynCast<Scalar>();
  auto* n = inN()->dynCast<Scalar>();
  return m2 != nullptr && n != nullptr && m2->constDouble() == 0.0 && n->constInt() == 1;
}
std::vector<Val*> WelfordOp::attributeVals() const { return {init_avg_, init_m2_, init_n_}; }
std::string WelfordOp::opName() const { return "welford"; }
bool WelfordOp::sameAttributes(const Expr*) const { return true; }

// ---- BroadcastOp
BroadcastOp::BroadcastOp(TensorView* out, TensorView* in, std::vector<bool> is_broadcast_dim)
    : Expr(NodeKind::BroadcastOp, {in}, {out}), is_broadcast_dim_(std::move(is_broadcast_dim)) {}
BroadcastOp::BroadcastOp(const BroadcastOp* src, IrCloner& c)
    : Expr(NodeKind::BroadcastOp, c.clone(src->inputs()), c.clone(src->outputs())),
      is_broadcast_dim_(src->is_broadcast_dim_) {}
LOOM_DEFINE_CLONE(BroadcastOp)
TensorView* BroadcastOp::out() const { return output(0)->as<TensorView>(); }
TensorView* BroadcastOp::in() const { return input(0)->as<TensorView>(); }
std::string BroadcastOp::opName() const { return "broadcast"; }
bool BroadcastOp::sameAttributes(const Expr* other) const {
  return other->as<BroadcastOp>()->is_broadcast_dim_ == is_broadcast_dim_;
}

// ---- SqueezeOp
SqueezeOp::SqueezeOp(TensorView* out, TensorView* in, std::vector<bool> is_squeezed_dim)
    : Expr(NodeKind::SqueezeOp, {in}, {out}), is_squeezed_dim_(std::move(is_squeezed_dim)) {}
SqueezeOp::SqueezeOp(const SqueezeOp* src, IrCloner& c)
    : Expr(NodeKind::SqueezeOp, c.clone(src->inputs()), c.clone(src->outputs())),
      is_squeezed_dim_(src->is_squeezed_dim_) {}
LOOM_DEFINE_CLONE(SqueezeOp)
TensorView* SqueezeOp::out() const { return output(0)->as<TensorView>(); }
TensorView* SqueezeOp::in() const { return input(0)->as<TensorView>(); }
std::string SqueezeOp::opName() const { return "squeeze"; }
bool SqueezeOp::sameAttributes(const Expr* other) const {
  return other->as<SqueezeOp>()->is_squeezed_dim_ == is_squeezed_dim_;
}

// ---- ExpandOp
ExpandOp::ExpandOp(TensorView* out, TensorView* in) : Expr(NodeKind::ExpandOp, {in}, {out}) {}
ExpandOp::ExpandOp(const ExpandOp* src, IrCloner& c)
    : Expr(NodeKind::ExpandOp, c.clone(src->inputs()), c.clone(src->outputs())) {}
LOOM_DEFINE_CLONE(ExpandOp)
TensorView* ExpandOp::out() const { return output(0)->as<TensorView>(); }
TensorView* ExpandOp::in() const { return input(0)->as<TensorView>(); }
std::string ExpandOp::opName() const { return "expand"; }
bool ExpandOp::sameAttributes(const Expr*) const { return true; }

// ---- ReshapeOp
ReshapeOp::ReshapeOp(TensorView* out, TensorView* in) : Expr(NodeKind::ReshapeOp, {in}, {out}) {}
ReshapeOp::ReshapeOp(const ReshapeOp* src, IrCloner& c)
    : Expr(NodeKind::ReshapeOp, c.clone(src->inputs()), c.clone(src->outputs())) {}
LOOM_DEFINE_CLONE(ReshapeOp)
TensorView* ReshapeOp::out() const { return output(0)->as<TensorView>(); }
TensorView* ReshapeOp::in() const { return input(0)->as<TensorView>(); }
std::string ReshapeOp::opName() const { return "reshape"; }
bool ReshapeOp::sameAttributes(const Expr*) const { return true; }

// ---- LoadStoreOp
LoadStoreOp::LoadStoreOp(LoadStoreOpType op, TensorView* out, TensorView* in)
    : Expr(NodeKind::LoadStoreOp, {in}, {out}), op_(op) {}
LoadStoreOp::LoadStoreOp(const LoadStoreOp* src, IrCloner& c)
    : Expr(NodeKind::LoadStoreOp, c.clone(src->inputs()), c.clone(src->outputs())),
      op_(src->op_) {}
LOOM_DEFINE_CLONE(LoadStoreOp)
TensorView* LoadStoreOp::out() const { return output(0)->as<TensorView>(); }
TensorView* LoadStoreOp::in() const { return input(0)->as<TensorView>(); }
std::string LoadStoreOp::opName() const { return std::string(opTypeName(op_)); }
bool LoadStoreOp::sameAttributes(const Expr* other) const {
  return other->as<LoadStoreOp>()->op_ == op_;
}

#undef LOOM_DEFINE_CLONE

}  // namespace loom::ir
