// SPDX-License-Identifier: Apache-2.0
// The epilogue chain of a matmul segment (segmenter/matmul_epilogue.h): a walk from the product
// along sole uses, with the gelu composite matched whole.
#include "loom/segmenter/matmul_epilogue.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <optional>
#include <set>

#include "loom/ir/exprs.h"
#include "loom/ir/scalar.h"
#include "loom/ir/tensor_view.h"
#include "loom/support/error.h"

namespace loom::segmenter {
namespace {

using ir::BinaryOp;
using ir::BinaryOpType;
using ir::Expr;
using ir::TensorView;
using ir::UnaryOp;
using ir::UnaryOpType;
using ir::Val;

class Chain {
 public:
  Chain(const std::function<bool(const Expr*)>& live,
        const std::function<bool(const Expr*)>& joinable)
      : live_(live), joinable_(joinable) {}

  // The live uses of `v`, or nullopt when one of them may not join or `v` is a fusion output.
  std::optional<std::set<Expr*>> uses(const Val* v) const {
    if (v->isFusionOutput()) return std::nullopt;
    std::set<Expr*> out;
    for (Expr* e : v->uses()) {
      if (!live_(e)) continue;
      if (!joinable_(e)) return std::nullopt;
      out.insert(e);
    }
    return out;
  }

  // The one live use of `v`, or nullptr.
  Expr* soleUse(const Val* v) const {
    auto u = uses(v);
    return u && u->size() == 1 ? *u->begin() : nullptr;
  }

