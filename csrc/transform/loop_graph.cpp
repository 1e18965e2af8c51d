// SPDX-License-Identifier: Apache-2.0
// LoopGraph: loop groups from inlining through the ID graphs, promotion and nesting.
#include "loom/transform/loop_graph.h"

#include <algorithm>
#include <optional>
#include <sstream>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "loom/ir/exprs.h"
#include "loom/ir/transforms.h"
#include "transform/utils.h"

namespace loom::transform {

using namespace loom::ir;

bool alignLoops(const TensorView* producer, const TensorView* consumer, int64_t pos,
                const IdGraph& permissive, std::vector<int64_t>& out, std::string* why) {
  out.clear();
  int64_t next = 0;
  for (int64_t k = 0; k < pos; ++k) {
    IterDomain* id = producer->axis(k);
    int64_t j = next;
    while (j < consumer->nDims() && !permissive.areMapped(id, consumer->axis(j))) {
      if (!consumer->axis(j)->isBroadcast()) break;
      ++j;
    }
    if (j >= consumer->nDims() || !permissive.areMapped(id, consumer->axis(j))) {
      if (why != nullptr) {
        std::ostringstream os;
        os << "axis " << k << " (" << id->toString() << ") of " << producer->toString()
           << " does not map to axis " << std::min(j, consumer->nDims() - 1) << " of consumer "
           << consumer->toString() << " (producer loop IDs must map in order onto a prefix of the "
           << "consumer's loop; only consumer broadcasts may be skipped)";
        *why = os.str();
      }
      out.clear();
      return false;
    }
    out.push_back(j);
    next = j + 1;
  }
  return true;
}

namespace {

// The IDs without a definition that each ID is made of, memoized bottom-up with an explicit
// stack: every ID of a chain of splits is made of the same leaf, which walking the chain from
// each of them would find in time quadratic in its length.
class LeafCache {
 public:
  const std::vector<const IterDomain*>& of(const IterDomain* id) {
    std::vector<std::pair<const IterDomain*, bool>> stack{{id, false}};
    while (!stack.empty()) {
      auto [x, expanded] = stack.back();
      if (memo_.count(x) != 0) {
        stack.pop_back();
        continue;
      }
      Expr* def = x->definition();
      if (def == nullptr) {
        memo_[x] = {x};
        stack.pop_back();
        continue;
      }
      if (!expanded) {
        stack.back().second = true;
        for (Val* in : def->inputs()) stack.push_back({in->as<IterDomain>(), false});
        continue;
      }
      stack.pop_back();
      std::vector<const IterDomain*> leaves;
      for (Val* in : def->inputs()) {
        for (const IterDomain* l : memo_.at(in->as<IterDomain>())) {
          if (std::find(leaves.begin(), leaves.end(), l) == leaves.end()) leaves.push_back(l);
        }
      }
      memo_[x] = std::move(leaves);
    }
    return memo_.at(id);
  }

