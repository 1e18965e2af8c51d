// SPDX-License-Identifier: Apache-2.0
// scheduleInnerPersistent: the transform sequence of the inner-persistent scheduler.
//
//   first, persistent buffers recomputable from input rows and row statistics are projected (one
//   copy of their pointwise chain per use: planPersistentBuffers; broadcast(cast(w)) ->
//   cast(broadcast(w))), so only the (narrow) input caches persist;
//   reference (first reduction), loop reordered to [DID..., iter..., red...]:
//     merge iters -> I, merge reds -> R
//     R -> split(vectorize) -> outer split(persistent_batch): [pb, TIDx, vec]
//     I -> split(rows_per_block):                             [BIDx, TIDy]
//   propagateTransforms(ref); parallelizeAllLike(ref)
//   rFactor every reduction over its serial pieces (pb, vec): each thread reduces its own
//   elements, the final reduction is a block reduction over TIDx
//   outputs read inside the fusion are forked (cacheFork: readers use registers), other
//   whole-row outputs get a register cache (cacheBefore) so their stores are vectorized; the
//   batch loop is unrolled (constant register-array indices);
//   vectorize the input caches and outputs, persistent buffers to shared memory when asked,
//   inlineMost, except row statistics, which stay at the row position (once per row).
//
// DID IDs are only moved to the front, never split or merged, so sharding survives.
#include <algorithm>
#include <unordered_set>

#include "loom/ir/builder.h"
#include "loom/ir/exprs.h"
#include "loom/ir/iter_domain.h"
#include "loom/scheduler/normalization.h"
#include "loom/scheduler/utils.h"
#include "loom/transform/cache.h"
#include "loom/transform/inlining.h"
#include "loom/transform/propagation.h"
#include "loom/transform/recompute.h"
#include "loom/transform/replay.h"
#include "loom/transform/rfactor.h"
#include "loom/transform/schedule.h"

