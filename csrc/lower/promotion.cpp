// SPDX-License-Identifier: Apache-2.0
// Indices of a tensor whose shared loops run over a promoted space (transform/loop_graph.h).
//
// A producer x[N] inlined into the loops of broadcast(x)[1, N] + y[M, N], flattened and split,
// owns loop IDs derived from N alone while the loops it sits in run over M * N. Its own history
// (i = outer * 128 + inner) would give indices past N. Instead its IDs are mapped to their
// counterparts in the promoted IDs' tensors: starting at each loop ID that is not exactly mapped
// to its loop's promoted ID, every Split/Merge of its history whose outputs are mapped is
// replaced by the promoted tensor's corresponding expr (same kind and factor), so its inputs map
// too; a merge with a broadcast the promoted tensor does not have maps its other input directly.
// Indices are then solved per exact-graph set over the promoted tensors' histories plus the
// tensor's own exprs that were not replaced, seeded by the loop indices, and each logical ID of
// the tensor takes the index of its exact set: x's N gets m % N where m is the merged index of
// [M, N].
#include <algorithm>
#include <unordered_set>

#include "index_compute.h"
#include "loom/ir/transforms.h"

namespace loom::lower {

namespace {

bool sameFactor(ir::Scalar* a, ir::Scalar* b) {
  if (a == b) return true;
  auto ca = a->constInt();
  auto cb = b->constInt();
  return ca.has_value() && cb.has_value() && *ca == *cb;
}

// Split/Merge exprs between `from` and `to` of one tensor (definitions walked back from `to`).
std::vector<ir::Expr*> historyOf(const std::vector<ir::IterDomain*>& from,
                                 const std::vector<ir::IterDomain*>& to) {
  std::unordered_set<const ir::IterDomain*> stop(from.begin(), from.end());
  std::vector<ir::Expr*> out;
  std::unordered_set<const ir::Expr*> seen;
  std::vector<ir::IterDomain*> work(to.begin(), to.end());
  while (!work.empty()) {
    ir::IterDomain* id = work.back();
    work.pop_back();
    if (stop.count(id)) continue;
    ir::Expr* def = id->definition();
    if (def == nullptr ||
        !(def->isA<ir::Split>() || def->isA<ir::Merge>() || def->isA<ir::Resize>()) ||
        !seen.insert(def).second) {
      continue;
    }
    out.push_back(def);
    for (ir::Val* in : def->inputs()) work.push_back(in->as<ir::IterDomain>());
  }
  return out;
}

}  // namespace

std::vector<ir::IterDomain*> resizedRoot(const ir::TensorView* tv) {
  std::vector<ir::IterDomain*> ids = tv->domain()->maybeRoot();
  for (ir::IterDomain*& id : ids) {
    for (ir::Expr* use : id->uses()) {
      if (auto* r = use->dynCast<ir::Resize>()) id = r->out();
    }
  }
  return ids;
}

bool isPromoted(const LowerContext& ctx, const ir::TensorView* tv) {
  const transform::LoopGraph& lg = ctx.loopGraph();
  for (ir::IterDomain* id : tv->loop()) {
    if (!lg.contains(id) || lg.isTrivial(lg.group(id))) continue;
    if (!lg.isExactlyPromoted(id)) return true;
  }
  return false;
}

Promotion promotionOf(const LowerContext& ctx, const ir::TensorView* tv) {
  const transform::LoopGraph& lg = ctx.loopGraph();
  Promotion pr;
  for (ir::IterDomain* id : tv->loop()) {
    if (!lg.contains(id) || lg.isTrivial(lg.group(id)) || lg.isExactlyPromoted(id)) continue;
    ir::IterDomain* p = lg.promoted(id);
    pr.map[id] = p;
    const ir::TensorView* owner = lg.owner(p);
    if (std::find(pr.refs.begin(), pr.refs.end(), owner) == pr.refs.end()) pr.refs.push_back(owner);
  }
  if (pr.map.empty()) return pr;
  const std::vector<ir::Expr*> history = historyOf(tv->domain()->maybeRoot(), tv->loop());
  std::vector<bool> replaced(history.size(), false);
  auto mapTo = [&](ir::IterDomain* id, ir::IterDomain* to) { pr.map.emplace(id, to); };
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t i = 0; i < history.size(); ++i) {
      if (replaced[i]) continue;
      if (auto* s = history[i]->dynCast<ir::Split>()) {
        auto o = pr.map.find(s->outer());
        auto n = pr.map.find(s->inner());
        ir::IterDomain* q = o != pr.map.end() ? o->second : n != pr.map.end() ? n->second : nullptr;
        if (q == nullptr || q->definition() == nullptr) continue;
        auto* d = q->definition()->dynCast<ir::Split>();
        if (d == nullptr || d->innerSplit() != s->innerSplit() ||
            !sameFactor(d->factor(), s->factor())) {
          continue;
        }
        mapTo(s->outer(), d->outer());
        mapTo(s->inner(), d->inner());
        mapTo(s->in(), d->in());
        replaced[i] = progress = true;
      } else if (auto* m = history[i]->dynCast<ir::Merge>()) {
        auto it = pr.map.find(m->out());
        if (it == pr.map.end()) continue;
        ir::IterDomain* q = it->second;
        auto* d = q->definition() != nullptr ? q->definition()->dynCast<ir::Merge>() : nullptr;
        if (d != nullptr) {
          mapTo(m->outer(), d->outer());
          mapTo(m->inner(), d->inner());
        } else if (m->outer()->isBroadcast()) {
          mapTo(m->inner(), q);
        } else if (m->inner()->isBroadcast()) {
          mapTo(m->outer(), q);
        } else {
          continue;
        }
        replaced[i] = progress = true;
      }
    }
  }
  for (size_t i = 0; i < history.size(); ++i) {
    if (!replaced[i]) pr.kept.push_back(history[i]);
  }
  return pr;
}

