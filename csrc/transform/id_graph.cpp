// SPDX-License-Identifier: Apache-2.0
// IdGraph: union-find over all IterDomains, closed under Split/Merge of mapped inputs.
#include "loom/transform/id_graph.h"

#include <map>
#include <tuple>
#include <unordered_set>

#include "loom/ir/scalar.h"
#include "loom/ir/tensor_view.h"
#include "loom/ir/transforms.h"
#include "loom/ir/logical_map.h"
#include "transform/utils.h"

namespace loom::transform {

using namespace loom::ir;

IdGraph::IdGraph(const Fusion& fusion, IdMappingMode mode) : mode_(mode) {
  auto tvs = fusion.allTvs();
  for (TensorView* tv : tvs) {
    for (IterDomain* id : detail::allIds(tv)) {
      if (index_.emplace(id, int64_t(ids_.size())).second) {
        ids_.push_back(id);
        parent_.push_back(int64_t(parent_.size()));
      }
    }
    auto es = detail::allIdExprs(tv);
    id_exprs_.insert(id_exprs_.end(), es.begin(), es.end());
    Expr* def = tv->definition();
    if (def != nullptr && def->isA<ReshapeOp>() && tv->domain()->hasRoot()) {
      // A reshape's splits divide their input (the reshape checked the sizes).
      for (Expr* e : detail::exprsBetween(tv->root(), tv->logical())) {
        if (auto* s = e->dynCast<Split>()) reshape_splits_.insert(s);
      }
    }
  }
  const bool permissive = mode == IdMappingMode::Permissive;
  // Dims a squeeze removes are 1 at run time (checked), like broadcasts, also when their extent
  // is symbolic: a merge with one is mapped to its other input in permissive mode.
  for (TensorView* tv : tvs) {
    auto* sq = tv->definition() != nullptr ? tv->definition()->dynCast<SqueezeOp>() : nullptr;
    if (sq == nullptr) continue;
    for (IterDomain* id : sq->squeezedIds()) squeezed_.insert(id);
  }
  for (TensorView* tv : tvs) {
    Expr* def = tv->definition();
    if (def == nullptr) continue;
    for (TensorView* p : detail::tvInputs(def)) {
      for (auto [pid, cid] : ir::pairwiseLogicalMap(p, tv, {.map_broadcast = true})) {
        if (permissive || pid->isBroadcast() == cid->isBroadcast()) {
          unite(pid, cid);
        } else if (pid->hasExpandedExtent() || cid->hasExpandedExtent()) {
          expanded_meets_real_.emplace_back(pid, cid);
        }
      }
    }
    // Siblings share one iteration space.
    auto outs = detail::tvOutputs(def);
    for (size_t k = 1; k < outs.size(); ++k) {
      const auto& a = outs[0]->logical();
      const auto& b = outs[k]->logical();
      for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) unite(a[i], b[i]);
    }
  }
  close();
}

bool IdGraph::mapIds(const IterDomain* a, const IterDomain* b) {
  LOOM_CHECK(contains(a) && contains(b), "mapIds: ", contains(a) ? b->toString() : a->toString(),
             " is not an IterDomain of this graph's fusion");
  if (!unite(a, b)) return false;
  close();
  return true;
}

void IdGraph::close() {
  const bool permissive = mode_ == IdMappingMode::Permissive;
  auto unitLike = [&](const IterDomain* id) {
    return id->isBroadcast() || squeezed_.count(id) != 0;
  };
  // Close under transforms: exprs of the same kind on mapped inputs give mapped outputs.
  bool changed = true;
  while (changed) {
    changed = false;
    using Key = std::tuple<int, int64_t, int64_t, int64_t, bool>;
    std::map<Key, Expr*> seen;
    // Merges by the set of their output: a split undoes any merge of its input's set (replay
    // through a reshape and back: the reshape's merge and the loop's split are on mapped, not
    // identical, IDs).
    merges_by_set_.clear();
    exact_splits_by_set_.clear();
    for (Expr* e : id_exprs_) {
      if (auto* m = e->dynCast<Merge>()) {
        merges_by_set_[{find(index_.at(m->out())), extentKey(m->inner()->extent()).first,
                        extentKey(m->inner()->extent()).second}]
            .exprs.push_back(m);
      }
      if (auto* s = e->dynCast<Split>(); s != nullptr && dividesInput(s)) {
        exact_splits_by_set_[{find(index_.at(s->outer())), find(index_.at(s->inner()))}]
            .exprs.push_back(s);
      }
    }
    for (Expr* e : id_exprs_) {
      Key key;
      if (auto* s = e->dynCast<Split>()) {
        auto f = s->factor()->constInt();
        int64_t fk = f.has_value() ? *f : -1 - s->factor()->name();
        key = {0, find(index_.at(s->in())), fk, 0, s->innerSplit()};
      } else {
        auto* m = e->as<Merge>();
        if (permissive && (unitLike(m->outer()) || unitLike(m->inner()))) {
          IterDomain* other = unitLike(m->outer()) ? m->inner() : m->outer();
          changed |= unite(m->out(), other);
        }
        key = {1, find(index_.at(m->outer())), find(index_.at(m->inner())), 0, false};
      }
      changed |= uniteInverse(e);
      auto [it, inserted] = seen.emplace(key, e);
      if (inserted) continue;
      for (size_t k = 0; k < e->outputs().size(); ++k) {
        changed |= unite(it->second->output(k)->as<IterDomain>(),
                         e->output(k)->as<IterDomain>());
      }
    }
  }
}

