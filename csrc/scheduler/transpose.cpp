// SPDX-License-Identifier: Apache-2.0
// The transpose scheduler: checks (which dims are transposed), heuristics (tile, vector width,
// block) and the schedule, a shared-memory tile read and written in two loop orders.
#include "loom/scheduler/transpose.h"

#include <algorithm>
#include <optional>
#include <tuple>
#include <utility>

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
  /// The dims each side may tile together, innermost first (reference logical dims): the
  /// reference's allocation dims from `inner` outward, and the first tile-side tensor's from
  /// `outer` outward, each run stopping before a dim of the other side (or one the tile-side
  /// tensor lacks). The heuristics take a prefix of each (dimsToTile), so that a narrow
  /// innermost dim, NCHW's W of 7, is tiled merged with the dims outside it.
  std::vector<IterDomain*> innerRun;
  std::vector<IterDomain*> outerRun;
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
  TensorView* first_tile = nullptr;
  for (TensorView* tv : tensors) {
    IterDomain* id = innermostId(tv);
    IterDomain* d = id == nullptr ? nullptr : refDimOf(exact, l.ref, id);
    if (d != nullptr && d != l.inner && holds(exact, tv, l.inner)) {
      l.outer = d;
      first_tile = tv;
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
  // The runs: the tile side's first (it stops at `inner`), then the reference's (it stops at a
  // dim of the tile side's run, or one the tile-side tensor lacks).
  const auto& tile_alloc = first_tile->maybeAllocation();
  for (auto it = tile_alloc.rbegin(); it != tile_alloc.rend(); ++it) {
    if ((*it)->isBroadcast() || (*it)->isReduction()) continue;
    IterDomain* d = refDimOf(exact, l.ref, *it);
    if (d == nullptr || d == l.inner) break;
    l.outerRun.push_back(d);
  }
  const auto& ref_alloc = l.ref->maybeAllocation();
  for (auto it = ref_alloc.rbegin(); it != ref_alloc.rend(); ++it) {
    if ((*it)->isBroadcast() || (*it)->isReduction()) continue;
    if (std::find(l.outerRun.begin(), l.outerRun.end(), *it) != l.outerRun.end() ||
        !holds(exact, first_tile, *it)) {
      break;
    }
    l.innerRun.push_back(*it);
  }
  LOOM_ASSERT(!l.outerRun.empty() && l.outerRun[0] == l.outer && !l.innerRun.empty() &&
                  l.innerRun[0] == l.inner,
              "transpose runs of ", l.ref->toString(), " do not start at the transposed dims");
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

// How many dims of `run` (innermost first) a side tiles merged: it grows outward while the
// merged extent is below a wide tile, so a side narrower than a tile borrows the dims outside it
// (NCHW -> NHWC with W = 7 tiles H * W = 49), and stops at the first dim that fills one. Returns
// {dims, their merged extent}.
std::pair<int64_t, int64_t> dimsToTile(const std::vector<IterDomain*>& run,
                                       SchedulerRuntimeInfo& info, const TensorView* ref) {
  int64_t dims = 1;
  int64_t extent = info.extent(run[0], ref);
  while (dims < int64_t(run.size()) && extent < kWideTransposeTile) {
    extent *= info.extent(run[size_t(dims)], ref);
    ++dims;
  }
  return {dims, extent};
}

// The first `dims` of `run`, outermost first (the order maxVectorWidth and the merges take).
std::vector<IterDomain*> outermostFirst(const std::vector<IterDomain*>& run, int64_t dims) {
  return std::vector<IterDomain*>(run.rend() - dims, run.rend());
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
    int64_t inner = dimsToTile(l->innerRun, info, l->ref).second;
    int64_t outer = dimsToTile(l->outerRun, info, l->ref).second;
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
  std::tie(params->inner_dims, params->inner_extent) = dimsToTile(l->innerRun, info, l->ref);
  std::tie(params->outer_dims, params->outer_extent) = dimsToTile(l->outerRun, info, l->ref);
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
  int64_t v_tile = utils::maxVectorWidth(
      fusion, info, l->ref, outermostFirst(l->outerRun, params->outer_dims), l->tileSide);
  int64_t v_ref = utils::maxVectorWidth(
      fusion, info, l->ref, outermostFirst(l->innerRun, params->inner_dims), l->refSide);
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
  LOOM_CHECK(p.inner_dims >= 1 && p.inner_dims <= int64_t(l->innerRun.size()) &&
                 p.outer_dims >= 1 && p.outer_dims <= int64_t(l->outerRun.size()),
             "transpose params ", p.toString(), " tile more dims than the fusion has on a side (",
             l->innerRun.size(), " on the reference's, ", l->outerRun.size(), " on the tile's)");
  // Each side's tiled dims, outermost first, as logical positions of the reference.
  auto positions = [&](const std::vector<IterDomain*>& run, int64_t dims) {
    std::vector<int64_t> out;
    for (IterDomain* id : outermostFirst(run, dims)) {
      out.push_back(logicalPos(id));
      LOOM_ASSERT(out.back() < int64_t(ref->logical().size()), "transpose dim ", id->toString(),
                  " is not a logical dim of ", ref->toString());
    }
    return out;
  };
  const std::vector<int64_t> inner_pos = positions(l->innerRun, p.inner_dims);
  const std::vector<int64_t> outer_pos = positions(l->outerRun, p.outer_dims);

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

  // [others..., outer dims, inner dims] -> [others..., outer, inner] (each side's dims merged)
  // -> [others..., outer/T, inner/T, T, T] -> [G, T (outer), T (inner)]
  const int64_t rank = ref->nDims();
  LOOM_ASSERT(rank == int64_t(ref->logical().size()), "transpose dims not in the loop of ",
              ref->toString());
  auto tiled_dim = [&](int64_t k) {
    return std::find(inner_pos.begin(), inner_pos.end(), k) != inner_pos.end() ||
           std::find(outer_pos.begin(), outer_pos.end(), k) != outer_pos.end();
  };
  std::vector<int64_t> perm;
  for (int64_t k = 0; k < rank; ++k) {
    if (!tiled_dim(k)) perm.push_back(k);
  }
  perm.insert(perm.end(), outer_pos.begin(), outer_pos.end());
  perm.insert(perm.end(), inner_pos.begin(), inner_pos.end());
  LOOM_ASSERT(int64_t(perm.size()) == rank, "transpose dims of ", ref->toString(),
              " on both sides");
  ref->reorder(perm);
  if (p.inner_dims > 1) ref->flatten(rank - p.inner_dims, rank - 1);
  if (p.outer_dims > 1) ref->flatten(ref->nDims() - 1 - p.outer_dims, ref->nDims() - 2);
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
