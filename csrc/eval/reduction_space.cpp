// SPDX-License-Identifier: Apache-2.0
// ReductionSpace: which input element each point of a reduction's output domain reads.
#include "eval/reduction_space.h"

#include <algorithm>
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "loom/ir/exprs.h"
#include "loom/ir/iter_domain.h"
#include "loom/ir/tensor_view.h"
#include "loom/ir/transforms.h"

namespace loom::eval::detail {
namespace {

using ir::IterDomain;
using ir::TensorView;

/// Ways (capped at 2) to place `out` as a subsequence of `in` where match(o, i) holds; `pick`
/// receives the input position of each output dim of the first way found.
int64_t embeddings(size_t n_out, size_t n_in, const std::function<bool(size_t, size_t)>& match,
                   std::vector<size_t>& pick) {
  // ways[o][i]: placements of out[o..] into in[i..], capped at 2.
  std::vector<std::vector<int64_t>> ways(n_out + 1, std::vector<int64_t>(n_in + 1, 0));
  for (size_t i = 0; i <= n_in; ++i) ways[n_out][i] = 1;
  for (size_t o = n_out; o-- > 0;) {
    for (size_t i = n_in; i-- > 0;) {
      int64_t w = ways[o][i + 1] + (match(o, i) ? ways[o + 1][i + 1] : 0);
      ways[o][i] = std::min<int64_t>(w, 2);
    }
  }
  if (ways[0][0] == 0) return 0;
  pick.clear();
  for (size_t o = 0, i = 0; o < n_out; ++i) {
    if (match(o, i) && ways[o + 1][i + 1] > 0) {
      pick.push_back(i);
      ++o;
    }
  }
  return ways[0][0];
}

/// The reduced input dims of `out`, a reduction output whose Reduction IDs were removed: its
/// extents matched to the input's, first by identity of the extent Scalars, then by value.
std::vector<bool> inferReduced(const ir::Expr* e, const TensorView* out, const TensorView* in,
                               const std::vector<int64_t>& in_shape, ExpressionEvaluator& ee) {
  const auto& out_ids = out->logical();
  auto in_ids = ir::TensorDomain::noReductions(in->logical());
  LOOM_CHECK(in_ids.size() == in_shape.size(), e->toString(), ": input ", in->toString(),
             " has ", in_ids.size(), " dims but its value has rank ", in_shape.size());
  std::vector<size_t> pick;
  int64_t ways = embeddings(out_ids.size(), in_ids.size(), [&](size_t o, size_t i) {
    return out_ids[o]->logicalExtent() == in_ids[i]->logicalExtent();
  }, pick);
  if (ways != 1) {
    ways = embeddings(out_ids.size(), in_ids.size(), [&](size_t o, size_t i) {
      return ee.extentOf(out_ids[o], out) == in_shape[i];
    }, pick);
  }
  LOOM_CHECK(ways == 1, e->toString(), ": ", out->toString(), " has no Reduction IDs (cleared?) "
             "and ", ways == 0 ? "its extents do not match" : "its extents match several ways",
             " the dims of ", in->toString(), ", so the reduced dims are unknown");
  std::vector<bool> reduced(in_shape.size(), true);
  for (size_t i : pick) reduced[i] = false;
  return reduced;
}

}  // namespace

ReductionSpace::ReductionSpace(const ir::Expr* e, const TensorView* out, const TensorView* in,
                               const std::vector<int64_t>& in_shape, ExpressionEvaluator& ee) {
  if (out->domain()->hasRoot()) {
    initMapped(e, out, in_shape, ee);
    return;
  }
  const auto& ids = out->logical();
  std::vector<bool> reduced(ids.size());
  for (size_t d = 0; d < ids.size(); ++d) reduced[d] = ids[d]->isReduction();
  bool cleared = ids.size() < in_shape.size() &&
                 std::none_of(reduced.begin(), reduced.end(), [](bool r) { return r; });
  if (cleared) {
    reduced = inferReduced(e, out, in, in_shape, ee);
  } else {
    LOOM_CHECK(ids.size() == in_shape.size(), e->toString(), ": ", out->toString(), " has ",
               ids.size(), " logical dims but the input has ", in_shape.size());
  }
  initDirect(reduced, in_shape);
}

void ReductionSpace::initDirect(const std::vector<bool>& reduced,
                                const std::vector<int64_t>& in_shape) {
  space_ = in_shape;
  for (size_t d = 0; d < reduced.size(); ++d) {
    if (!reduced[d]) out_shape_.push_back(in_shape[d]);
  }
  std::vector<int64_t> strides = rowMajorStrides(out_shape_);
  out_strides_.assign(reduced.size(), 0);
  for (size_t d = 0, k = 0; d < reduced.size(); ++d) {
    if (!reduced[d]) out_strides_[d] = strides[k++];
  }
}

void ReductionSpace::initMapped(const ir::Expr* e, const TensorView* out,
                                const std::vector<int64_t>& in_shape, ExpressionEvaluator& ee) {
  mapped_ = true;
  const auto& root = out->root();
  const auto& logical = out->logical();
  LOOM_CHECK(root.size() == in_shape.size(), e->toString(), ": the root domain of ",
             out->toString(), " has ", root.size(), " IDs but the input has rank ",
             in_shape.size());
  std::unordered_map<const IterDomain*, int> slot;
  auto slotOf = [&](const IterDomain* id) {
    return slot.emplace(id, int(slot.size())).first->second;
  };
  std::vector<bool> known;  // slot -> value determined by the steps so far
  auto mark = [&](int s) {
    if (size_t(s) >= known.size()) known.resize(size_t(s) + 1, false);
    known[size_t(s)] = true;
  };
  auto isKnown = [&](const IterDomain* id) {
    auto it = slot.find(id);
    return it != slot.end() && size_t(it->second) < known.size() && known[size_t(it->second)];
  };
  for (size_t d = 0; d < logical.size(); ++d) {
    const IterDomain* id = logical[d];
    int64_t extent = ee.extentOf(id, out);
    space_.push_back(extent);
    logical_slot_.push_back(slotOf(id));
    mark(logical_slot_.back());
    if (!id->isReduction()) out_shape_.push_back(extent);
  }
  std::vector<int64_t> strides = rowMajorStrides(out_shape_);
  for (size_t d = 0, k = 0; d < logical.size(); ++d) {
    out_strides_.push_back(logical[d]->isReduction() ? 0 : strides[k++]);
  }

  // Split/Merge exprs from root to logical, producers first, then replayed backwards.
  // Post-order with an explicit stack and sets: the chain may be long.
  std::vector<ir::Expr*> order;
  const std::unordered_set<const IterDomain*> root_set(root.begin(), root.end());
  std::unordered_set<const ir::Expr*> placed;
  // The definition to walk into from `id`: null at the root or when already placed.
  auto next = [&](const IterDomain* id) -> ir::Expr* {
    if (root_set.count(id) != 0) return nullptr;
    ir::Expr* def = id->definition();
    LOOM_CHECK(def != nullptr && (def->isA<ir::Split>() || def->isA<ir::Merge>()),
               e->toString(), ": logical ", id->toString(), " of ", out->toString(),
               " is neither a root ID nor derived from the root by Split/Merge");
    return placed.count(def) != 0 ? nullptr : def;
  };
  std::vector<std::pair<ir::Expr*, size_t>> stack;
  for (const IterDomain* id : logical) {
    if (ir::Expr* def = next(id)) stack.push_back({def, 0});
    while (!stack.empty()) {
      auto& [x, k] = stack.back();
      if (k < x->inputs().size()) {
        ir::Expr* d = next(x->input(k++)->as<IterDomain>());
        if (d != nullptr) stack.push_back({d, 0});
        continue;
      }
      if (placed.insert(x).second) order.push_back(x);
      stack.pop_back();
    }
  }
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    ir::Expr* x = *it;
    Step s{};
    if (auto* sp = x->dynCast<ir::Split>()) {
      LOOM_CHECK(isKnown(sp->outer()) && isKnown(sp->inner()), e->toString(), ": ",
                 x->toString(), " in the domain of ", out->toString(),
                 " has an output outside the logical domain");
      s = Step{true, slotOf(sp->in()), slotOf(sp->outer()), slotOf(sp->inner()),
               ee.extentOf(sp->inner(), out), ee.extentOf(sp->in(), out)};
      mark(s.a);
    } else {
      auto* m = x->as<ir::Merge>();
      LOOM_CHECK(isKnown(m->out()), e->toString(), ": ", x->toString(), " in the domain of ",
                 out->toString(), " has an output outside the logical domain");
      s = Step{false, slotOf(m->out()), slotOf(m->outer()), slotOf(m->inner()),
               ee.extentOf(m->inner(), out), 0};
      mark(s.b);
      mark(s.c);
    }
    steps_.push_back(s);
  }
  for (size_t i = 0; i < root.size(); ++i) {
    LOOM_CHECK(isKnown(root[i]), e->toString(), ": root ", root[i]->toString(), " of ",
               out->toString(), " is not reached from its logical domain");
    int64_t extent = ee.extentOf(root[i], out);
    LOOM_CHECK(extent == in_shape[i], e->toString(), ": root ", root[i]->toString(), " of ",
               out->toString(), " has extent ", extent, " but input dim ", i, " has size ",
               in_shape[i]);
    root_slot_.push_back(slot.at(root[i]));
  }
  n_slots_ = slot.size();
}

}  // namespace loom::eval::detail
