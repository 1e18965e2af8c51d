// SPDX-License-Identifier: Apache-2.0
// Private helpers of the transform layer (see utils.h).
#include "transform/utils.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "loom/support/strings.h"

namespace loom::transform::detail {

using namespace loom::ir;

namespace {

// A set of pointers: a vector searched linearly while small (one tensor's domains hold a handful
// of IDs, and hashing each would cost more: this runs for every tensor of every ID graph), a hash
// set past that (a chain of thousands of splits would make the linear search quadratic).
template <typename T>
class FewSet {
 public:
  bool contains(const T* x) const {
    if (!big_.empty()) return big_.count(x) != 0;
    return std::find(small_.begin(), small_.end(), x) != small_.end();
  }
  // True when x was not in the set.
  bool insert(const T* x) {
    if (contains(x)) return false;
    if (big_.empty() && small_.size() < kSmall) {
      small_.push_back(x);
      return true;
    }
    if (big_.empty()) big_.insert(small_.begin(), small_.end());
    big_.insert(x);
    return true;
  }

 private:
  static constexpr size_t kSmall = 32;
  std::vector<const T*> small_;
  std::unordered_set<const T*> big_;
};

}  // namespace

std::vector<Expr*> exprsBetween(const std::vector<IterDomain*>& from,
                                const std::vector<IterDomain*>& to) {
  FewSet<IterDomain> stop;
  for (IterDomain* id : from) stop.insert(id);
  FewSet<Expr> emitted;
  std::vector<Expr*> order;
  // Resize (slice, pad) is not a schedule transform: the walk stops at its output, which the ID
  // graphs then treat as an ID of its own, not mapped to the Resize input.
  auto schedule_def = [&](IterDomain* id) -> Expr* {
    if (stop.contains(id)) return nullptr;
    Expr* def = id->definition();
    if (def == nullptr || (!def->isA<Split>() && !def->isA<Merge>())) return nullptr;
    return emitted.contains(def) ? nullptr : def;
  };
  // Post-order DFS through definitions with an explicit stack (a chain of splits may be tens of
  // thousands long): an expr is emitted after the exprs defining its inputs.
  std::vector<std::pair<Expr*, size_t>> stack;
  for (IterDomain* id : to) {
    if (Expr* def = schedule_def(id)) stack.push_back({def, 0});
    while (!stack.empty()) {
      auto& [e, next] = stack.back();
      if (next < e->inputs().size()) {
        Expr* d = schedule_def(e->input(next++)->as<IterDomain>());
        if (d != nullptr) stack.push_back({d, 0});
        continue;
      }
      // A diamond (an ID used by two transforms of one domain) emits its common part once.
      if (emitted.insert(e)) order.push_back(e);
      stack.pop_back();
    }
  }
  return order;
}

namespace {
std::vector<IterDomain*> domainTargets(const TensorView* tv) {
  std::vector<IterDomain*> targets = tv->loop();
  targets.insert(targets.end(), tv->allocation().begin(), tv->allocation().end());
  targets.insert(targets.end(), tv->logical().begin(), tv->logical().end());
  return targets;
}
}  // namespace

std::vector<Expr*> allIdExprs(const TensorView* tv) {
  return exprsBetween(tv->domain()->maybeRoot(), domainTargets(tv));
}

std::vector<IterDomain*> allIds(const TensorView* tv) {
  std::vector<IterDomain*> ids;
  FewSet<IterDomain> seen;
  auto add = [&](IterDomain* id) {
    if (seen.insert(id)) ids.push_back(id);
  };
  for (IterDomain* id : tv->domain()->maybeRoot()) add(id);
  for (Expr* e : allIdExprs(tv)) {
    for (Val* v : e->inputs()) add(v->as<IterDomain>());
    for (Val* v : e->outputs()) add(v->as<IterDomain>());
  }
  for (IterDomain* id : domainTargets(tv)) add(id);
  return ids;
}

std::vector<TensorView*> tvInputs(const Expr* e) {
  std::vector<TensorView*> out;
  for (Val* v : e->inputs()) {
    if (auto* tv = v->dynCast<TensorView>()) {
      if (std::find(out.begin(), out.end(), tv) == out.end()) out.push_back(tv);
    }
  }
  return out;
}

std::vector<TensorView*> tvOutputs(const Expr* e) {
  std::vector<TensorView*> out;
  for (Val* v : e->outputs()) {
    if (auto* tv = v->dynCast<TensorView>()) out.push_back(tv);
  }
  return out;
}

std::vector<TensorView*> consumersOf(const TensorView* tv) {
  std::vector<TensorView*> out;
  for (Expr* use : tv->uses()) {
    for (TensorView* c : tvOutputs(use)) {
      if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
    }
  }
  return out;
}

std::vector<TensorView*> producersOf(const TensorView* tv) {
  if (tv->definition() == nullptr) return {};
  return tvInputs(tv->definition());
}

std::vector<TensorView*> siblingsOf(const TensorView* tv) {
  std::vector<TensorView*> out;
  if (tv->definition() == nullptr) return out;
  for (TensorView* s : tvOutputs(tv->definition())) {
    if (s != tv) out.push_back(s);
  }
  return out;
}

Expr* recreateWithOutputs(Expr* e, const std::vector<Val*>& outputs) {
  return recreate(e, e->inputs(), outputs);
}

Expr* recreate(Expr* e, const std::vector<Val*>& in, const std::vector<Val*>& out) {
  LOOM_ASSERT(in.size() == e->inputs().size() && out.size() == e->outputs().size(),
              "recreate of ", e->toString(), " with a different arity");
  auto tv = [](Val* v) { return v->as<TensorView>(); };
  if (auto* u = e->dynCast<UnaryOp>()) {
    return IrBuilder::create<UnaryOp>(u->opType(), out[0], in[0]);
  }
  if (auto* b = e->dynCast<BinaryOp>()) {
    return IrBuilder::create<BinaryOp>(b->opType(), out[0], in[0], in[1]);
  }
  if (auto* t = e->dynCast<TernaryOp>()) {
    return IrBuilder::create<TernaryOp>(t->opType(), out[0], in[0], in[1], in[2]);
  }
  if (auto* r = e->dynCast<ReductionOp>()) {
    return IrBuilder::create<ReductionOp>(r->opType(), r->init(), tv(out[0]), tv(in[0]));
  }
  if (auto* w = e->dynCast<WelfordOp>()) {
    return IrBuilder::create<WelfordOp>(tv(out[0]), tv(out[1]), tv(out[2]), in[0], in[1], in[2],
                                        w->initAvg(), w->initM2(), w->initN());
  }
  if (auto* b = e->dynCast<BroadcastOp>()) {
    return IrBuilder::create<BroadcastOp>(tv(out[0]), tv(in[0]), b->isBroadcastDim());
  }
  if (auto* s = e->dynCast<SqueezeOp>()) {
    return IrBuilder::create<SqueezeOp>(tv(out[0]), tv(in[0]), s->isSqueezedDim());
  }
  if (e->isA<ExpandOp>()) return IrBuilder::create<ExpandOp>(tv(out[0]), tv(in[0]));
  if (e->isA<ReshapeOp>()) return IrBuilder::create<ReshapeOp>(tv(out[0]), tv(in[0]));
  if (auto* l = e->dynCast<LoadStoreOp>()) {
    return IrBuilder::create<LoadStoreOp>(l->opType(), tv(out[0]), tv(in[0]),
                                          l->isSegmentBoundary());
  }
  if (e->isA<SliceOp>()) return IrBuilder::create<SliceOp>(tv(out[0]), tv(in[0]));
  if (e->isA<PadOp>()) {
    return IrBuilder::create<PadOp>(tv(out[0]), tv(in[0]), in[1]->as<Scalar>());
  }
  if (auto* c = e->dynCast<CatOp>()) {
    std::vector<TensorView*> ins;
    for (Val* v : in) ins.push_back(tv(v));
    return IrBuilder::create<CatOp>(tv(out[0]), ins, c->dim());
  }
  if (e->isA<FullOp>()) return IrBuilder::create<FullOp>(tv(out[0]), in[0]->as<Scalar>());
  if (e->isA<IotaOp>()) {
    return IrBuilder::create<IotaOp>(tv(out[0]), in[0]->as<Scalar>(), in[1]->as<Scalar>(),
                                     in.size() > 2 ? in[2]->as<Scalar>() : nullptr);
  }
  if (auto* sc = e->dynCast<ScanOp>()) {
    return IrBuilder::create<ScanOp>(sc->opType(), tv(out[0]), tv(in[0]), sc->dim());
  }
  if (auto* r = e->dynCast<RngOp>()) {
    // The index offsets, then the global extents (RngOp's input order).
    const size_t n = (in.size() - 4) / 2;
    std::vector<Scalar*> offsets, extents;
    for (size_t d = 0; d < n; ++d) {
      offsets.push_back(in[4 + d]->as<Scalar>());
      extents.push_back(in[4 + n + d]->as<Scalar>());
    }
    return IrBuilder::create<RngOp>(tv(out[0]), r->rngType(), in[0]->as<Scalar>(),
                                    in[1]->as<Scalar>(), in[2]->as<Scalar>(), in[3]->as<Scalar>(),
                                    std::move(offsets), std::move(extents));
  }
  if (auto* as = e->dynCast<ArgsortOp>()) {
    auto* copy =
        IrBuilder::create<ArgsortOp>(tv(out[0]), tv(in[0]), as->dim(), as->descending());
    copy->setBlockRow(as->blockRow());
    return copy;
  }
  if (auto* tk = e->dynCast<TopKOp>()) {
    auto* copy = IrBuilder::create<TopKOp>(tv(out[0]), tv(out[1]), tv(in[0]),
                                           in[1]->as<Scalar>(), tk->dim(), tk->largest());
    copy->setBlockRow(tk->blockRow());
    return copy;
  }
  if (auto* is = e->dynCast<IndexSelectOp>()) {
    return IrBuilder::create<IndexSelectOp>(tv(out[0]), tv(in[0]), tv(in[1]), is->dim());
  }
  if (auto* g = e->dynCast<GatherOp>()) {
    return IrBuilder::create<GatherOp>(tv(out[0]), tv(in[0]), tv(in[1]), g->dim(), g->exact());
  }
  if (auto* sc = e->dynCast<ScatterOp>()) {
    auto* copy = IrBuilder::create<ScatterOp>(tv(out[0]), tv(in[0]), tv(in[1]), tv(in[2]),
                                              sc->dim(), sc->accumulate());
    copy->setAtomic(sc->atomic());
    return copy;
  }
  if (e->isA<MatmulOp>()) return IrBuilder::create<MatmulOp>(tv(out[0]), tv(in[0]), tv(in[1]));
  if (e->isA<LinearOp>()) {
    return IrBuilder::create<LinearOp>(tv(out[0]), tv(in[0]), tv(in[1]),
                                       in.size() == 3 ? tv(in[2]) : nullptr);
  }
  if (e->isA<SdpaFwdOp>()) {
    return IrBuilder::create<SdpaFwdOp>(
        tv(out[0]), tv(out[1]), tv(in[0]), tv(in[1]), tv(in[2]), in[3]->as<Scalar>(),
        in[4]->as<Scalar>(), in[5]->as<Scalar>(), in[6]->as<Scalar>(), in[7]->as<Scalar>());
  }
  if (e->isA<SdpaBwdOp>()) {
    return IrBuilder::create<SdpaBwdOp>(
        tv(out[0]), tv(out[1]), tv(out[2]), tv(in[0]), tv(in[1]), tv(in[2]), tv(in[3]), tv(in[4]),
        tv(in[5]), in[6]->as<Scalar>(), in[7]->as<Scalar>(), in[8]->as<Scalar>(),
        in[9]->as<Scalar>(), in[10]->as<Scalar>());
  }
  LOOM_UNREACHABLE("recreate does not know expr ", e->toString());
}

TensorDomain* copyDomain(const TensorView* tv) {
  std::vector<IterDomain*> ids;
  for (IterDomain* id : TensorDomain::noReductions(tv->logical())) {
    ids.push_back(id->cloneWithoutDefinition());
    if (ids.back()->isParallelized()) ids.back()->parallelize(ParallelType::Serial);
  }
  return IrBuilder::create<TensorDomain>(ids);
}

TensorView* newTensor(const TensorView* like, TensorDomain* domain, MemoryType memory) {
  auto* tv = IrBuilder::create<TensorView>(domain, like->dtype(), memory);
  tv->setDeviceMesh(like->deviceMesh());
  return tv;
}

std::string idList(const std::vector<IterDomain*>& ids) {
  std::vector<std::string> names;
  for (auto* id : ids) names.push_back(id->toString());
  return "[" + join(names) + "]";
}

std::unordered_set<const TensorView*> downstreamOf(const TensorView* tv) {
  return downstreamOf(tv, {});
}

std::unordered_set<const TensorView*> downstreamOf(
    const TensorView* tv, const std::unordered_set<const TensorView*>& avoid) {
  std::unordered_set<const TensorView*> seen;
  std::vector<const TensorView*> work{tv};
  while (!work.empty()) {
    const TensorView* t = work.back();
    work.pop_back();
    for (TensorView* c : consumersOf(t)) {
      if (avoid.count(c) == 0 && seen.insert(c).second) work.push_back(c);
    }
  }
  return seen;
}

}  // namespace loom::transform::detail
