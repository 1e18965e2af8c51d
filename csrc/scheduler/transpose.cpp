// SPDX-License-Identifier: Apache-2.0
// The transpose scheduler: checks (which dims are transposed), heuristics (tile, vector width,
// block) and the schedule, a shared-memory tile read and written in two loop orders.
#include "loom/scheduler/transpose.h"

#include <algorithm>
#include <optional>

#include "loom/ir/exprs.h"
#include "loom/ir/iter_domain.h"
#include "loom/scheduler/utils.h"
#include "loom/support/error.h"
#include "loom/transform/cache.h"
#include "loom/transform/id_graph.h"
#include "loom/transform/inlining.h"
#include "loom/transform/propagation.h"
#include "loom/transform/recompute.h"
#include "loom/transform/schedule.h"

namespace loom::scheduler {

using ir::IterDomain;
using ir::ParallelType;
using ir::TensorView;

namespace {

// Which tensors are on which side of the transpose. The reference (the largest output) is
// computed in its own loop order, `inner` (its innermost allocation dim) innermost; `outer` is
// the reference dim that another input or output holds innermost.
struct Layout {
  TensorView* ref = nullptr;
  IterDomain* inner = nullptr;
  IterDomain* outer = nullptr;
  /// Inputs and outputs with `outer` innermost that hold `inner` too: staged through a shared
  /// tile written and read in their own order.
  std::vector<TensorView*> tileSide;
  /// Inputs and outputs with `inner` innermost: vector accesses in the reference's loops.
  std::vector<TensorView*> refSide;
};

// The innermost allocation ID that is neither a broadcast nor a reduction, or null.
IterDomain* innermostId(const TensorView* tv) {
  const auto& alloc = tv->maybeAllocation();
  for (auto it = alloc.rbegin(); it != alloc.rend(); ++it) {
    if (!(*it)->isBroadcast() && !(*it)->isReduction()) return *it;
  }
  return nullptr;
}

// The reference logical dim (non-broadcast) mapped to `id`, or null.
IterDomain* refDimOf(const transform::IdGraph& exact, const TensorView* ref, const IterDomain* id) {
  for (IterDomain* d : ir::TensorDomain::noReductions(ref->logical())) {
    if (!d->isBroadcast() && exact.areMapped(d, id)) return d;
  }
  return nullptr;
}

bool holds(const transform::IdGraph& exact, const TensorView* tv, const IterDomain* ref_dim) {
  for (IterDomain* id : tv->logical()) {
    if (!id->isBroadcast() && !id->isReduction() && exact.areMapped(id, ref_dim)) return true;
  }
  return false;
}

// Fusion inputs (with uses) and computed outputs, inputs first: the tensors of global memory.
std::vector<TensorView*> globalTensors(const ir::Fusion& fusion) {
  std::vector<TensorView*> result;
  for (ir::Val* v : fusion.inputs()) {
    auto* tv = v->dynCast<TensorView>();
    if (tv != nullptr && !tv->uses().empty()) result.push_back(tv);
  }
  for (ir::Val* v : fusion.outputs()) {
    auto* tv = v->dynCast<TensorView>();
    if (tv != nullptr && !tv->isFusionInput() &&
        std::find(result.begin(), result.end(), tv) == result.end()) {
      result.push_back(tv);
    }
  }
  return result;
}

// The ops a tile may hold: each computes an element from the elements at its own position
// (through broadcasts and permutes). Ops reading other positions (slice, pad, cat, reshape,
// gather, ...) and squeezes (a squeezed dim of symbolic extent is read from global memory) are
// left to the pointwise scheduler.
bool tileableOps(const ir::Fusion& fusion, std::string* why) {
  for (ir::Expr* e : fusion.exprs()) {
    if (e->isA<ir::UnaryOp>() || e->isA<ir::BinaryOp>() || e->isA<ir::TernaryOp>() ||
        e->isA<ir::BroadcastOp>() || e->isA<ir::ExpandOp>() || e->isA<ir::LoadStoreOp>() ||
        e->isA<ir::FullOp>() || e->isA<ir::IotaOp>() || e->isA<ir::RngOp>()) {
      continue;
    }
    if (why != nullptr) {
      *why = "the tile holds pointwise, broadcast, expand and permute ops only; " +
             e->output(0)->toString() + " is computed by " + e->opName();
    }
    return false;
  }
  return true;
}

// The layout of a fusion that passed the other compile-time checks; nullopt (with *why) when no
// input or output disagrees with the reference on the innermost dim.
std::optional<Layout> analyze(const ir::Fusion& fusion, std::string* why) {
  Layout l;
  l.ref = utils::largestOutput(fusion);
  if (l.ref == nullptr || (l.inner = innermostId(l.ref)) == nullptr) {
    if (why != nullptr) *why = "the largest output has no dim that is not a broadcast";
    return std::nullopt;
  }
  const transform::IdGraph exact(fusion, transform::IdMappingMode::Exact);
  std::vector<TensorView*> tensors = globalTensors(fusion);
  for (TensorView* tv : tensors) {
    IterDomain* id = innermostId(tv);
    IterDomain* d = id == nullptr ? nullptr : refDimOf(exact, l.ref, id);
    if (d != nullptr && d != l.inner && holds(exact, tv, l.inner)) {
      l.outer = d;
      break;
    }
  }
  if (l.outer == nullptr) {
    if (why != nullptr) {
      *why = "no input or output has another innermost dim than the largest output " +
             l.ref->toString() + " (" + l.inner->toString() + "): nothing is transposed";
    }
    return std::nullopt;
  }
  for (TensorView* tv : tensors) {
    IterDomain* id = innermostId(tv);
    if (id == nullptr) continue;
    if (exact.areMapped(id, l.outer) && holds(exact, tv, l.inner)) {
      l.tileSide.push_back(tv);
    } else if (exact.areMapped(id, l.inner)) {
      l.refSide.push_back(tv);
    }
  }
  return l;
}

int64_t dtypeBytes(const std::vector<TensorView*>& tvs) {
  int64_t bytes = 1;
  for (const TensorView* tv : tvs) bytes = std::max(bytes, int64_t(dataTypeSize(tv->dtype())));
  return bytes;
}

// Shared-memory bytes of the tiles (one per tile-side tensor, rows padded by one bank).
int64_t tileBytes(const Layout& l, int64_t tile) {
  int64_t bytes = 0;
  for (const TensorView* tv : l.tileSide) {
    auto item = int64_t(dataTypeSize(tv->dtype()));
    bytes += tile * (tile * item + std::max<int64_t>(4, item));
  }
  return bytes;
}

class TransposeScheduler final : public Scheduler {
 public:
  SchedulerType type() const override { return SchedulerType::Transpose; }