 private:
  const std::function<bool(const Expr*)>& live_;
  const std::function<bool(const Expr*)>& joinable_;
};

const UnaryOp* unaryOf(const Expr* e, UnaryOpType t) {
  const auto* u = e == nullptr ? nullptr : e->dynCast<UnaryOp>();
  return u != nullptr && u->opType() == t ? u : nullptr;
}

// True when `v` is a constant that equals `expected` in f32 (the epilogue computes in f32).
bool isConstant(const Val* v, double expected) {
  const auto* s = v->dynCast<ir::Scalar>();
  if (s == nullptr || !s->isConst()) return false;
  const std::optional<double> d = s->constDouble();
  return d.has_value() && float(*d) == float(expected);
}

// `e` as a BinaryOp of type `t` whose operands are `a` and something matching `other` (either
// order); returns that other operand, or nullptr.
template <typename Pred>
const Val* binaryWith(const Expr* e, BinaryOpType t, const Val* a, Pred other) {
  const auto* b = e == nullptr ? nullptr : e->dynCast<BinaryOp>();
  if (b == nullptr || b->opType() != t) return nullptr;
  if (b->lhs() == a && other(b->rhs())) return b->rhs();
  if (b->rhs() == a && other(b->lhs())) return b->lhs();
  return nullptr;
}

// ops::gelu(x, Tanh) on an f32 `x`:
//   h = x * 0.5; s = x * x; c = x * s; t1 = c * 0.044715; t2 = x + t1; i = t2 * sqrt(2/pi);
//   th = tanh(i); t3 = th + 1; out = h * t3
// with x read by h, s, c and t2 only and every other tensor by the next step only. Returns the
// exprs in order, or nothing.
std::vector<Expr*> matchGeluTanh(const TensorView* x, const Chain& chain) {
  const auto x_uses = chain.uses(x);
  if (!x_uses || x_uses->size() != 4) return {};
  Expr *h = nullptr, *s = nullptr;
  for (Expr* e : *x_uses) {
    if (binaryWith(e, BinaryOpType::Mul, x, [](const Val* v) { return isConstant(v, 0.5); })) {
      h = e;
    } else if (binaryWith(e, BinaryOpType::Mul, x, [&](const Val* v) { return v == x; })) {
      s = e;
    }
  }
  if (h == nullptr || s == nullptr) return {};
  Expr* c = chain.soleUse(s->output(0));
  if (!binaryWith(c, BinaryOpType::Mul, x, [&](const Val* v) { return v == s->output(0); }) ||
      x_uses->count(c) == 0) {
    return {};
  }
  Expr* t1 = chain.soleUse(c->output(0));
  if (!binaryWith(t1, BinaryOpType::Mul, c->output(0),
                  [](const Val* v) { return isConstant(v, 0.044715); })) {
    return {};
  }
  Expr* t2 = chain.soleUse(t1->output(0));
  if (!binaryWith(t2, BinaryOpType::Add, x, [&](const Val* v) { return v == t1->output(0); }) ||
      x_uses->count(t2) == 0) {
    return {};
  }
  Expr* i = chain.soleUse(t2->output(0));
  const double k = std::sqrt(2.0 / std::numbers::pi);
  if (!binaryWith(i, BinaryOpType::Mul, t2->output(0),
                  [&](const Val* v) { return isConstant(v, k); })) {
    return {};
  }
  Expr* th = chain.soleUse(i->output(0));
  if (unaryOf(th, UnaryOpType::Tanh) == nullptr) return {};
  Expr* t3 = chain.soleUse(th->output(0));
  if (!binaryWith(t3, BinaryOpType::Add, th->output(0),
                  [](const Val* v) { return isConstant(v, 1.0); })) {
    return {};
  }
  Expr* out = chain.soleUse(t3->output(0));
  if (!binaryWith(out, BinaryOpType::Mul, t3->output(0),
                  [&](const Val* v) { return v == h->output(0); }) ||
      chain.soleUse(h->output(0)) != out) {
    return {};
  }
  std::vector<Expr*> exprs{h, s, c, t1, t2, i, th, t3, out};
  for (Expr* e : exprs) {
    if (e->output(0)->dtype() != DataType::Float32) return {};
  }
  return exprs;
}

bool isHalf(DataType d) { return d == DataType::BFloat16 || d == DataType::Float16; }

}  // namespace

MatmulEpilogue matchMatmulEpilogue(const Expr* matmul, const std::function<bool(const Expr*)>& live,
                                   const std::function<bool(const Expr*)>& joinable) {
  const Chain chain(live, joinable);
  auto* mm = matmul->output(0)->as<TensorView>();
  const DataType t = mm->dtype();
  MatmulEpilogue ep;
  // The activation on `x`, appended; its output, or nullptr.
  auto activation = [&](const Val* x) -> const Val* {
    if (const auto* r = unaryOf(chain.soleUse(x), UnaryOpType::Relu)) {
      ep.exprs.push_back(const_cast<UnaryOp*>(r));
      ep.activation = ir::MatmulActivation::Relu;
      return r->out();
    }
    if (x->dtype() != DataType::Float32) return nullptr;
    std::vector<Expr*> gelu = matchGeluTanh(x->as<TensorView>(), chain);
    if (gelu.empty()) return nullptr;
    ep.exprs.insert(ep.exprs.end(), gelu.begin(), gelu.end());
    ep.activation = ir::MatmulActivation::GeluTanh;
    return gelu.back()->output(0);
  };
  const Val* v = mm;
  const auto* up = isHalf(t) ? unaryOf(chain.soleUse(mm), UnaryOpType::Cast) : nullptr;
  if (up != nullptr && up->out()->dtype() == DataType::Float32) {
    // bf16 / f16 read in f32: taken with the activation after it and the cast back to T after
    // that, all three or none (an f32 result would show the rounding the GEMM skips).
    ep.exprs.push_back(const_cast<UnaryOp*>(up));
    // Only relu: it commutes with the product's rounding the GEMM skips. A gelu would not (its
    // result then differs from the fusion's by a 16-bit rounding, which a following matmul can
    // amplify past the output's tolerance: the bf16 Megatron MLP at 4 ranks did).
    const Val* a = activation(up->out());
    const auto* down = a == nullptr ? nullptr : unaryOf(chain.soleUse(a), UnaryOpType::Cast);
    if (down != nullptr && ep.activation == ir::MatmulActivation::Relu &&
        a->dtype() == DataType::Float32 && down->out()->dtype() == t) {
      ep.exprs.push_back(const_cast<UnaryOp*>(down));
      v = down->out();
    } else {
      ep.exprs.clear();
      ep.activation = ir::MatmulActivation::None;
    }
  }
  if (ep.exprs.empty()) {
    if (const Val* a = activation(mm)) v = a;
  }
  LOOM_ASSERT(v->dtype() == t, "a matmul epilogue changed the dtype of ", mm->toString());
  return ep;
}

}  // namespace loom::segmenter