bool IdGraph::uniteInverse(Expr* e) {
  // Undoing a split or merge exactly gives back its input: merge(split(X, f).o, split(X, f).i)
  // is X when f divides X's extent, and split(merge(A, B), extent(B)) gives back A and B. Replay
  // through a reshape makes these (a reshaped ID lifted into the loop side).
  if (auto* m = e->dynCast<Merge>()) {
    // Any split that divides its input and whose outputs are mapped to the merge's inputs (the
    // merge may join IDs that are themselves merges undoing splits: a reshape [56] -> [2, 4, 7]
    // flattened back by a schedule).
    auto it = exact_splits_by_set_.find(
        {find(index_.at(m->outer())), find(index_.at(m->inner()))});
    if (it == exact_splits_by_set_.end()) return false;
    Bucket<Split>& b = it->second;
    if (b.united) return unite(m->out(), b.exprs.front()->in());
    b.united = true;
    bool changed = false;
    for (Split* s : b.exprs) changed |= unite(m->out(), s->in());
    return changed;
  }
  auto* s = e->as<Split>();
  if (!s->innerSplit()) return false;
  // Merges of the split's input set whose inner extent is the split's factor.
  auto [is_const, key] = extentKey(s->factor());
  auto it = merges_by_set_.find({find(index_.at(s->in())), is_const, key});
  if (it == merges_by_set_.end()) return false;
  Bucket<Merge>& b = it->second;
  if (b.united) {
    bool changed = unite(s->outer(), b.exprs.front()->outer());
    changed |= unite(s->inner(), b.exprs.front()->inner());
    return changed;
  }
  b.united = true;
  bool changed = false;
  for (Merge* m : b.exprs) {
    changed |= unite(s->outer(), m->outer());
    changed |= unite(s->inner(), m->inner());
  }
  return changed;
}

std::pair<bool, int64_t> IdGraph::extentKey(const ir::Scalar* extent) {
  if (auto c = extent->constInt()) return {true, *c};
  return {false, int64_t(reinterpret_cast<intptr_t>(extent))};
}

bool IdGraph::dividesInput(const Split* s) const {
  if (reshape_splits_.count(s) != 0) return true;
  auto x = s->in()->extent()->constInt();
  auto f = s->factor()->constInt();
  return x.has_value() && f.has_value() && *f > 0 && *x % *f == 0;
}

int64_t IdGraph::find(int64_t i) const {
  while (parent_[size_t(i)] != i) {
    parent_[size_t(i)] = parent_[size_t(parent_[size_t(i)])];
    i = parent_[size_t(i)];
  }
  return i;
}

bool IdGraph::unite(const IterDomain* a, const IterDomain* b) {
  auto ia = index_.find(a);
  auto ib = index_.find(b);
  if (ia == index_.end() || ib == index_.end()) return false;
  int64_t ra = find(ia->second);
  int64_t rb = find(ib->second);
  if (ra == rb) return false;
  parent_[size_t(std::max(ra, rb))] = std::min(ra, rb);
  return true;
}

bool IdGraph::areMapped(const IterDomain* a, const IterDomain* b) const {
  if (a == b) return true;
  auto ia = index_.find(a);
  auto ib = index_.find(b);
  if (ia == index_.end() || ib == index_.end()) return false;
  return find(ia->second) == find(ib->second);
}

bool IdGraph::sameSpace(const IterDomain* a, const IterDomain* b) const {
  if (areMapped(a, b)) return true;
  for (auto [x, y] : expanded_meets_real_) {
    if ((areMapped(a, x) && areMapped(b, y)) || (areMapped(a, y) && areMapped(b, x))) {
      return true;
    }
  }
  return false;
}

std::vector<IterDomain*> IdGraph::disjointSet(const IterDomain* id) const {
  auto it = index_.find(id);
  if (it == index_.end()) return {const_cast<IterDomain*>(id)};
  int64_t r = find(it->second);
  std::vector<IterDomain*> out;
  for (size_t i = 0; i < ids_.size(); ++i) {
    if (find(int64_t(i)) == r) out.push_back(ids_[i]);
  }
  return out;
}

int64_t IdGraph::numSets() const {
  int64_t n = 0;
  for (size_t i = 0; i < ids_.size(); ++i) n += find(int64_t(i)) == int64_t(i) ? 1 : 0;
  return n;
}

}  // namespace loom::transform
