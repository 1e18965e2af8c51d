// SPDX-License-Identifier: Apache-2.0
// Constant-folding arithmetic on index Scalars.
#include "loom/ir/scalar_math.h"

#include <algorithm>

#include "loom/ir/builder.h"
#include "loom/ir/exprs.h"

namespace loom::ir::scalar_math {
namespace {

Scalar* build(BinaryOpType op, Scalar* a, Scalar* b) {
  Scalar* out = IrBuilder::symbolic(kIndexType);
  IrBuilder::create<BinaryOp>(op, out, a, b);
  return out;
}

}  // namespace

Scalar* add(Scalar* a, Scalar* b) {
  if (a->isConstInt(0)) return b;
  if (b->isConstInt(0)) return a;
  if (auto x = a->constInt(), y = b->constInt(); x && y) return IrBuilder::index(*x + *y);
  return build(BinaryOpType::Add, a, b);
}

Scalar* sub(Scalar* a, Scalar* b) {
  if (b->isConstInt(0)) return a;
  if (a == b) return IrBuilder::index(0);
  if (auto x = a->constInt(), y = b->constInt(); x && y) return IrBuilder::index(*x - *y);
  return build(BinaryOpType::Sub, a, b);
}

Scalar* mul(Scalar* a, Scalar* b) {
  if (a->isConstInt(1)) return b;
  if (b->isConstInt(1)) return a;
  if (auto x = a->constInt(), y = b->constInt(); x && y) return IrBuilder::index(*x * *y);
  return build(BinaryOpType::Mul, a, b);
}

Scalar* div(Scalar* a, Scalar* b) {
  if (b->isConstInt(1)) return a;
  if (auto x = a->constInt(), y = b->constInt(); x && y && *y != 0) {
    return IrBuilder::index(*x / *y);
  }
  return build(BinaryOpType::Div, a, b);
}

const Scalar* dividedSymbol(const Scalar* extent, int64_t* factor) {
  const auto* def = extent->definition() == nullptr ? nullptr
                                                    : extent->definition()->dynCast<BinaryOp>();
  if (def == nullptr || def->opType() != BinaryOpType::Div) return nullptr;
  const auto* s = def->lhs()->dynCast<Scalar>();
  const auto* c = def->rhs()->dynCast<Scalar>();
  if (s == nullptr || c == nullptr || s->isConst() || s->definition() != nullptr) return nullptr;
  std::optional<int64_t> n = c->constInt();
  if (!n.has_value() || *n <= 0) return nullptr;
  *factor = *n;
  return s;
}

Scalar* mod(Scalar* a, Scalar* b) {
  if (auto x = a->constInt(), y = b->constInt(); x && y && *y != 0) {
    return IrBuilder::index(*x % *y);
  }
  return build(BinaryOpType::Mod, a, b);
}

Scalar* ceilDiv(Scalar* a, Scalar* b) {
  if (b->isConstInt(1)) return a;
  if (auto x = a->constInt(), y = b->constInt(); x && y && *y > 0) {
    return IrBuilder::index((*x + *y - 1) / *y);
  }
  return build(BinaryOpType::CeilDiv, a, b);
}

Scalar* max(Scalar* a, Scalar* b) {
  if (a == b) return a;
  if (auto x = a->constInt(), y = b->constInt(); x && y) return IrBuilder::index(std::max(*x, *y));
  return build(BinaryOpType::Max, a, b);
}

Scalar* min(Scalar* a, Scalar* b) {
  if (a == b) return a;
  if (auto x = a->constInt(), y = b->constInt(); x && y) return IrBuilder::index(std::min(*x, *y));
  return build(BinaryOpType::Min, a, b);
}

Scalar* lt(Scalar* a, Scalar* b) {
  if (auto x = a->constInt(), y = b->constInt(); x && y) return IrBuilder::constant(*x < *y);
  Scalar* out = IrBuilder::symbolic(DataType::Bool);
  IrBuilder::create<BinaryOp>(BinaryOpType::Lt, out, a, b);
  return out;
}

Scalar* where(Scalar* cond, Scalar* a, Scalar* b) {
  if (a == b) return a;
  if (cond->isConst()) return cond->constInt().value_or(0) != 0 ? a : b;
  Scalar* out = IrBuilder::symbolic(kIndexType);
  IrBuilder::create<TernaryOp>(TernaryOpType::Where, out, cond, a, b);
  return out;
}

}  // namespace loom::ir::scalar_math
