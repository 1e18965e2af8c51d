// SPDX-License-Identifier: Apache-2.0
// The memory order of a reference tensor, from the allocation domain of the input it reads.
#include "loom/scheduler/memory_order.h"

#include <algorithm>
#include <optional>
#include <unordered_map>

#include "loom/ir/iter_domain.h"
#include "loom/ir/transforms.h"

namespace loom::scheduler::utils {

namespace {

using Key = std::vector<int64_t>;

// Where one input holds IDs: the allocation position of each exact set it has, and the keys of
// other sets found through splits and merges (memoized; nullopt: not held).
class Placement {
 public:
  Placement(const transform::IdGraph& exact, const ir::TensorView* input) : exact_(exact) {
    int64_t pos = 0;
    for (ir::IterDomain* id : input->maybeAllocation()) {
      if (id->isBroadcast() || id->isReduction()) continue;
      const int64_t set = exact.setOf(id);
      if (set >= 0) memo_.emplace(set, Key{pos});
      ++pos;
    }
  }

  // The key of `id`: compared lexicographically, smaller is outer in memory.
  std::optional<Key> keyOf(const ir::IterDomain* id, int depth = 0) {
    const int64_t set = exact_.setOf(id);
    if (set < 0) return std::nullopt;
    if (auto it = memo_.find(set); it != memo_.end()) return it->second;
    std::optional<Key> key;
    // A reshape makes the ID from the input's by a split (an outer and an inner piece) or a
    // merge (stepping as fast as its inner input). Some member of the set may be such an output.
    if (depth < 16) {
      for (ir::IterDomain* member : exact_.disjointSet(id)) {
        ir::Expr* def = member->definition();
        if (def == nullptr) continue;
        if (const auto* split = def->dynCast<ir::Split>()) {
          if (std::optional<Key> in = keyOf(split->in(), depth + 1)) {
            key = *in;
            key->push_back(member == split->outer() ? 0 : 1);
          }
        } else if (const auto* merge = def->dynCast<ir::Merge>()) {
          key = keyOf(merge->inner(), depth + 1);
        }
        if (key) break;
      }
    }
    memo_.emplace(set, key);
    return key;
  }

 private:
  const transform::IdGraph& exact_;
  std::unordered_map<int64_t, std::optional<Key>> memo_;
};

std::vector<ir::IterDomain*> nonBroadcastIds(const ir::TensorView* ref) {
  std::vector<ir::IterDomain*> ids;
  for (ir::IterDomain* id : ref->logical()) {
    if (!id->isBroadcast()) ids.push_back(id);
  }
  return ids;
}

}  // namespace

const ir::TensorView* memoryOrderInput(const ir::Fusion& fusion, const transform::IdGraph& exact,
                                       const ir::TensorView* ref) {
  const std::vector<ir::IterDomain*> ids = nonBroadcastIds(ref);
  const ir::TensorView* best = nullptr;
  size_t best_held = 0;
  for (ir::Val* v : fusion.inputs()) {
    const auto* tv = v->dynCast<ir::TensorView>();
    if (tv == nullptr || tv == ref) continue;
    Placement place(exact, tv);
    size_t held = 0;
    for (ir::IterDomain* id : ids) held += place.keyOf(id).has_value() ? 1 : 0;
    if (held > best_held) {
      best = tv;
      best_held = held;
    }
  }
  return best_held == ids.size() && !ids.empty() ? best : nullptr;
}

std::vector<ir::IterDomain*> memoryOrder(const ir::Fusion& fusion,
                                         const transform::IdGraph& exact,
                                         const ir::TensorView* ref) {
  std::vector<ir::IterDomain*> order = ref->logical();
  const ir::TensorView* input = memoryOrderInput(fusion, exact, ref);
  if (input == nullptr) return order;
  Placement place(exact, input);
  std::vector<std::pair<Key, ir::IterDomain*>> keyed;
  for (ir::IterDomain* id : nonBroadcastIds(ref)) keyed.emplace_back(*place.keyOf(id), id);
  std::stable_sort(keyed.begin(), keyed.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  size_t next = 0;
  for (ir::IterDomain*& slot : order) {
    if (!slot->isBroadcast()) slot = keyed[next++].second;
  }
  return order;
}

std::vector<ir::IterDomain*> memoryOrder(const ir::Fusion& fusion, const ir::TensorView* ref) {
  return memoryOrder(fusion, transform::IdGraph(fusion, transform::IdMappingMode::Exact), ref);
}

bool isInnerInMemory(const ir::Fusion& fusion, const transform::IdGraph& exact,
                     const ir::TensorView* red) {
  const std::vector<ir::IterDomain*> order = memoryOrder(fusion, exact, red);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    if (!(*it)->isBroadcast()) return (*it)->isReduction();
  }
  return true;
}

bool isInnerInMemory(const ir::Fusion& fusion, const ir::TensorView* red) {
  return isInnerInMemory(fusion, transform::IdGraph(fusion, transform::IdMappingMode::Exact), red);
}

bool reducesTrailingRun(const std::vector<ir::IterDomain*>& order) {
  bool seen_reduced = false;
  for (ir::IterDomain* id : order) {
    if (id->isReduction()) {
      seen_reduced = true;
    } else if (seen_reduced && !id->isBroadcast()) {
      return false;
    }
  }
  return true;
}

void partitionIds(const std::vector<ir::IterDomain*>& order, std::vector<ir::IterDomain*>& reduced,
                  std::vector<ir::IterDomain*>& kept) {
  for (ir::IterDomain* id : order) (id->isReduction() ? reduced : kept).push_back(id);
}

}  // namespace loom::scheduler::utils
