// SPDX-License-Identifier: Apache-2.0
// LowerContext: the loop graph, tensor scopes and lowering of ir scalars to kir values.
#include <algorithm>

#include "loom/ir/exprs.h"
#include "loom/ir/extent_bindings.h"
#include "loom/ir/tensor_domain.h"
#include "loom/lower/lower.h"

namespace loom::lower {

const transform::LoopGraph& LowerContext::loopGraph() const {
  LOOM_ASSERT(loop_graph_ != nullptr, "the loop graph is built by the loop_nests pass");
  return *loop_graph_;
}

bool LowerContext::isScopeOf(const ir::TensorView* tv, const kir::ForLoop* scope) const {
  auto it = scopes.find(tv);
  return it != scopes.end() && it->second == scope;
}

kir::Value* LowerContext::lowerScalar(kir::Kernel& kernel, const ir::Val* v) {
  if (auto it = scalars_.find(v); it != scalars_.end()) return it->second;
  // The scalars v is computed from are lowered first, innermost first, with an explicit stack,
  // so that the recursive calls below find their operands lowered (a chain of scalar ops can be
  // tens of thousands long).
  std::vector<std::pair<const ir::Val*, bool>> stack{{v, false}};  // (scalar, inputs pushed)
  while (!stack.empty()) {
    auto [x, expanded] = stack.back();
    ir::Expr* def = x->as<ir::Scalar>()->definition();
    if (scalars_.count(x) != 0 || x->as<ir::Scalar>()->isConst() || def == nullptr) {
      stack.pop_back();
      continue;
    }
    if (!expanded) {
      stack.back().second = true;
      for (ir::Val* in : def->inputs()) {
        if (in->isA<ir::Scalar>() && scalars_.count(in) == 0) stack.push_back({in, false});
      }
      continue;
    }
    stack.pop_back();
    if (x != v) lowerScalar(kernel, x);  // its inputs are lowered: no deeper recursion
  }
  const auto* s = v->as<ir::Scalar>();
  kir::Value* out = nullptr;
  if (s->isConst()) {
    out = kernel.create<kir::Const>(s->dtype(), s->value());
  } else if (ir::Expr* def = s->definition()) {
    if (auto* u = def->dynCast<ir::UnaryOp>()) {
      out = kernel.create<kir::UnaryExpr>(s->dtype(), u->opType(), lowerScalar(kernel, u->in()));
    } else if (auto* b = def->dynCast<ir::BinaryOp>()) {
      out = kernel.create<kir::BinaryExpr>(s->dtype(), b->opType(), lowerScalar(kernel, b->lhs()),
                                           lowerScalar(kernel, b->rhs()), /*total=*/true);
    } else if (auto* t = def->dynCast<ir::TernaryOp>()) {
      out = kernel.create<kir::TernaryExpr>(s->dtype(), t->opType(), lowerScalar(kernel, t->a()),
                                            lowerScalar(kernel, t->b()), lowerScalar(kernel, t->c()));
    }
  } else {
    // A scalar fusion input is a by-value kernel parameter (kernel_params).
    for (const auto& [input, var] : kernel.scalarParams) {
      if (input == v) out = var;
    }
    // A symbolic extent: the runtime size of the first input tensor that binds it, times its
    // shard factor (ir/extent_bindings.h).
    if (out == nullptr) {
      if (auto b = ir::findInputBinding(fusion, s)) {
        auto it = buffers.find(b->tv);
        LOOM_ASSERT(it != buffers.end(), "no buffer for input ", b->tv->toString());
        out = kernel.create<kir::TensorSize>(it->second, b->binding.dim, false);
        if (b->binding.factor != 1) {
          out = kernel.create<kir::BinaryExpr>(
              s->dtype(), ir::BinaryOpType::Mul, out,
              kernel.create<kir::Const>(s->dtype(), ir::ScalarValue(b->binding.factor)),
              /*total=*/true);
        }
      }
    }
  }
  LOOM_CHECK(out != nullptr, "lowering: scalar ", v->toString(),
             " is not a constant, a scalar fusion input, an extent of a fusion input, or "
             "scalar math over those");
  if (ir::Expr* def = s->definition()) {
    // Code generation writes the math as one nested expression, and C++ compilers (and the
    // recursive printers on the way) stop at some depth: refuse deep chains by name.
    int64_t depth = 0;
    for (ir::Val* in : def->inputs()) {
      auto it = in->isA<ir::Scalar>() ? scalar_depths_.find(scalars_.at(in)) : scalar_depths_.end();
      if (it != scalar_depths_.end()) depth = std::max(depth, it->second);
    }
    LOOM_CHECK(depth + 1 <= kMaxScalarDepth, "lowering: scalar ", v->toString(),
               " is the end of a chain of more than ", kMaxScalarDepth,
               " scalar ops, which a kernel cannot compute as one expression; compute it "
               "before the fusion and pass it as a scalar input");
    scalar_depths_[out] = depth + 1;
  }
  scalars_[v] = out;
  return out;
}

}  // namespace loom::lower
