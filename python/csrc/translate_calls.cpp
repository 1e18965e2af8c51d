// SPDX-License-Identifier: Apache-2.0
// The Python translation (translate.h) of what one fd.ops call made as several nodes: sdpfa_fwd's
// philox_seed / philox_offset fills beside its node, and broadcast_in_dim's broadcast and expand
// with the sizes it requires of run-time dims. translate.cpp prints each as that one call.
#include <optional>
#include <vector>

#include "translate.h"

namespace loom::python {

using ir::IterDomain;
using ir::Scalar;

namespace {

// Whether `fill` (a FullOp's or PadOp's value) is sdpfa_fwd's `key` (its seed or offset Scalar)
// cast to UInt64, as ops::sdpfaFwd fills its philox_seed and philox_offset.
bool fillsKey(const ir::Scalar* fill, const ir::Scalar* key) {
  if (fill->dtype() != DataType::UInt64) return false;
  if (fill->isConst() || key->isConst()) return fill->constInt() == key->constInt();
  const auto* cast = dyn<ir::UnaryOp>(fill->definition());
  return cast != nullptr && cast->opType() == ir::UnaryOpType::Cast && cast->in() == key;
}

// Whether nothing but add_output uses `v`.
bool onlyReturned(const ir::Val* v) { return v->uses().empty(); }

}  // namespace

void Translator::findSdpaKeys() {
  // Where a key is a Scalar (a drawn seed, a Scalar input), its fills are among its uses, even
  // where nothing uses them (a backward in the same fusion is printed with them); constant keys
  // are found among the fusion's exprs.
  std::vector<const ir::Expr*> live;
  for (const ir::Expr* e : fusion_.exprs()) live.push_back(e);
  auto fillsOf = [&](const ir::Scalar* key) {
    std::vector<const ir::Expr*> found;
    if (key->isConst()) {
      for (const ir::Expr* e : live) {
        if (e->isA<ir::FullOp>()) found.push_back(e);
      }
      return found;
    }
    for (const ir::Expr* cast : key->uses()) {
      if (!cast->isA<ir::UnaryOp>() || cast->outputs().size() != 1) continue;
      for (const ir::Expr* e : cast->outputs().front()->uses()) {
        if (e->isA<ir::FullOp>() || e->isA<ir::PadOp>()) found.push_back(e);
      }
    }
    return found;
  };
  for (const ir::Expr* e : live) {
    const auto* fwd = dyn<ir::SdpaFwdOp>(e);
    if (fwd == nullptr) continue;
    const ir::Val* seed = nullptr;
    const ir::Val* offset = nullptr;
    std::vector<const ir::Expr*> made;  // the fills' exprs, which the sdpfa_fwd call makes
    for (const ir::Expr* fe : fillsOf(fwd->seed())) {
      const auto* one = dyn<ir::FullOp>(fe);
      if (seed != nullptr || one == nullptr || sdpa_key_exprs_.count(one) != 0 ||
          one->out()->rank() != 1 || one->out()->uses().size() != 1 ||
          !fillsKey(one->value(), fwd->seed())) {
        continue;
      }
      const auto* p = dyn<ir::PadOp>(one->out()->uses().front());
      if (p != nullptr && p->out()->rank() == 1 && onlyReturned(p->out()) &&
          fillsKey(p->value(), fwd->offset())) {
        seed = p->out();
        made.insert(made.end(), {one, p});
      }
    }
    for (const ir::Expr* fe : fillsOf(fwd->offset())) {
      const auto* f = dyn<ir::FullOp>(fe);
      if (offset == nullptr && f != nullptr && sdpa_key_exprs_.count(f) == 0 &&
          f->out()->rank() == 0 && onlyReturned(f->out()) && fillsKey(f->value(), fwd->offset())) {
        offset = f->out();
        made.push_back(f);
      }
    }
    if (seed == nullptr || offset == nullptr) continue;  // printed by the ops that fill them
    sdpa_keys_[fwd] = {seed, offset};
    sdpa_key_exprs_.insert(made.begin(), made.end());
  }
}

std::string Translator::bwdKey(const ir::SdpaBwdOp* bwd, bool seed) {
  // The forward's philox_seed / philox_offset where the backward's seed and offset are that
  // forward's symbolic ones (a drawn seed has no other name).
  if (!bwd->seed()->isConst()) {
    for (const auto& [e, keys] : sdpa_keys_) {
      const auto* fwd = e->as<ir::SdpaFwdOp>();
      if (fwd->seed() == bwd->seed() && fwd->offset() == bwd->offset()) {
        return tensor(seed ? keys.first : keys.second);
      }
    }
  }
  return keyOperand(seed ? bwd->seed() : bwd->offset());
}

const ir::ExtentRequirement* Translator::requirementOn(const Scalar* extent,
                                                       std::string_view prefix) const {
  const ir::ExtentRequirement* found = nullptr;
  for (const ir::ExtentRequirement& r : fusion_.extentRequirements()) {
    if ((extent == nullptr || r.extent == extent) && r.what.rfind(prefix, 0) == 0) found = &r;
  }
  return found;
}

std::optional<Translator::RequiredSize> Translator::requiredSize(const Scalar* extent,
                                                                 std::string_view prefix) const {
  const ir::ExtentRequirement* r = requirementOn(extent, prefix);
  if (r == nullptr) return std::nullopt;
  if (r->value == extent) return RequiredSize{r->expected, nullptr};
  const auto* eq = dyn<ir::BinaryOp>(r->value->definition());
  if (eq != nullptr && eq->opType() == ir::BinaryOpType::Eq && eq->lhs() == extent) {
    return RequiredSize{0, eq->rhs()->as<Scalar>()};
  }
  return std::nullopt;
}

bool Translator::madeByBroadcastInDim(const ir::TensorView* tv) const {
  return requirementOn(nullptr, "broadcast_in_dim to " + tv->toString() + ": ") != nullptr;
}

// The shape of fd.ops.broadcast_in_dim(in, shape, broadcast_dims) when `result` is what
// ops::broadcastInDim made of `in` (a broadcast, maybe expanded; or, where it adds no dim, an
// expand or a copy): a size it required of a dim of `in` that is not a broadcast is among the
// fusion's extent requirements (its message names the call's output), and the call is the only
// way to say that requirement in nvFuser's form. Each size is a constant or a Scalar (expanded
// to, or required). nullopt otherwise.
std::optional<std::vector<std::string>> Translator::broadcastInDimShape(
    const ir::TensorView* in_tv, const std::vector<bool>& fresh_dims,
    const ir::TensorView* result) {
  const auto in = ir::TensorDomain::noReductions(in_tv->logical());
  const auto out = ir::TensorDomain::noReductions(result->logical());
  if (fresh_dims.size() != out.size()) return std::nullopt;
  // ops::broadcastInDim's requirements name its output (see madeByBroadcastInDim).
  const std::string prefix = "broadcast_in_dim to " + result->toString() + ": dimension ";
  // First the pattern (nothing printed), then the sizes (which may define Scalars).
  std::vector<std::pair<int64_t, const Scalar*>> found;  // a constant, or a Scalar
  bool required = false;
  size_t k = 0;  // b->in()'s dim that output dim d comes from
  for (size_t d = 0; d < out.size(); ++d) {
    const IterDomain* o = out[d];
    const bool fresh = fresh_dims[d];
    // The size: the constant `value` when `known`, else the Scalar `size` (when not null).
    const Scalar* size = nullptr;
    bool known = true;
    int64_t value = 1;  // an unexpanded broadcast
    if (!o->isBroadcast() || o->hasExpandedExtent()) {
      const Scalar* s = o->isBroadcast() ? o->expandedExtent() : o->extent();
      const std::optional<int64_t> c = s->constInt();
      known = c.has_value();
      value = c.value_or(0);
      size = known || !o->isBroadcast() ? nullptr : s;
    }
    if (!fresh) {
      if (auto r = requiredSize(in[k++]->extent(), prefix)) {
        known = r->scalar == nullptr;
        value = r->value;
        size = r->scalar;
        required = true;
      }
      if (!known && size == nullptr && !o->isBroadcast()) {
        known = true;  // a run-time size kept as it is
        value = -1;
      }
    }
    if (!known && size == nullptr) return std::nullopt;
    found.emplace_back(value, known ? nullptr : size);
  }
  if (!required) return std::nullopt;
  std::vector<std::string> shape;
  for (const auto& [c, s] : found) {
    shape.push_back(s != nullptr ? this->size(s) : std::to_string(c));
  }
  return shape;
}

}  // namespace loom::python
