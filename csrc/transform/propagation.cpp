// SPDX-License-Identifier: Apache-2.0
// Maximum-information spanning tree, transform propagation and parallelizeAllLike.
#include "loom/transform/propagation.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "loom/ir/exprs.h"
#include "loom/ir/iter_domain.h"
#include "loom/ir/logical_map.h"
#include "loom/transform/id_graph.h"
#include "transform/utils.h"

namespace loom::transform {

using namespace loom::ir;

namespace {

// For each reference logical position: the ID carrying it in a tensor (nullptr: lost), and
// whether that ID is only a broadcast standing in for it (weak: no information).
struct Info {
  std::vector<IterDomain*> ids;
  std::vector<bool> weak;
};

int64_t count(const Info& info, bool weak = false) {
  int64_t n = 0;
  for (size_t i = 0; i < info.ids.size(); ++i) {
    n += info.ids[i] != nullptr && info.weak[i] == weak ? 1 : 0;
  }
  return n;
}

bool contains(const std::vector<IterDomain*>& ids, const IterDomain* id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

// Carries `info` of `from` across one edge to `to`. An ID reaching `to` as a broadcast standing
// in for a real ID is weak: no information, but replay along such edges still gives the broadcast
// the real ID's transforms (so the tensor can inline), which breaks ties.
Info carry(const Info& info, TensorView* from, TensorView* to, PropagationStep step) {
  std::unordered_map<IterDomain*, IterDomain*> m;
  if (step == PropagationStep::ProducerToConsumer) {
    for (auto [p, c] : ir::pairwiseLogicalMap(from, to)) {
      if (contains(to->logical(), c)) m[p] = c;
    }
  } else if (step == PropagationStep::ConsumerToProducer) {
    for (auto [p, c] : ir::pairwiseLogicalMap(to, from)) m[c] = p;
  } else {
    auto a = from->logical();
    auto b = to->logical();
    if (a.size() != b.size()) {
      a = TensorDomain::noReductions(a);
      b = TensorDomain::noReductions(b);
    }
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) m[a[i]] = b[i];
  }
  Info out{std::vector<IterDomain*>(info.ids.size(), nullptr),
           std::vector<bool>(info.ids.size(), false)};
  for (size_t i = 0; i < info.ids.size(); ++i) {
    if (info.ids[i] == nullptr) continue;
    auto it = m.find(info.ids[i]);
    if (it == m.end()) continue;
    out.ids[i] = it->second;
    out.weak[i] = info.weak[i] || (it->second->isBroadcast() && !info.ids[i]->isBroadcast());
  }
  return out;
}

}  // namespace

std::vector<SpanningTreeEdge> maxInfoSpanningTree(TensorView* reference,
                                                  const std::vector<TensorView*>& selected) {
  std::unordered_set<const TensorView*> allowed(selected.begin(), selected.end());
  auto ok = [&](const TensorView* tv) { return selected.empty() || allowed.count(tv) != 0; };
  std::unordered_map<const TensorView*, Info> info;
  info[reference] = Info{reference->logical(),
                         std::vector<bool>(reference->logical().size(), false)};
  std::vector<TensorView*> visited{reference};
  std::vector<SpanningTreeEdge> tree;
  while (true) {
    SpanningTreeEdge best{nullptr, nullptr, PropagationStep::Sibling, -1};
    Info best_info;
    int64_t best_stand_ins = -1;
    auto consider = [&](TensorView* from, TensorView* to, PropagationStep step) {
      if (!ok(to) || info.count(to)) return;
      Info i = carry(info.at(from), from, to, step);
      int64_t c = count(i);
      int64_t stand_ins = count(i, /*weak=*/true);
      bool sibling = step == PropagationStep::Sibling;
      bool best_sibling = best.step == PropagationStep::Sibling;
      bool better = c > best.information ||
                    (c == best.information && sibling && !best_sibling) ||
                    (c == best.information && sibling == best_sibling &&
                     stand_ins > best_stand_ins);
      if (better) {
        best = {from, to, step, c};
        best_info = std::move(i);
        best_stand_ins = stand_ins;
      }
    };
    for (TensorView* from : visited) {
      for (TensorView* s : detail::siblingsOf(from)) consider(from, s, PropagationStep::Sibling);
      for (TensorView* c : detail::consumersOf(from)) {
        consider(from, c, PropagationStep::ProducerToConsumer);
      }
      for (TensorView* p : detail::producersOf(from)) {
        consider(from, p, PropagationStep::ConsumerToProducer);
      }
    }
    if (best.to == nullptr) break;
    info[best.to] = std::move(best_info);
    visited.push_back(best.to);
    tree.push_back(best);
  }
  return tree;
}

void propagateTransforms(TensorView* reference, ReplayOptions options,
                         const std::vector<TensorView*>& selected) {
  for (const SpanningTreeEdge& e : maxInfoSpanningTree(reference, selected)) {
    switch (e.step) {
      case PropagationStep::ProducerToConsumer:
        TransformReplay::replayCasP(e.to, e.from, -1, options);
        break;
      case PropagationStep::ConsumerToProducer:
        TransformReplay::replayPasC(e.to, e.from, -1, options);
        break;
      case PropagationStep::Sibling:
        TransformReplay::selfReplay(e.from, e.to);
        break;
    }
  }
}

void parallelizeAllLike(TensorView* reference, const std::vector<TensorView*>& tvs) {
  Fusion& fusion = *reference->fusion();
  IdGraph exact(fusion, IdMappingMode::Exact);
  IdGraph permissive(fusion, IdMappingMode::Permissive);
  std::vector<TensorView*> targets = tvs.empty() ? fusion.allTvs() : tvs;
  for (TensorView* tv : targets) {
    if (tv == reference) continue;
    for (int64_t k = 0; k < tv->nDims(); ++k) {
      IterDomain* id = tv->axis(k);
      // The reference loop ID exactly mapped to it; else the first parallel one mapped
      // permissively.
      // Permissive sets can hold several reference loop IDs (x[1, N] and y[M, 1] read by one
      // [M, N] tensor map M and N permissively, and so both pieces of a split of merge(M, N)):
      // an exact match is the one loop it shares.
      IterDomain* match = nullptr;
      for (IterDomain* ref : reference->loop()) {
        if (exact.areMapped(id, ref)) {
          match = ref;
          break;
        }
      }
      for (IterDomain* ref : reference->loop()) {
        if (match == nullptr && ref->parallelType() != ParallelType::Serial &&
            permissive.areMapped(id, ref)) {
          match = ref;
        }
      }
      if (match == nullptr) continue;
      ParallelType p = match->parallelType();
      if (p == ParallelType::Serial) continue;
      bool used = std::any_of(tv->loop().begin(), tv->loop().end(),
                              [&](IterDomain* o) { return o->parallelType() == p; });
      if (used || (p == ParallelType::Vectorize && k != tv->nDims() - 1)) continue;
      // A box belongs to TMA copies; the tensors around them copy elementwise.
      if (p == ParallelType::Bulk && !isTmaCopyOutput(tv)) continue;
      id->parallelize(p);
    }
  }
}

}  // namespace loom::transform
