// SPDX-License-Identifier: Apache-2.0
// LowerContext: loop groups (a union-find over loop IDs) and lowering of ir scalars to kir values.
#include "loom/ir/exprs.h"
#include "loom/ir/tensor_domain.h"
#include "loom/lower/lower.h"

namespace loom::lower {

int64_t LowerContext::findRoot(int64_t i) const {
  while (loop_parent_[size_t(i)] != i) {
    loop_parent_[size_t(i)] = loop_parent_[size_t(loop_parent_[size_t(i)])];
    i = loop_parent_[size_t(i)];
  }
  return i;
}

int64_t LowerContext::loopGroup(const ir::IterDomain* id) const {
  auto it = loop_index_.find(id);
  if (it == loop_index_.end()) {
    auto* self = const_cast<LowerContext*>(this);
    int64_t n = int64_t(loop_ids_.size());
    self->loop_index_[id] = n;
    self->loop_ids_.push_back(id);
    loop_parent_.push_back(n);
    return n;
  }
  return findRoot(it->second);
}

void LowerContext::uniteLoops(const ir::IterDomain* a, const ir::IterDomain* b) {
  int64_t ra = loopGroup(a);
  int64_t rb = loopGroup(b);
  if (ra != rb) loop_parent_[size_t(rb)] = ra;
}

namespace {

// How many broadcast IDs an ID is derived from (through Split/Merge definitions): a merge of a
// broadcast with a real ID has the real extent only when it is not a broadcast stand-in, so the
// loop takes its extent from the member derived from the fewest broadcasts.
int64_t broadcastAncestors(const ir::IterDomain* id) {
  if (id->isBroadcast()) return 1;
  ir::Expr* def = id->definition();
  if (def == nullptr) return 0;
  int64_t n = 0;
  for (ir::Val* in : def->inputs()) n += broadcastAncestors(in->as<ir::IterDomain>());
  return n;
}

}  // namespace

ir::IterDomain* LowerContext::loopRepresentative(const ir::IterDomain* id) const {
  int64_t g = loopGroup(id);
  const ir::IterDomain* best = id;
  int64_t best_score = broadcastAncestors(id);
  for (size_t i = 0; i < loop_ids_.size(); ++i) {
    if (findRoot(int64_t(i)) != g) continue;
    int64_t score = broadcastAncestors(loop_ids_[i]);
    if (score < best_score) {
      best = loop_ids_[i];
      best_score = score;
    }
  }
  return const_cast<ir::IterDomain*>(best);
}

ir::ParallelType LowerContext::loopParallelType(const ir::IterDomain* id) const {
  int64_t g = loopGroup(id);
  for (size_t i = 0; i < loop_ids_.size(); ++i) {
    if (findRoot(int64_t(i)) == g && loop_ids_[i]->isParallelized()) {
      return loop_ids_[i]->parallelType();
    }
  }
  return ir::ParallelType::Serial;
}

kir::Value* LowerContext::lowerScalar(kir::Kernel& kernel, const ir::Val* v) {
  if (auto it = scalars_.find(v); it != scalars_.end()) return it->second;
  const auto* s = v->as<ir::Scalar>();
  kir::Value* out = nullptr;
  if (s->isConst()) {
    out = kernel.create<kir::Const>(s->dtype(), s->value());
  } else if (ir::Expr* def = s->definition()) {
    if (auto* u = def->dynCast<ir::UnaryOp>()) {
      out = kernel.create<kir::UnaryExpr>(s->dtype(), u->opType(), lowerScalar(kernel, u->in()));
    } else if (auto* b = def->dynCast<ir::BinaryOp>()) {
      out = kernel.create<kir::BinaryExpr>(s->dtype(), b->opType(), lowerScalar(kernel, b->lhs()),
                                           lowerScalar(kernel, b->rhs()));
    } else if (auto* t = def->dynCast<ir::TernaryOp>()) {
      out = kernel.create<kir::TernaryExpr>(s->dtype(), t->opType(), lowerScalar(kernel, t->a()),
                                            lowerScalar(kernel, t->b()), lowerScalar(kernel, t->c()));
    }
  } else {
    // A scalar fusion input is a by-value kernel parameter (kernel_params).
    for (const auto& [input, var] : kernel.scalarParams) {
      if (input == v) out = var;
    }
    // A symbolic extent: the runtime size of the first input tensor that has it.
    for (ir::Val* in : fusion.inputs()) {
      auto* tv = in->dynCast<ir::TensorView>();
      if (tv == nullptr || out != nullptr) continue;
      auto ids = ir::TensorDomain::noReductions(tv->logical());
      for (size_t k = 0; k < ids.size() && out == nullptr; ++k) {
        if (ids[k]->extent() == v || ids[k]->expandedExtent() == v) {
          auto it = buffers.find(tv);
          LOOM_ASSERT(it != buffers.end(), "no buffer for input ", tv->toString());
          out = kernel.create<kir::TensorSize>(it->second, int64_t(k), false);
        }
      }
      if (out) break;
    }
  }
  LOOM_CHECK(out != nullptr, "lowering: scalar ", v->toString(),
             " is not a constant, a scalar fusion input, an extent of a fusion input, or "
             "scalar math over those");
  scalars_[v] = out;
  return out;
}

}  // namespace loom::lower
