// SPDX-License-Identifier: Apache-2.0
// LoopGraph: which loop IDs of a scheduled fusion are one loop, what each loop iterates over (its
// promoted ID), and how the loops nest. Lowering builds its loop nests from it.
//
//   transform::LoopGraph loops(fusion);          // after scheduling and inlining
//   loops.group(tv->axis(0)) == loops.group(consumer->axis(1));   // one loop?
//   loops.promoted(tv->axis(0))->extent();                       // that loop's trip count
//
// ## Groups
// A producer P inlined at position p shares its loop IDs [0, p) with every consumer C: P's axis k
// is the loop of C's axis a(k), where a aligns P's loop onto C's in order through the permissive
// ID graph (a broadcast maps to what it is resolved to; C may hold broadcast loop IDs of its own
// between two matches). The groups are the union of these pairs over all producer-consumer
// pairs, plus sibling outputs of one expr (which share one schedule) axis by axis. No position is
// compared with another: sharing is decided by the ID graph alone.
//
// ## Promotion
// Members of one group may iterate over different spaces: a producer without a broadcast that its
// consumer merges with a real dim (x[N] -> broadcast [1, N] -> + y[M, N], flattened and split)
// has loop IDs over N while the loop they share runs over M * N. The group's promoted ID is the
// member that covers every member: the one derived (through its tensor's Split/Merge history and
// across tensors through the exact graph) from the most non-broadcast IDs. The loop runs over the
// promoted ID's extent, and a member that is not exactly mapped to it is indexed through the
// promoted ID's history (lowering's index computation), so that `x` above is read at
// (m % N), not at m.
//
// ## Nesting
// A tensor T with compute-at position ca lives in the loop of its innermost loop ID left of ca (its
// scope; none: the kernel body) and owns its loop IDs [ca, n): each owned loop is nested in the
// previous one, the first in the scope. Groups whose members are all broadcast IDs are trivial:
// not loops, index 0 (a broadcast bound to threads or blocks gives every thread the same value,
// so the tensor is computed by all of them and its global writes are guarded to index 0). When owners disagree about where a loop
// nests, the deepest claim wins if every other claim encloses it and only thread/block loops lie
// between (those are not loops: a tensor placed inside extra ones is computed redundantly, and
// its global writes are guarded to index 0 by lowering); any other disagreement (a schedule whose
// inlining cannot be realized by one loop nest) is a UserError naming the tensors.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "loom/ir/fusion.h"
#include "loom/ir/iter_domain.h"
#include "loom/ir/tensor_view.h"
#include "loom/transform/id_graph.h"

namespace loom::transform {

using ir::IterDomain;
using ir::TensorView;

/// Where producer loop IDs [0, pos) land in consumer `c`: out[k] is the consumer position of
/// producer axis k. Producer IDs map in order (permissive graph) onto consumer IDs; consumer IDs
/// skipped between two matches must be broadcasts. Returns false (and describes the failing axis
/// in `why` when given) when they do not map.
bool alignLoops(const TensorView* producer, const TensorView* consumer, int64_t pos,
                const IdGraph& permissive, std::vector<int64_t>& out, std::string* why = nullptr);

/// How many IDs without a definition `id` derives from inside its tensor (walking definitions):
/// real ones (iteration, reduction, expanded broadcast: they contribute their extent to a merge)
/// and plain broadcasts. A loop is promoted to the member with the most real ones, then the
/// fewest broadcasts, then the fewest expanded broadcasts (a real ID's exact set reaches the
/// logical IDs of the tensors that share the loop; an expanded broadcast's does not, so indices
/// solved over its history would miss them).
struct LoopCoverage {
  int64_t real = 0;
  int64_t broadcast = 0;
  int64_t expanded = 0;  ///< of the real ones, the expanded broadcasts
};
LoopCoverage loopCoverage(const IterDomain* id);

class LoopGraph {
 public:
  /// Builds the graph of a scheduled fusion (compute-at positions set). Throws UserError when the
  /// inlining cannot be realized as one loop nest.
  explicit LoopGraph(const ir::Fusion& fusion);

  const IdGraph& exact() const { return *exact_; }
  const IdGraph& permissive() const { return *permissive_; }