 private:
  std::unordered_map<const IterDomain*, std::vector<const IterDomain*>> memo_;
};

LoopCoverage coverageOf(const std::vector<const IterDomain*>& leaves) {
  LoopCoverage c;
  for (const IterDomain* x : leaves) {
    // An expanded broadcast counts as real: merged with another ID it contributes its expanded
    // extent (the merge iterates every copy).
    (x->isBroadcast() && !x->hasExpandedExtent() ? c.broadcast : c.real) += 1;
    if (x->isBroadcast() && x->hasExpandedExtent()) ++c.expanded;
  }
  return c;
}

}  // namespace

LoopCoverage loopCoverage(const IterDomain* id) {
  LeafCache leaves;
  return coverageOf(leaves.of(id));
}

namespace {

// The tensors whose loops are placed: outputs of the fusion's math exprs (first output of each;
// siblings share its loops).
std::vector<TensorView*> placedTensors(const Fusion& fusion) {
  std::vector<TensorView*> tvs;
  for (Expr* e : fusion.exprs()) {
    if (e->outputs().empty()) continue;
    if (auto* tv = e->output(0)->dynCast<TensorView>()) tvs.push_back(tv);
  }
  return tvs;
}

}  // namespace

LoopGraph::LoopGraph(const Fusion& fusion)
    : exact_(std::make_unique<IdGraph>(fusion, IdMappingMode::Exact)),
      permissive_(std::make_unique<IdGraph>(fusion, IdMappingMode::Permissive)) {
  std::vector<TensorView*> tvs = fusion.allTvs();
  for (TensorView* tv : tvs) {
    for (IterDomain* id : tv->loop()) {
      if (index_.emplace(id, int64_t(ids_.size())).second) {
        ids_.push_back(id);
        id_owner_.push_back(tv);
        parent_.push_back(int64_t(parent_.size()));
      }
    }
  }
  buildGroups(placedTensors(fusion));
  promote();
  nest(placedTensors(fusion));
}

int64_t LoopGraph::find(int64_t i) const {
  while (parent_[size_t(i)] != i) {
    parent_[size_t(i)] = parent_[size_t(parent_[size_t(i)])];
    i = parent_[size_t(i)];
  }
  return i;
}

void LoopGraph::unite(const IterDomain* a, const IterDomain* b) {
  int64_t ra = find(index_.at(a));
  int64_t rb = find(index_.at(b));
  if (ra != rb) parent_[size_t(std::max(ra, rb))] = std::min(ra, rb);
}

void LoopGraph::buildGroups(const std::vector<TensorView*>& tvs) {
  for (TensorView* tv : tvs) {
    Expr* def = tv->definition();
    // Siblings (Welford's avg, m2, n) share output 0's schedule, axis by axis.
    for (TensorView* sib : detail::tvOutputs(def)) {
      LOOM_CHECK(sib->nDims() == tv->nDims(), "lowering: ", sib->toString(), " and ",
                 tv->toString(), " are outputs of one ", def->opName(),
                 " but their loop domains differ in rank (", sib->nDims(), " vs ", tv->nDims(),
                 "); siblings share one schedule");
      for (int64_t k = 0; k < tv->nDims(); ++k) unite(tv->axis(k), sib->axis(k));
    }
    for (TensorView* p : detail::tvInputs(def)) {
      if (p->computeAtPosition() == 0) continue;
      std::vector<int64_t> at;
      std::string why;
      LOOM_CHECK(alignLoops(p, tv, p->computeAtPosition(), *permissive_, at, &why),
                 "lowering: ", p->toString(), " is inlined at position ", p->computeAtPosition(),
                 " but its loops do not line up with its consumer: ", why);
      for (size_t k = 0; k < at.size(); ++k) unite(p->axis(int64_t(k)), tv->axis(at[k]));
    }
  }
  // Dense group numbers in slot order (deterministic).
  slot_group_.assign(ids_.size(), -1);
  for (size_t i = 0; i < ids_.size(); ++i) {
    int64_t r = find(int64_t(i));
    if (slot_group_[size_t(r)] < 0) {
      slot_group_[size_t(r)] = int64_t(groups_.size());
      groups_.emplace_back();
    }
    slot_group_[i] = slot_group_[size_t(r)];
    groups_[size_t(slot_group_[i])].members.push_back(ids_[i]);
  }
}

void LoopGraph::promote() {
  LeafCache leaves;
  for (Group& g : groups_) {
    LoopCoverage best_cov;
    g.trivial = true;
    for (IterDomain* id : g.members) {
      LoopCoverage c = coverageOf(leaves.of(id));
      auto key = [](const LoopCoverage& k) {
        return std::make_tuple(k.real, -k.broadcast, -k.expanded);
      };
      bool better = g.promoted == nullptr || key(c) > key(best_cov) ||
                    (key(c) == key(best_cov) && g.promoted->isReduction() && !id->isReduction());
      if (better) {
        g.promoted = id;
        best_cov = c;
      }
      ParallelType p = id->parallelType();
      if (p != ParallelType::Serial) {
        if (g.ptype == ParallelType::Serial) {
          g.ptype = p;
        } else if (p != g.ptype && (isThreadOrBlockDim(p) || isThreadOrBlockDim(g.ptype))) {
          LOOM_THROW("lowering: loop IDs ", id->toString(), " (", parallelTypeName(p),
                     ") and a loop ID parallelized on ", parallelTypeName(g.ptype),
                     " share one loop through inlining; shared loop IDs must have one parallel "
                     "type (parallelize them alike)");
        }
      }
      if (!id->isBroadcast()) g.trivial = false;
    }
  }
}

int64_t LoopGraph::group(const IterDomain* id) const {
  auto it = index_.find(id);
  LOOM_ASSERT(it != index_.end(), id->toString(), " is not a loop ID of the fusion");
  return slot_group_[size_t(it->second)];
}

TensorView* LoopGraph::owner(const IterDomain* id) const {
  auto it = index_.find(id);
  LOOM_ASSERT(it != index_.end(), id->toString(), " is not a loop ID of the fusion");
  return id_owner_[size_t(it->second)];
}

int64_t LoopGraph::scope(const TensorView* tv) const {
  for (int64_t k = std::min(tv->computeAtPosition(), tv->nDims()) - 1; k >= 0; --k) {
    int64_t g = group(tv->axis(k));
    if (!isTrivial(g)) return g;
  }
  return -1;
}

std::vector<int64_t> LoopGraph::loopPath(const TensorView* tv) const {
  int64_t innermost = scope(tv);
  for (int64_t k = tv->computeAtPosition(); k < tv->nDims(); ++k) {
    int64_t g = group(tv->axis(k));
    if (!isTrivial(g)) innermost = g;
  }
  std::vector<int64_t> path;
  for (int64_t g = innermost; g >= 0; g = parent(g)) path.push_back(g);
  std::reverse(path.begin(), path.end());
  return path;
}

namespace {

// True when loop IDs `a` and `b` give every iteration the same element: exactly mapped, or
// permissively mapped (the same transforms) with the same real dims underneath: every leaf that
// is not of size 1 exactly mapped to one on the other side. A broadcast standing for a size-1 dim
// on both sides (against the reduction of a broadcast) is no difference; a broadcast resolved to
// a real dim on one side is (iota[4] against the merge of [4, s]: the other side iterates s too).
bool sameIndexSpace(const IdGraph& exact, const IdGraph& permissive, const IterDomain* a,
                    const IterDomain* b) {
  if (exact.areMapped(a, b)) return true;
  if (!permissive.areMapped(a, b)) return false;
  auto sizeOne = [](const IterDomain* x) {
    if (x->isBroadcast()) return !x->hasExpandedExtent();
    auto c = x->extent()->constInt();
    return c.has_value() && *c == 1;
  };
  LeafCache leaves;
  std::vector<const IterDomain*> la = leaves.of(a);
  std::vector<const IterDomain*> lb = leaves.of(b);
  auto covered = [&](const std::vector<const IterDomain*>& from,
                     const std::vector<const IterDomain*>& to) {
    for (const IterDomain* x : from) {
      if (sizeOne(x)) continue;
      bool ok = false;
      for (const IterDomain* y : to) ok = ok || (!sizeOne(y) && exact.sameSpace(x, y));
      if (!ok) return false;
    }
    return true;
  };
  return covered(la, lb) && covered(lb, la);
}

}  // namespace

const IterDomain* LoopGraph::registersReadAcrossThreads(const TensorView* producer,
                                                        const TensorView* consumer) const {
  return readAcross(producer, consumer, /*blocks_only=*/false);
}

const IterDomain* LoopGraph::readAcrossBlocks(const TensorView* producer,
                                              const TensorView* consumer) const {
  return readAcross(producer, consumer, /*blocks_only=*/true);
}

const IterDomain* LoopGraph::readAcross(const TensorView* producer, const TensorView* consumer,
                                        bool blocks_only) const {
  std::vector<int64_t> path = loopPath(consumer);
  // Every axis: those left of the compute-at position are shared with some consumer, which
  // need not be this one.
  for (IterDomain* id : producer->loop()) {
    ParallelType p = id->parallelType();
    const bool counts = blocks_only ? isBlockDim(p) : isThreadOrBlockDim(p);
    if (!counts || id->isBroadcast() || id->isReduction() || isTrivial(group(id))) {
      continue;
    }
    if (std::find(path.begin(), path.end(), group(id)) != path.end()) continue;
    // The spaces the loops really run over: their promoted IDs (a consumer inlined into a
    // larger tensor's loops runs over that tensor's space, whatever its own IDs say).
    bool same_threads = false;
    for (IterDomain* cid : consumer->loop()) {
      same_threads =
          same_threads || (cid->parallelType() == p &&
                           sameIndexSpace(*exact_, *permissive_, promoted(id), promoted(cid)));
    }
    if (!same_threads) return id;
  }
  return nullptr;
}

bool LoopGraph::isExactlyPromoted(const IterDomain* id) const {
  IterDomain* p = promoted(id);
  return p == id || exact_->areMapped(p, id);
}

void LoopGraph::nest(const std::vector<TensorView*>& tvs) {
  // Each tensor's own loops nest in its scope, one inside the other.
  for (const TensorView* tv : tvs) {
    int64_t prev = scope(tv);
    for (int64_t k = tv->computeAtPosition(); k < tv->nDims(); ++k) {
      int64_t g = group(tv->axis(k));
      if (isTrivial(g)) continue;
      groups_[size_t(g)].claims.push_back({prev, tv});
      if (groups_[size_t(g)].parent == -2) groups_[size_t(g)].parent = prev;
      prev = g;
    }
  }
  // Reconcile disagreeing claims: the deepest claim wins when every other one is an ancestor of
  // it with only thread/block loops in between. Parents only move deeper, so this settles.
  auto between_parallel = [&](int64_t outer, int64_t inner, int64_t g) {
    // True when `outer` (-1: the body) encloses `inner` and `inner` with every loop between
    // them is a thread/block loop: the extra loops a claimant of `outer` would sit in.
    for (int64_t x = inner, steps = 0; x != outer; x = groups_[size_t(x)].parent, ++steps) {
      if (x < 0 || x == g || steps > int64_t(groups_.size())) return false;
      if (!isThreadOrBlockDim(groups_[size_t(x)].ptype)) return false;
    }
    return true;
  };
  auto describe = [&](int64_t p) {
    return p < 0 ? std::string("the kernel body") : "the loop of " + promoted(p)->toString();
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t g = 0; g < groups_.size(); ++g) {
      Group& grp = groups_[g];
      if (grp.claims.size() < 2) continue;
      std::optional<int64_t> winner;
      for (const auto& [candidate, by] : grp.claims) {
        bool dominates = true;
        for (const auto& [other, tv] : grp.claims) {
          dominates =
              dominates && (other == candidate ||
                            (candidate >= 0 && between_parallel(other, candidate, int64_t(g))));
        }
        if (dominates) {
          winner = candidate;
          break;
        }
      }
      if (!winner) {
        const auto& a = grp.claims.front();
        auto b = std::find_if(grp.claims.begin(), grp.claims.end(),
                              [&](const auto& c) { return c.first != a.first; });
        LOOM_THROW("lowering: the loop of ", promoted(int64_t(g))->toString(),
                   " would be nested in ", describe(a.first), " for ", a.second->toString(),
                   " but in ", describe(b->first), " for ", b->second->toString(),
                   "; their inlining cannot be realized by one loop nest (inline them "
                   "consistently, e.g. with transform::inlineMost)");
      }
      if (*winner != grp.parent) {
        grp.parent = *winner;
        changed = true;
      }
    }
  }
  // A group no tensor owns (every member borrowed) cannot be placed.
  for (size_t g = 0; g < groups_.size(); ++g) {
    if (groups_[g].trivial || groups_[g].parent != -2) continue;
    bool placed_member = false;
    for (IterDomain* id : groups_[g].members) {
      const TensorView* tv = owner(id);
      placed_member |= tv->definition() != nullptr;
    }
    LOOM_CHECK(!placed_member, "lowering: no tensor owns the loop of ",
               groups_[g].promoted->toString(),
               ": every tensor with that loop ID is inlined "
               "into another one there, which is not possible");
  }
  // Borrowed loops must enclose the tensor's scope, and nesting must be acyclic.
  for (const TensorView* tv : tvs) {
    std::vector<int64_t> chain;
    for (int64_t g = scope(tv); g >= 0; g = parent(g)) {
      LOOM_CHECK(std::find(chain.begin(), chain.end(), g) == chain.end(),
                 "lowering: the loops around ", tv->toString(), " nest in a cycle");
      chain.push_back(g);
      if (groups_[size_t(g)].parent == -2) break;
    }
    for (int64_t k = 0; k < std::min(tv->computeAtPosition(), tv->nDims()); ++k) {
      int64_t g = group(tv->axis(k));
      if (isTrivial(g)) continue;
      LOOM_CHECK(std::find(chain.begin(), chain.end(), g) != chain.end(),
                 "lowering: ", tv->toString(), " shares the loop of its axis ", k, " (",
                 tv->axis(k)->toString(), ") with its consumers, but that loop does not enclose ",
                 "the loop it is computed in");
    }
  }
  for (Group& g : groups_) {
    if (g.parent == -2) g.parent = -1;
  }
}

}  // namespace loom::transform