  bool canScheduleCompileTime(const ir::Fusion& fusion, std::string* why) const override {
    return utils::isPlainPointwiseFusion(fusion, why) && tileableOps(fusion, why) &&
           analyze(fusion, why).has_value();
  }

  bool canScheduleRunTime(const ir::Fusion& fusion, SchedulerRuntimeInfo& info,
                          std::string* why) const override {
    std::optional<Layout> l = analyze(fusion, nullptr);
    LOOM_ASSERT(l.has_value(), "the transpose run-time check of a fusion it rejected");
    int64_t inner = info.extent(l->inner, l->ref);
    int64_t outer = info.extent(l->outer, l->ref);
    if (std::min(inner, outer) < kMinTransposeExtent) {
      if (why != nullptr) {
        *why = "the transposed dims have " + std::to_string(outer) + " and " +
               std::to_string(inner) + " elements; a tile needs at least " +
               std::to_string(kMinTransposeExtent) + " of each";
      }
      return false;
    }
    int64_t smem = tileBytes(*l, 32);
    if (smem > info.device().shared_memory_per_block) {
      if (why != nullptr) {
        *why = std::to_string(l->tileSide.size()) + " tiles of 32 x 32 need " +
               std::to_string(smem) + " bytes of shared memory, more than the " +
               std::to_string(info.device().shared_memory_per_block) + " a block has";
      }
      return false;
    }
    return true;
  }

