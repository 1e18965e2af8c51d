// SPDX-License-Identifier: Apache-2.0
// Whole-fusion IterDomain graphs: disjoint sets over every IterDomain of every tensor, answering
// "are these two IDs the same iteration?".
//
//   Exact:       producer-consumer logical maps (never a broadcast with a non-broadcast),
//                sibling outputs of one expr, outputs of Splits (same factor and kind) or
//                Merges of already mapped inputs, and exact inverses (a merge of both halves of
//                an evenly dividing split is its input; an inner split of merge(A, B) by
//                extent(B) gives back A and B), which replay through a reshape creates.
//   Permissive:  Exact plus broadcast IDs mapped to what they resolve to, and a Merge with a
//                broadcast input mapped to its other input (forwarding through broadcasts).
//   In both, a Resize output (the logical ID of a sliced or padded dim) is an ID of its own: it
//   is not mapped to the Resize input, only to the IDs its consumers map to it.
#pragma once

#include <cstdint>
#include <map>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "loom/ir/fusion.h"
#include "loom/ir/iter_domain.h"
#include "loom/ir/transforms.h"

namespace loom::transform {

using ir::IterDomain;

enum class IdMappingMode : uint8_t { Exact, Permissive };

class IdGraph {
 public:
  /// Builds the graph over the tensors of `fusion` (Fusion::allTvs).
  IdGraph(const ir::Fusion& fusion, IdMappingMode mode);

  IdMappingMode mode() const { return mode_; }
  /// True when both IDs are in the graph and in one set.
  bool areMapped(const IterDomain* a, const IterDomain* b) const;
  /// The members of id's set (id alone when it is not in the graph).
  std::vector<IterDomain*> disjointSet(const IterDomain* id) const;
  /// Number of disjoint sets.
  int64_t numSets() const;
  /// A number naming id's set (equal for mapped IDs), or -1 when `id` is not in the graph.
  int64_t setOf(const IterDomain* id) const {
    auto it = index_.find(id);
    return it == index_.end() ? -1 : find(it->second);
  }
  /// True when `id` is in the graph.
  bool contains(const IterDomain* id) const { return index_.count(id) != 0; }
  /// Maps `a` and `b` (a fact the fusion cannot show, e.g. two inputs known to be the same
  /// size), then closes the graph again: transforms of the same kind on the newly mapped IDs map
  /// their outputs. False when they were mapped already. UserError for an ID not in the graph.
  bool mapIds(const IterDomain* a, const IterDomain* b);
  /// Every ID of the graph, in the order the tensors were visited.
  const std::vector<IterDomain*>& ids() const { return ids_; }
  /// areMapped, or one is in the set of an expanded broadcast that a producer-consumer pair
  /// meets with a real ID of the other's set (x[s0] * expand(b, [4]): the consumer's s0 and the
  /// expanded 4 are checked equal at run time, so loops over them run over one space). Such sets
  /// are not united: indexing keeps an expanded broadcast at its storage index 0, so a merge
  /// with it is not the same as one with the real dim.
  bool sameSpace(const IterDomain* a, const IterDomain* b) const;

 private:
  int64_t find(int64_t i) const;
  /// Unites the outputs of transforms of the same kind on mapped inputs, and exact inverses,
  /// until nothing changes.
  void close();
  bool unite(const IterDomain* a, const IterDomain* b);
  bool uniteInverse(ir::Expr* e);
  bool dividesInput(const ir::Split* s) const;
  /// An extent as a key: (true, value) for a constant, (false, the Scalar's address) otherwise.
  static std::pair<bool, int64_t> extentKey(const ir::Scalar* extent);

  IdMappingMode mode_;
  std::vector<IterDomain*> ids_;
  /// The Splits, Merges and Resizes between every tensor's domains.
  std::vector<ir::Expr*> id_exprs_;
  /// Dims a squeeze removes: 1 at run time, treated like broadcasts in permissive mode.
  std::unordered_set<const IterDomain*> squeezed_;
  std::unordered_map<const IterDomain*, int64_t> index_;
  mutable std::vector<int64_t> parent_;
  /// While building: merges by the set of their output and their inner extent (constant value,
  /// or the Scalar), and splits known to divide their input (a reshape's, constant ones) by the
  /// sets of their outputs. Keyed that finely so that a chain of splits and merges that all map
  /// to one set finds its inverse in one lookup, not by scanning the set.
  /// A bucket's members are all united with the first match's IDs on the first match, so later
  /// matches unite with its front only (a chain makes buckets as long as the chain).
  template <typename E>
  struct Bucket {
    std::vector<E*> exprs;
    bool united = false;
  };
  std::map<std::tuple<int64_t, bool, int64_t>, Bucket<ir::Merge>> merges_by_set_;
  std::map<std::pair<int64_t, int64_t>, Bucket<ir::Split>> exact_splits_by_set_;
  std::unordered_set<const ir::Split*> reshape_splits_;
  /// Producer-consumer logical pairs of an expanded broadcast and a real ID (sameSpace).
  std::vector<std::pair<const IterDomain*, const IterDomain*>> expanded_meets_real_;
};

}  // namespace loom::transform