IndexMap promotedIndices(kir::Kernel& kernel, LowerContext& ctx, const ir::TensorView* tv,
                         const IndexMap& loop_idx) {
  const transform::IdGraph& exact = ctx.loopGraph().exact();
  Promotion pr = promotionOf(ctx, tv);
  IndexBuilder b{kernel};
  // Indices per exact set.
  std::unordered_map<int64_t, kir::Value*> by_set;
  auto set = [&](const ir::IterDomain* id) {
    int64_t s = exact.setOf(id);
    LOOM_ASSERT(s >= 0, id->toString(), " is not in the exact graph");
    return s;
  };
  auto known = [&](const ir::IterDomain* id) { return by_set.count(set(id)) != 0; };
  auto get = [&](const ir::IterDomain* id) { return by_set.at(set(id)); };
  // A loop ID with a counterpart seeds the counterpart's set only: its own set may be exactly
  // mapped to one of its own logical IDs (an inner split of merge(b, i) by extent(i) gives back
  // i), which must take the value the promoted history gives it, not the loop's.
  for (auto [id, value] : loop_idx) {
    auto it = pr.map.find(id);
    by_set.emplace(set(it != pr.map.end() ? it->second : id), value);
  }
  std::vector<ir::Expr*> exprs = pr.kept;
  // tv's own root-to-logical transforms (a reshape's merge): its loops may all be promoted, and
  // its root indices then come from its logical ones.
  if (tv->domain()->hasRoot()) {
    auto own = historyOf(tv->root(), tv->logical());
    exprs.insert(exprs.end(), own.begin(), own.end());
  }
  for (const ir::TensorView* ref : pr.refs) {
    auto h = historyOf(ref->domain()->maybeRoot(), ref->loop());
    exprs.insert(exprs.end(), h.begin(), h.end());
  }
  // Loop IDs of the promoted tensors that are broadcasts run once: index 0.
  for (const ir::TensorView* ref : pr.refs) {
    for (ir::IterDomain* id : ref->loop()) {
      if (id->isBroadcast()) by_set.emplace(set(id), kernel.constInt(0));
    }
  }
  for (bool progress = true; progress;) {
    progress = false;
    for (ir::Expr* e : exprs) {
      if (auto* s = e->dynCast<ir::Split>()) {
        if (known(s->in()) || !known(s->outer()) || !known(s->inner())) continue;
        kir::Value* inner_ext = ctx.lowerScalar(kernel, s->inner()->extent());
        by_set[set(s->in())] = b.add(b.mul(get(s->outer()), inner_ext), get(s->inner()));
        progress = true;
      } else if (auto* m = e->dynCast<ir::Merge>()) {
        if (known(m->outer()) || !known(m->out())) continue;
        kir::Value* inner_ext = ctx.lowerScalar(kernel, m->inner()->extent());
        by_set[set(m->outer())] = b.div(get(m->out()), inner_ext);
        by_set.emplace(set(m->inner()), b.mod(get(m->out()), inner_ext));
        progress = true;
      } else if (auto* r = e->dynCast<ir::Resize>()) {
        if (known(r->in()) || !known(r->out())) continue;
        by_set[set(r->in())] = b.sub(get(r->out()), ctx.lowerScalar(kernel, r->left()));
        progress = true;
      }
    }
  }
  // tv's own resizes, from its logical IDs back to its root: the input of a pad or slice may be
  // exactly mapped to an ID that another loop of the nest runs over (x[1, 12] padded to [1, 20]
  // and permuted, in the loops of y[20, 12] = f(x) * g(pad): the pad's input is y's dim 1 in the
  // exact graph, while the pad reads it at dim 0's index minus the padding). Its index here is
  // the one its own resize gives, whatever its set holds.
  std::unordered_map<const ir::IterDomain*, kir::Value*> own;
  auto value = [&](const ir::IterDomain* id) -> kir::Value* {
    auto it = own.find(id);
    if (it != own.end()) return it->second;
    return known(id) ? get(id) : nullptr;
  };
  if (tv->domain()->hasRoot()) {
    auto history = historyOf(tv->root(), tv->logical());
    for (auto it = history.rbegin(); it != history.rend(); ++it) {
      auto* r = (*it)->dynCast<ir::Resize>();
      if (r == nullptr) continue;
      kir::Value* out = value(r->out());
      if (out != nullptr) own[r->in()] = b.sub(out, ctx.lowerScalar(kernel, r->left()));
    }
  }
  IndexMap idx = loop_idx;
  for (ir::IterDomain* id : tv->domain()->maybeRoot()) {
    if (auto it = own.find(id); it != own.end()) {
      idx[id] = it->second;
      continue;
    }
    if (id->isBroadcast()) {
      // Readers take broadcast IDs at 0; an index the solve gives it (its set exactly mapped to a
      // loop piece, e.g. the outer half of split(merge(b, i), extent(i))) is kept for the
      // predicate, which masks the iterations where it is not 0.
      idx[id] = known(id) ? get(id) : kernel.constInt(0);
      continue;
    }
    // Reduction IDs have indices only inside their loops (a result write sits after them).
    if (id->isReduction() && !known(id)) continue;
    LOOM_ASSERT(known(id), "lowering: no index for ", id->toString(), " of ", tv->toString(),
                ", whose loops run over the promoted IDs of other tensors");
    idx[id] = get(id);
  }
  // The promoted tensors' root indices: the loops run over their spaces, so an iteration past
  // their extents (the padding of a non-divisible split) holds no element of `tv` either; the
  // predicate checks them (inRangePredicate).
  // (A broadcast root of theirs gets its index too when a merge gives it one: a write of `tv`
  // guarded to run once checks it, see predicates.cpp.)
  // A padded root's range is its resize output's (the pad's border is in the space too).
  for (const ir::TensorView* ref : pr.refs) {
    for (ir::IterDomain* id : resizedRoot(ref)) {
      if (!id->isReduction() && known(id) && !idx.count(id)) idx[id] = get(id);
    }
  }
  // IDs between root and loop that kept their own history (the forward direction of indexing
  // and predicates may ask for them).
  for (ir::Expr* e : pr.kept) {
    for (ir::Val* v : e->outputs()) {
      auto* id = v->as<ir::IterDomain>();
      if (!idx.count(id) && known(id)) idx[id] = get(id);
    }
  }
  return idx;
}

}  // namespace loom::lower