  /// True for loop IDs of the fusion's tensors.
  bool contains(const IterDomain* id) const { return index_.count(id) != 0; }
  /// The group of a loop ID (a dense number); UserError-free: the ID must be a loop ID.
  int64_t group(const IterDomain* id) const;
  int64_t numGroups() const { return int64_t(groups_.size()); }
  /// The members of a group.
  const std::vector<IterDomain*>& members(int64_t group) const { return groups_[size_t(group)].members; }
  /// The member whose extent the loop runs over.
  IterDomain* promoted(int64_t group) const { return groups_[size_t(group)].promoted; }
  IterDomain* promoted(const IterDomain* id) const { return promoted(group(id)); }
  /// The tensor a loop ID belongs to.
  TensorView* owner(const IterDomain* id) const;
  /// The group's parallel type: the one non-Serial type its members carry (two different ones
  /// are a UserError at construction), else Serial.
  ir::ParallelType parallelType(int64_t group) const { return groups_[size_t(group)].ptype; }
  /// All members broadcasts (parallelized or not): not a loop; index 0.
  bool isTrivial(int64_t group) const { return groups_[size_t(group)].trivial; }
  /// The group this group's loop is nested in, or -1 (kernel body).
  int64_t parent(int64_t group) const { return groups_[size_t(group)].parent; }

  /// The loop `tv` is computed and allocated in: its innermost non-trivial loop ID left of its
  /// compute-at position, or -1 (kernel body).
  int64_t scope(const TensorView* tv) const;
  /// The non-trivial loops `tv`'s expr runs in, outermost first: its innermost own loop (or its
  /// scope) and that loop's ancestors. Besides `tv`'s own loop IDs this may hold thread/block loops
  /// of the tensors it shares loops with.
  std::vector<int64_t> loopPath(const TensorView* tv) const;

  /// True when loop ID `id` iterates over its group's promoted space: exactly mapped to the
  /// promoted ID (or the promoted ID itself). False for a member forwarded through a broadcast,
  /// which lowering indexes through the promoted ID's history.
  bool isExactlyPromoted(const IterDomain* id) const;

  /// For a producer held in registers (a local tensor): the first of its thread/block-parallel
  /// loop IDs (shared with other consumers or its own) whose loop `consumer` neither shares nor
  /// matches with a loop of the same parallel type over the same index space (promoted IDs
  /// exactly mapped, or mapped only through size-1 broadcasts), so that some element would be
  /// read by a thread that did not write it; null when there is none. Broadcast and reduction IDs do not count (every thread of a broadcast
  /// computes the same value; a reduction's result is the reductions pass's business).
  const IterDomain* registersReadAcrossThreads(const TensorView* producer,
                                               const TensorView* consumer) const;
  /// The same for a producer every thread of a block sees (shared memory, or global memory
  /// written in the same kernel): the first of its block-parallel loop IDs whose loop `consumer`
  /// neither shares nor matches, so that some element would be read by another block; null when
  /// there is none.
  const IterDomain* readAcrossBlocks(const TensorView* producer,
                                           const TensorView* consumer) const;

 private:
  /// registersReadAcrossThreads (thread and block IDs) or readAcrossBlocks (block IDs).
  const IterDomain* readAcross(const TensorView* producer, const TensorView* consumer,
                               bool blocks_only) const;
  struct Group {
    std::vector<IterDomain*> members;
    IterDomain* promoted = nullptr;
    ir::ParallelType ptype = ir::ParallelType::Serial;
    bool trivial = false;
    int64_t parent = -2;  ///< -2: not set yet
    /// Where the tensors owning this loop nest it (parent group, tensor), one entry per tensor.
    std::vector<std::pair<int64_t, const TensorView*>> claims;
  };
  int64_t find(int64_t i) const;
  void unite(const IterDomain* a, const IterDomain* b);
  void buildGroups(const std::vector<TensorView*>& tvs);
  void promote();
  void nest(const std::vector<TensorView*>& tvs);

  std::unique_ptr<IdGraph> exact_;
  std::unique_ptr<IdGraph> permissive_;
  std::unordered_map<const IterDomain*, int64_t> index_;  ///< loop ID -> slot
  std::vector<IterDomain*> ids_;
  std::vector<TensorView*> id_owner_;
  mutable std::vector<int64_t> parent_;  ///< union-find over slots
  std::vector<int64_t> slot_group_;       ///< slot -> dense group
  std::vector<Group> groups_;
};

}  // namespace loom::transform
