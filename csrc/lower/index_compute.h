// SPDX-License-Identifier: Apache-2.0
// Index math shared by the predicates and indexing passes: loop indices -> logical indices
// (backward through Split/Merge), producer indices from consumer indices, buffer offsets.
#pragma once

#include <unordered_map>
#include <vector>

#include "loom/lower/lower.h"
#include "loom/lower/kir_walk.h"

namespace loom::lower {

using IndexMap = std::unordered_map<const ir::IterDomain*, kir::Value*>;

/// Small builders for index expressions (Int64 arithmetic, Bool comparisons).
struct IndexBuilder {
  kir::Kernel& kernel;
  kir::Value* add(kir::Value* a, kir::Value* b);
  kir::Value* mul(kir::Value* a, kir::Value* b);
  kir::Value* div(kir::Value* a, kir::Value* b);
  kir::Value* mod(kir::Value* a, kir::Value* b);
  kir::Value* sub(kir::Value* a, kir::Value* b);
  kir::Value* lt(kir::Value* a, kir::Value* b);
  kir::Value* ge(kir::Value* a, kir::Value* b);
  kir::Value* eq(kir::Value* a, kir::Value* b);
  kir::Value* logicalAnd(kir::Value* a, kir::Value* b);  ///< a may be null (then b)
};

/// "threadIdx.x" for TIDx, "blockIdx.y" for BIDy: the index of a thread/block-parallel loop.
std::string parallelIndexName(ir::ParallelType p);

/// Indices of `tv`'s loop IDs that have an enclosing loop (matched by loop group), or are
/// thread/block-parallel (a parallel loop is not a loop: its index is the thread's or block's
/// anywhere in the kernel, so a reduction's result written after its reduction loops still
/// knows the parallel iteration loops nested inside them), then of every ID between the loop
/// domain and the root-or-logical domain that they determine.
IndexMap consumerIndices(kir::Kernel& kernel, LowerContext& ctx, const ir::TensorView* tv,
                         const std::vector<kir::ForLoop*>& loops);

/// The producer's logical-ID indices from the consumer's (broadcast IDs index 0). A local or
/// shared producer written in a promoted space (isPromoted) is read at the buffer positions it
/// was written at: its allocation IDs take the indices of the consumer loop IDs whose promoted
/// counterparts are exactly mapped to theirs.
IndexMap producerIndices(kir::Kernel& kernel, LowerContext& ctx, const ir::TensorView* producer,
                         const ir::TensorView* consumer, const IndexMap& consumer_idx);

/// How a tensor's IDs map onto the promoted IDs' tensors (promotion.cpp): `map` takes each ID
/// of the tensor whose loop is promoted (and the IDs its history derives them from) to its
/// counterpart; `refs` are the tensors of the promoted loop IDs; `kept` the tensor's own
/// Split/Merge exprs that have no counterpart. Empty when every loop ID is exactly promoted.
struct Promotion {
  std::unordered_map<const ir::IterDomain*, ir::IterDomain*> map;
  std::vector<const ir::TensorView*> refs;
  std::vector<ir::Expr*> kept;
};
/// `tv`'s root IDs (logical without a root), each resized one (slice, pad) replaced by its
/// resize output: the range its index must lie in (a pad's border is outside the root's).
std::vector<ir::IterDomain*> resizedRoot(const ir::TensorView* tv);
/// True when some loop ID of `tv` is not exactly mapped to its loop's promoted ID.
bool isPromoted(const LowerContext& ctx, const ir::TensorView* tv);
Promotion promotionOf(const LowerContext& ctx, const ir::TensorView* tv);
/// The indices of `tv`'s root/logical IDs (and loop IDs: `loop_idx`) when its loops run over
/// promoted IDs of other tensors: solved through the promoted tensors' histories.
IndexMap promotedIndices(kir::Kernel& kernel, LowerContext& ctx, const ir::TensorView* tv,
                         const IndexMap& loop_idx);

/// The element offset in `tv`'s buffer. Parameters: over the allocation order (when it is a
/// permutation of logical), index times runtime stride, where the contiguity flags (of fusion
/// inputs; every other parameter is allocated densely) drop the stride of a contiguous innermost
/// dim and fold adjacent dims d1, d2 with d1 contiguous and indices z / e, z % e into z times
/// d2's stride. Local buffers: dense over the allocation IDs (reached forward from the logical
/// indices).
kir::Value* bufferOffset(kir::Kernel& kernel, LowerContext& ctx, const ir::TensorView* tv,
                         IndexMap idx);

/// `index < extent` for each root-or-logical ID of `tv` whose index is computed from a split or
/// merge (an ID that is itself a loop ID is in range by construction); reduction IDs only when
/// `include_reductions`. A root ID resized into a logical one (slice, pad) is checked as that
/// logical ID: the root index of a pad's border is out of the root's range by design. Null when
/// no condition is needed.
kir::Value* inRangePredicate(kir::Kernel& kernel, LowerContext& ctx, const ir::TensorView* tv,
                             const IndexMap& idx, bool include_reductions);

/// `v` with the Vars of `repl` replaced by their values (shared subtrees are rebuilt once).
kir::Value* substitute(kir::Kernel& kernel, kir::Value* v,
                       const std::unordered_map<const kir::Var*, kir::Value*>& repl);

}  // namespace loom::lower