namespace loom::scheduler {

using namespace loom::ir;

namespace {

// Loop permutation putting DID IDs first, then iteration (and broadcast) IDs, then reductions;
// returns the counts of each group.
struct Groups {
  int64_t did = 0, iter = 0, red = 0;
};

Groups reorderDidIterRed(TensorView* tv) {
  std::vector<int64_t> did, iter, red;
  for (int64_t i = 0; i < tv->nDims(); ++i) {
    IterDomain* id = tv->axis(i);
    (id->isDeviceDim() ? did : id->isReduction() ? red : iter).push_back(i);
  }
  std::vector<int64_t> perm = did;
  perm.insert(perm.end(), iter.begin(), iter.end());
  perm.insert(perm.end(), red.begin(), red.end());
  tv->reorder(perm);
  return {int64_t(did.size()), int64_t(iter.size()), int64_t(red.size())};
}

// Loop positions of a scheduled reduction tensor's serial reduction pieces (everything reduced
// except the TIDx piece).
std::vector<int64_t> serialReductionAxes(TensorView* tv) {
  std::vector<int64_t> axes;
  int64_t tidx = 0;
  for (int64_t i = 0; i < tv->nDims(); ++i) {
    IterDomain* id = tv->axis(i);
    if (!id->isReduction()) continue;
    if (id->parallelType() == ParallelType::TIDx) {
      ++tidx;
    } else {
      axes.push_back(i);
    }
  }
  LOOM_ASSERT(tidx == 1, "inner persistent: reduction ", tv->toString(),
              " should have one TIDx reduction ID after propagation, has ", tidx);
  return axes;
}

// The reduced positions of a reduction tensor's logical domain.
std::vector<size_t> reducedLogicalPositions(const TensorView* tv) {
  std::vector<size_t> pos;
  for (size_t i = 0; i < tv->logical().size(); ++i) {
    if (tv->logical()[i]->isReduction()) pos.push_back(i);
  }
  return pos;
}

// A new unscheduled tensor shaped like `like`'s logical domain (reductions dropped), with `like`'s
// sharding (selfReplay), of type `dtype`.
TensorView* freshLike(const TensorView* like, DataType dtype) {
  std::vector<IterDomain*> ids;
  for (IterDomain* id : TensorDomain::noReductions(like->logical())) {
    ids.push_back(id->cloneWithoutDefinition());
  }
  auto* tv = IrBuilder::create<TensorView>(IrBuilder::create<TensorDomain>(ids), dtype);
  transform::TransformReplay::selfReplay(like, tv);
  return tv;
}

// Projects the persistent buffers the plan recomputes (BufferPlan): every use but the first gets
// its own copy of the buffer's chain from its leaves, so each copy inlines fully into its
// consumer and only the leaves' rows (their input caches: bf16 stays bf16) live across the
// reductions.
}  // namespace

void projectPersistentBuffers(const BufferPlan& plan) {
  for (const BufferPlan::Projection& p : plan.projected) {
    std::vector<Expr*> uses = p.buffer->uses();
    for (size_t i = 1; i < uses.size(); ++i) {
      transform::recomputeChain(p.buffer, uses[i], p.leaves);
    }
  }
}

// `b = broadcast(cast(w))` of a fusion input w (layer_norm's weight and bias) becomes
// `b = cast(broadcast(w))`: the cast is then elementwise on the row and inlines into its consumer,
// so the row-invariant register copy held across rows is w's cache in w's (narrower) type instead
// of the widened cast.
void castInputsAfterBroadcast(Fusion& fusion) {
  for (Val* v : std::vector<Val*>(fusion.inputs())) {
    auto* w = v->dynCast<TensorView>();
    if (w == nullptr) continue;
    for (Expr* use : std::vector<Expr*>(w->uses())) {
      auto* c = use->output(0)->dynCast<TensorView>();
      if (c == nullptr || projectableCastInput(c) != w || c->uses().size() != 1) continue;
      auto* bcast = c->uses().front()->dynCast<BroadcastOp>();
      if (bcast == nullptr) continue;
      auto* b = bcast->output(0)->as<TensorView>();
      TensorView* narrow = freshLike(b, w->dtype());
      IrBuilder::create<BroadcastOp>(narrow, w, bcast->isBroadcastDim());
      IrBuilder::create<UnaryOp>(UnaryOpType::Cast, b, narrow);  // replaces b's definition
      fusion.removeVal(c);
    }
  }
}

namespace {

// What the steps of scheduleInnerPersistent share: the reference (first reduction) and the sets
// of tensors each step decides about.
struct Schedule {
  Schedule(Fusion& f, const InnerPersistentParams& params) : fusion(f), p(params) {}
  Fusion& fusion;
  const InnerPersistentParams& p;
  TensorView* ref = nullptr;
  std::vector<size_t> reduced;  // reduced positions of ref's logical domain
  size_t row_rank = 0;
  std::unordered_set<TensorView*> buffers;   // the held rows (their caches once cached)
  std::unordered_set<TensorView*> reloaded;  // input rows each pass reads again (reload_rows)
  std::unordered_set<TensorView*> vector_outputs, vector_inputs;
  std::unordered_set<TensorView*> spans_row;  // inputs with an ID of each reduced dim
  std::vector<TensorView*> caches, vector_caches, vectorized;
  int64_t row_pos = 0;  // loop IDs left of it select the row(s) of a block
};

// Before anything is cached: the held rows (input caches once cached) are the persistent
// buffers; the projected ones are recomputed at each use. Rows too wide to hold (reload_rows):
// every held row is an input, read again by each pass (its own cache per use, inlined into that
// pass's loops); nothing persists.
void prepareBuffers(Schedule& s) {
  const BufferPlan plan = planPersistentBuffers(s.fusion);
  s.buffers.insert(plan.held.begin(), plan.held.end());
  projectPersistentBuffers(plan);
  if (s.p.reload_rows) {
    for (TensorView* tv : s.buffers) {
      LOOM_CHECK(tv->isFusionInput(), "inner persistent: reload_rows needs every held row to be "
                 "a fusion input, but ", tv->toString(), " is not (", s.p.toString(), ")");
      s.reloaded.insert(tv);
    }
    s.buffers.clear();
  }
  castInputsAfterBroadcast(s.fusion);
  s.ref = utils::reductionTvs(s.fusion).front();
  s.reduced = reducedLogicalPositions(s.ref);
  s.row_rank = s.ref->logical().size();
}

// On the unscheduled graph (rFactor gives `ref` new reduction IDs): the outputs written with
// vector stores and the inputs read with vector loads (whole-row tensors holding the innermost
// reduced ID, the heuristic's width), and the inputs holding an ID of each reduced dim (only
// such a row-invariant input is held across rows, see inlineEverything).
void analyzeRows(Schedule& s) {
  if (s.p.vectorize > 1) {
    std::vector<IterDomain*> row_ids;
    for (IterDomain* id : s.ref->logical()) {
      if (id->isReduction()) row_ids.push_back(id);
    }
    for (TensorView* tv : utils::innerAlignedTensors(s.fusion, s.ref, row_ids)) {
      if (tv->isFusionOutput() && !tv->isFusionInput() && tv->definition() != nullptr) {
        s.vector_outputs.insert(tv);
      }
      // Inputs whose pointer, strides and extents the heuristic's width was checked against;
      // any other input (a row only mapped through a broadcast) is read element by element.
      if (tv->isFusionInput()) s.vector_inputs.insert(tv);
    }
  }
  const transform::IdGraph exact(s.fusion, transform::IdMappingMode::Exact);
  for (Val* v : s.fusion.inputs()) {
    auto* in = v->dynCast<TensorView>();
    if (in == nullptr) continue;
    bool spans = true;
    for (size_t r : s.reduced) {
      bool found = false;
      for (IterDomain* id : in->logical()) {
        found = found || (!id->isBroadcast() && exact.areMapped(id, s.ref->logical()[r]));
      }
      spans = spans && found;
    }
    if (spans) s.spans_row.insert(in);
  }
}

// Inputs are loaded into caches (the persistent copies of input rows, or one per pass when the
// rows reload). Outputs that are also read inside the fusion (layer_norm's mean and rstd): the
// readers use a register copy and a separate copy writes global memory, so nothing reads global
// memory back (which would need a block sync) and the write does not sit in the readers' loops.
void cacheInputsAndOutputs(Schedule& s) {
  for (Val* in : std::vector<Val*>(s.fusion.inputs())) {
    auto* tv = in->dynCast<TensorView>();
    if (tv == nullptr || tv->uses().empty() || utils::readFromGlobal(tv)) continue;
    std::vector<TensorView*> tv_caches = s.reloaded.count(tv) != 0
                                             ? transform::cacheAfterEachUse(tv)
                                             : std::vector<TensorView*>{transform::cacheAfter(tv)};
    for (TensorView* cache : tv_caches) {
      if (s.vector_inputs.count(tv) != 0) s.vector_caches.push_back(cache);
      s.caches.push_back(cache);
      if (s.buffers.count(tv)) s.buffers.insert(cache);
    }
  }
  for (Val* out : std::vector<Val*>(s.fusion.outputs())) {
    auto* tv = out->as<TensorView>();
    if (tv->isFusionInput() || tv->definition() == nullptr) continue;
    if (!tv->uses().empty()) {
      TensorView* fork = transform::cacheFork(tv);
      tv->setMemoryType(MemoryType::Local);
      // The fork copies a register value: it is the vector store itself.
      if (s.vector_outputs.count(tv)) s.vectorized.push_back(fork);
    } else if (s.vector_outputs.count(tv)) {
      // Vector stores come from a register cache holding the computed values.
      transform::cacheBefore(tv);
      s.vectorized.push_back(tv);
    }
  }
}

// The reference's loop [DID..., BIDx, TIDy, pb (Unroll), TIDx, v], propagated to every tensor,
// and each reduction rFactored over its serial pieces (pb, v).
void transformReference(Schedule& s) {
  TensorView* ref = s.ref;
  const InnerPersistentParams& p = s.p;
  Groups g = reorderDidIterRed(ref);
  if (g.iter > 1) ref->flatten(g.did, g.did + g.iter - 1);
  if (g.iter > 1) g.iter = 1;
  if (g.red > 1) ref->flatten(g.did + g.iter, -1);
  int64_t pos = g.did + g.iter;  // the merged reduction
  ref->split(pos, p.vectorize);                              // [R/v, v]
  ref->split(pos, p.persistent_batch, /*inner_split=*/false);  // [pb, R/v/pb, v]
  if (g.iter == 1) {
    int64_t i = g.did;
    if (p.rows_per_block > 1) {
      ref->split(i, p.rows_per_block);
      transform::parallelize(ref, i + 1, ParallelType::TIDy);
      ++pos;
    }
    transform::parallelize(ref, i, ParallelType::BIDx);
  }
  s.row_pos = pos;
  transform::parallelize(ref, pos + 1, ParallelType::TIDx);
  // Unrolled batch loop: the register arrays of the persistent buffers are then indexed by
  // constants (a runtime index would put them in local memory), and the batch's loads are
  // independent and all in flight at once. (One Unroll ID per tensor: the short constant vector
  // loop is left to the CUDA compiler's unrolling.)
  // Reloaded rows keep it serial: nothing is held, and a long row would unroll into a huge body.
  if (p.persistent_batch > 1 && !p.reload_rows) {
    transform::parallelize(ref, pos, ParallelType::Unroll);
  }
  transform::propagateTransforms(ref);
  transform::parallelizeAllLike(ref);
  for (TensorView* red : utils::reductionTvs(s.fusion)) {
    std::vector<int64_t> axes = serialReductionAxes(red);
    if (auto* w = red->definition()->dynCast<WelfordOp>()) {
      transform::rFactor(red, axes, {w->outAvg(), w->outM2(), w->outN()});
    } else {
      transform::rFactor(red, axes);
    }
  }
}

// A row statistic: a reduction result broadcast back along the row, or math on one (layer_norm's
// mean and rstd and their output copies).
bool isRowStatistic(const TensorView* tv, const std::vector<size_t>& reduced, size_t row_rank,
                    int64_t row_pos) {
  bool is_stat =
      tv->logical().size() == row_rank && !tv->domain()->hasReduction() && tv->nDims() > row_pos;
  for (size_t r : reduced) is_stat = is_stat && tv->logical()[r]->isBroadcast();
  if (!is_stat) return false;
  // The broadcasts at the reduced positions must not be what the row loops are made of (a
  // broadcast inserted in front, [1, rows], puts the row dim at a reduced position).
  std::unordered_set<const IterDomain*> row_sources;
  std::vector<IterDomain*> work(tv->loop().begin(), tv->loop().begin() + row_pos);
  while (!work.empty()) {
    IterDomain* id = work.back();
    work.pop_back();
    if (!row_sources.insert(id).second || id->definition() == nullptr) continue;
    for (Val* in : id->definition()->inputs()) work.push_back(in->as<IterDomain>());
  }
  for (size_t r : reduced) is_stat = is_stat && row_sources.count(tv->logical()[r]) == 0;
  return is_stat;
}

}  // namespace

// Row statistics are computed once per row by every thread of the row: their loop keeps the row
// IDs and, instead of the propagated pieces of their broadcast dims (which carry TIDx, so only
// one thread would compute them), the broadcast IDs themselves. Stats are inlined only up to the
// row position, not into the element loops of their consumers.
RowStatisticsPlacement placeRowStatistics(Fusion& fusion, const std::vector<size_t>& reduced,
                                          size_t row_rank, int64_t row_pos) {
  RowStatisticsPlacement out;
  for (TensorView* tv : fusion.allTvs()) {
    if (tv->isFusionInput()) continue;
    const bool is_stat = isRowStatistic(tv, reduced, row_rank, row_pos);
    if (is_stat) {
      std::vector<IterDomain*> loop(tv->loop().begin(), tv->loop().begin() + row_pos);
      for (size_t r : reduced) loop.push_back(tv->logical()[r]);
      tv->domain()->setLoopDomain(loop);
    }
    (is_stat && !tv->uses().empty() ? out.stats : out.elementwise).push_back(tv);
  }
  return out;
}

namespace {

// Vector loads and stores on the innermost pieces; persistent buffers in shared memory when the
// plan says so.
void vectorizeAndPlace(Schedule& s) {
  if (s.p.vectorize > 1) {
    for (const std::vector<TensorView*>* group : {&s.vector_caches, &s.vectorized}) {
      for (TensorView* tv : *group) {
        if (tv->nDims() == 0) continue;  // a 0-dim input: one element, no vector
        IterDomain* inner = tv->axis(-1);
        if (inner->extent()->isConstInt(s.p.vectorize) && !inner->isReduction()) {
          transform::parallelize(tv, tv->nDims() - 1, ParallelType::Vectorize);
        }
      }
    }
  }
  if (s.p.shared_memory) {
    for (TensorView* tv : s.buffers) {
      if (!tv->isFusionInput() && !tv->isFusionOutput()) tv->setMemoryType(MemoryType::Shared);
    }
  }
}

// Caches of row-invariant inputs (layer_norm's weight and bias: no ID of the rows) are loaded
// once per block, up front, and held in registers across its rows: not inlined, their loads
// overlap the row's loads and reductions instead of waiting behind the block reductions. Held
// across rows only when it spans each reduced dim: then its loops are the row's own (same split,
// same threads) and each thread holds the elements it reads. A partial row ([1, h, 1] against a
// row of h x w) is laid out differently and is read per element. Not when rows sit in shared
// memory or reload: a whole row of weights per thread would not fit registers.
std::unordered_set<TensorView*> rowInvariantCaches(const Schedule& s) {
  std::unordered_set<TensorView*> row_invariant;
  // Only when the batch lives in registers: with rows in shared memory (or reloaded) a thread
  // covers dozens of elements, and holding the weights for all of them spilled to local memory
  // (layer_norm of [1335, 50257] on an H100: 896 us, three times its softmax's 297 us).
  if (s.p.reload_rows || s.p.shared_memory) return row_invariant;
  const transform::IdGraph exact(s.fusion, transform::IdMappingMode::Exact);
  std::vector<IterDomain*> row_ids;
  for (IterDomain* id : s.ref->logical()) {
    if (!id->isReduction() && !id->isBroadcast()) row_ids.push_back(id);
  }
  if (row_ids.empty()) return row_invariant;
  for (TensorView* c : s.caches) {
    auto* in = c->definition()->input(0)->as<TensorView>();
    bool has_row = false;
    for (IterDomain* id : in->logical()) {
      for (IterDomain* r : row_ids) has_row = has_row || exact.areMapped(id, r);
    }
    if (!has_row && s.spans_row.count(in) != 0) row_invariant.insert(c);
  }
  return row_invariant;
}

// Persistent buffers stay at the row position: their readers sit in different loop nests (before
// and after a reduction). The inliner's crossing rule cannot see that when every direct reader
// is pointwise (the projected input caches, read by one cast per use: only the cast's consumers
// are downstream of the reduction), and sharing the element loops with both readers would need
// one loop both before and after the reduction. Row-invariant caches are not inlined at all.
void inlineEverything(Schedule& s, const std::vector<TensorView*>& elementwise,
                      std::vector<TensorView*> stats) {
  const std::unordered_set<TensorView*> row_invariant = rowInvariantCaches(s);
  std::vector<TensorView*> inlined;
  for (TensorView* tv : elementwise) {
    if (row_invariant.count(tv)) continue;
    (s.buffers.count(tv) ? stats : inlined).push_back(tv);
  }
  utils::inlinePersistentRows(s.fusion, inlined, stats, s.row_pos);
}

}  // namespace

void scheduleInnerPersistent(Fusion& fusion, const InnerPersistentParams& p) {
  FusionGuard guard(&fusion);
  std::string why;
  LOOM_CHECK(innerPersistentCompileTimeCheck(fusion, &why),
             "inner persistent scheduler cannot schedule this fusion: ", why);
  LOOM_CHECK(p.vectorize >= 1 && p.persistent_batch >= 1 && p.rows_per_block >= 1,
             "inner persistent parameters must be positive: ", p.toString());
  Schedule s(fusion, p);
  if (p.peel && p.vectorize > 1) {
    LOOM_CHECK(utils::peelableRow(fusion, utils::reductionTvs(fusion).front(), &why),
               "inner persistent: peel=1 cannot peel this fusion's rows: ", why, " (", p.toString(),
               ")");
  }
  prepareBuffers(s);
  analyzeRows(s);
  cacheInputsAndOutputs(s);
  transformReference(s);
  auto [elementwise, stats] = placeRowStatistics(s.fusion, s.reduced, s.row_rank, s.row_pos);
  vectorizeAndPlace(s);
  inlineEverything(s, elementwise, std::move(stats));
}

}  // namespace loom::scheduler
