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

// The shape of fd.ops.broadcast_in_dim(b->in(), shape, broadcast_dims) when `b` (and `expand`,
// the expand of b's output or nullptr) is what ops::broadcastInDim made of it with constant sizes:
// a size it required of a run-time dim is among the fusion's extent requirements (its message
// says so), and it is the only way to say that requirement in nvFuser's form. nullopt otherwise.
std::optional<std::vector<int64_t>> Translator::broadcastInDimShape(
    const ir::BroadcastOp* b, const ir::ExpandOp* expand) const {
  const auto in = ir::TensorDomain::noReductions(b->in()->logical());
  const auto out =
      ir::TensorDomain::noReductions((expand != nullptr ? expand->out() : b->out())->logical());
  std::vector<int64_t> shape;
  bool required = false;
  size_t k = 0;  // b->in()'s dim that output dim d comes from
  for (size_t d = 0; d < out.size(); ++d) {
    const IterDomain* o = out[d];
    const bool fresh = b->isBroadcastDim()[d];
    std::optional<int64_t> size;
    if (o->isBroadcast()) {
      size = o->hasExpandedExtent() ? o->expandedExtent()->constInt() : std::optional<int64_t>(1);
    } else {
      size = o->extent()->constInt();
    }
    if (!fresh) {
      const Scalar* extent = in[k++]->extent();
      for (const ir::ExtentRequirement& r : fusion_.extentRequirements()) {
        if (r.extent == extent && r.value == extent &&
            r.what.rfind("broadcast_in_dim: dimension ", 0) == 0) {
          size = r.expected;
          required = true;
        }
      }
      if (!size && !o->isBroadcast()) size = -1;  // a run-time size kept as it is
    }
    if (!size) return std::nullopt;  // a size given as a Scalar: broadcast and expand say it
    shape.push_back(*size);
  }
  if (!required) return std::nullopt;
  return shape;
}

}  // namespace loom::python