  std::unique_ptr<HeuristicParams> computeHeuristics(const ir::Fusion& fusion,
                                                     SchedulerRuntimeInfo& info) const override {
    return transposeHeuristics(fusion, info);
  }

  void schedule(ir::Fusion& fusion, const HeuristicParams& params) const override {
    const auto* p = dynamic_cast<const TransposeParams*>(&params);
    LOOM_CHECK(p != nullptr, "the transpose scheduler got ", params.toString());
    scheduleTranspose(fusion, *p);
  }
};

// Tile loops [G, a, b] -> [G (BIDx), a/by, by (TIDy), b/v (TIDx), v], b the side's innermost.
void splitTile(TensorView* tv, const TransposeParams& p) {
  tv->split(2, p.vectorize);
  tv->split(1, p.bdimy);
  transform::parallelize(tv, 0, ParallelType::BIDx);
  transform::parallelize(tv, 2, ParallelType::TIDy);
  transform::parallelize(tv, 3, ParallelType::TIDx);
}

}  // namespace

std::unique_ptr<Scheduler> makeTransposeScheduler() {
  return std::make_unique<TransposeScheduler>();
}

std::unique_ptr<TransposeParams> transposeHeuristics(const ir::Fusion& fusion,
                                                     SchedulerRuntimeInfo& info) {
  std::optional<Layout> l = analyze(fusion, nullptr);
  LOOM_CHECK(l.has_value(), "transpose heuristics of a fusion without a transpose");
  auto params = std::make_unique<TransposeParams>();
  params->inner_extent = info.extent(l->inner, l->ref);
  params->outer_extent = info.extent(l->outer, l->ref);
  // A tile row of at most 128 bytes (32 banks; padded to 33): a warp's scalar accesses along a
  // row (the elements of its vector loads) and down a column then meet 32 different banks; a
  // 64-wide f32 row (64 banks) would put lanes 8 apart on one bank. So 64 x 64 tiles for 16-bit
  // (and 8-bit) types, where both dims fill them and the tiles fit in 48 KiB (the shared memory
  // a block gets without opting in), else 32 x 32.
  const int64_t smem = std::min<int64_t>(48 * 1024, info.device().shared_memory_per_block);
  const bool wide = 64 * dtypeBytes(l->tileSide) <= 128 &&
                    std::min(params->inner_extent, params->outer_extent) >= 64 &&
                    tileBytes(*l, 64) <= smem;
  params->tile = wide ? 64 : 32;
  // One width for both sides (the block's x extent is tile / width on both): each side's rule
  // over the tensors it accesses along its own innermost dim.
  int64_t v_tile = utils::maxVectorWidth(fusion, info, l->ref, {l->outer}, l->tileSide);
  int64_t v_ref = utils::maxVectorWidth(fusion, info, l->ref, {l->inner}, l->refSide);
  if (l->tileSide.empty()) v_tile = 16 / dtypeBytes(l->refSide);
  if (l->refSide.empty()) v_ref = 16 / dtypeBytes(l->tileSide);
  params->vectorize = std::min({v_tile, v_ref, params->tile});
  // 256 threads per block (fewer only for a tile that has fewer vectors).
  params->bdimy = std::min(params->tile, std::max<int64_t>(1, 256 / params->bdimx()));
  return params;
}

void scheduleTranspose(ir::Fusion& fusion, const TransposeParams& p) {
  ir::FusionGuard guard(&fusion);
  std::string why;
  std::optional<Layout> l = analyze(fusion, &why);
  LOOM_CHECK(l.has_value(), "the transpose scheduler cannot schedule this fusion: ", why);
  auto pow2 = [](int64_t x) { return x > 0 && (x & (x - 1)) == 0; };
  LOOM_CHECK(pow2(p.tile) && pow2(p.vectorize) && pow2(p.bdimy) && p.vectorize <= p.tile &&
                 p.bdimy <= p.tile && p.bdimx() * p.bdimy <= 1024,
             "transpose params ", p.toString(),
             " need powers of two with vectorize and bdimy at most the tile and at most 1024 "
             "threads (tile / vectorize * bdimy)");
  TensorView* ref = l->ref;
  // Logical positions: caching an output gives it new IDs.
  auto logicalPos = [&](const IterDomain* id) {
    const auto& logical = ref->logical();
    return int64_t(std::find(logical.begin(), logical.end(), id) - logical.begin());
  };
  const int64_t inner_pos = logicalPos(l->inner);
  const int64_t outer_pos = logicalPos(l->outer);

  // Shared tiles: a tile-side input is loaded by rows of its own into a shared cache; a
  // tile-side output is computed into a shared tile and stored by rows of its own.
  std::vector<TensorView*> tiled;
  for (TensorView* tv : l->tileSide) {
    if (tv->isFusionInput()) {
      tiled.push_back(transform::cacheAfter(tv, ir::MemoryType::Shared));
      continue;
    }
    TensorView* store = tv;
    if (!tv->uses().empty()) {  // readers keep the register value; the fork is the store
      store = transform::cacheFork(tv);
      tv->setMemoryType(ir::MemoryType::Local);
    }
    // compute -> shared tile (reference order) -> registers (own order) -> vector store.
    transform::cacheBefore(store, ir::MemoryType::Shared);
    tiled.push_back(transform::cacheBefore(store));
    tiled.push_back(store);
  }
  // Vector accesses on the reference side, as in the pointwise scheduler.
  std::vector<TensorView*> vectorized;
  for (TensorView* tv : l->refSide) {
    if (tv->isFusionInput()) {
      vectorized.push_back(transform::cacheAfter(tv));
    } else if (!tv->uses().empty()) {
      TensorView* fork = transform::cacheFork(tv);
      tv->setMemoryType(ir::MemoryType::Local);
      vectorized.push_back(fork);
    } else {
      transform::cacheBefore(tv);
      vectorized.push_back(tv);
    }
  }
  utils::forkOutputsReadInFusion(fusion);

  // [others..., outer, inner] -> [others..., outer/T, inner/T, T, T] -> [G, T (outer), T (inner)]
  const int64_t rank = ref->nDims();
  LOOM_ASSERT(inner_pos < rank && outer_pos < rank && rank == int64_t(ref->logical().size()),
              "transpose dims not in the loop of ", ref->toString());
  std::vector<int64_t> perm;
  for (int64_t k = 0; k < rank; ++k) {
    if (k != inner_pos && k != outer_pos) perm.push_back(k);
  }
  perm.push_back(outer_pos);
  perm.push_back(inner_pos);
  ref->reorder(perm);
  ref->split(-1, p.tile);
  ref->split(-3, p.tile);
  ref->reorder(std::unordered_map<int64_t, int64_t>{{-2, -3}, {-3, -2}});
  if (ref->nDims() > 3) ref->flatten(0, ref->nDims() - 3);
  transform::propagateTransforms(ref);

  // The tile side in its own order, the rest in the reference's.
  for (TensorView* tv : tiled) {
    LOOM_ASSERT(tv->nDims() == 3, "tile-side tensor ", tv->toString(), " is not [G, T, T]");
    tv->reorder(std::unordered_map<int64_t, int64_t>{{1, 2}, {2, 1}});
    splitTile(tv, p);
  }
  splitTile(ref, p);
  std::vector<TensorView*> rest;
  for (TensorView* tv : fusion.allTvs()) {
    if (std::find(tiled.begin(), tiled.end(), tv) == tiled.end()) rest.push_back(tv);
  }
  transform::propagateTransforms(ref, {}, rest);
  transform::parallelizeAllLike(ref, rest);
  if (p.vectorize > 1) {
    const IterDomain* lane = ref->axis(-1);
    const transform::IdGraph exact(fusion, transform::IdMappingMode::Exact);
    for (TensorView* tv : vectorized) {
      if (tv->nDims() > 0 && exact.areMapped(tv->axis(-1), lane)) {
        transform::parallelize(tv, tv->nDims() - 1, ParallelType::Vectorize);
      }
    }
    for (TensorView* tv : tiled) transform::parallelize(tv, 4, ParallelType::Vectorize);
  }
  transform::inlineMost(fusion);
  transform::recomputeAcrossThreads(fusion);
}

}  // namespace loom::scheduler
