// SPDX-License-Identifier: Apache-2.0
// Passes propagate_shardings and finalize_shardings (sharding.h).
//
// Propagation maps each DID split of a reference tensor through the op between it and an
// unsharded neighbour: forward from a producer (its sharded logical ID -> the consumer's root or
// logical ID the op maps it to -> through a reshape to the logical ID whose outer split is the
// same blocks: shardedImage), backward from a consumer (the inverse: shardedPreimage). A
// reduced, broadcast or otherwise unmatched ID is left unsharded; decompose_reshardings then says which
// communication that needs.
//
//   x [b, s, e] sharded on s (DIDx) -> y = exp(x) [b, s, e]: y's s is outer-split by d on DIDx
//   -> m = sum(y, {2}) [b, s, r{e}]: s again; a sum over s instead would leave r{s} unsharded.
#include <algorithm>

#include "loom/ir/exprs.h"
#include "loom/ir/logical_map.h"
#include "loom/ir/scalar.h"
#include "loom/ir/tensor_domain.h"
#include "loom/ir/transforms.h"
#include "loom/multidevice/sharding.h"
#include "loom/support/error.h"

namespace loom::multidevice {

namespace {

// Moves the DID loop IDs of `tv` to the front, keeping their order and the others'.
bool moveDidOutermost(ir::TensorView* tv) {
  std::vector<int64_t> dids, rest;
  for (int64_t k = 0; k < tv->nDims(); ++k) (tv->axis(k)->isDeviceDim() ? dids : rest).push_back(k);
  std::vector<int64_t> perm = dids;
  perm.insert(perm.end(), rest.begin(), rest.end());
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == int64_t(i);
  if (!identity) tv->reorder(perm);
  return !identity;
}

// The tensor of `tvs` with the most sharded axes (the first on ties), or nullptr when none has
// a mesh.
const ir::TensorView* bestReference(const std::vector<ir::TensorView*>& tvs) {
  const ir::TensorView* best = nullptr;
  size_t best_axes = 0;
  for (const ir::TensorView* tv : tvs) {
    if (!tv->hasDeviceMesh()) continue;
    size_t n = shardedAxes(tv).size();
    if (best == nullptr || n > best_axes) {
      best = tv;
      best_axes = n;
    }
  }
  return best;
}

std::vector<ir::TensorView*> tensorsOf(const std::vector<ir::Val*>& vals) {
  std::vector<ir::TensorView*> out;
  for (ir::Val* v : vals) {
    if (auto* tv = v->dynCast<ir::TensorView>()) out.push_back(tv);
  }
  return out;
}

}  // namespace

void shardLike(ir::TensorView* target, const ir::TensorView* ref, bool ref_is_producer) {
  const std::vector<ShardedAxis> axes = shardedAxes(ref);
  target->setDeviceMesh(ref->deviceMesh());
  for (const ShardedAxis& a : axes) {
    ir::IterDomain* t = nullptr;
    if (ref_is_producer) {
      auto map = ir::producerToConsumerMap(ref, target);
      auto it = map.find(a.logical);
      if (it != map.end()) t = shardedImage(target, it->second, a.devices);
    } else if (ir::IterDomain* r = shardedPreimage(ref, a.logical, a.devices)) {
      auto map = ir::consumerToProducerMap(target, ref);
      auto it = map.find(r);
      if (it != map.end()) t = it->second;
    }
    if (t == nullptr || t->isReduction() || t->isBroadcast()) continue;
    auto extent = t->extent()->constInt();
    if (extent.has_value() && *extent % a.devices != 0) continue;  // decompose_reshardings says so
    const auto& loop = target->loop();
    auto pos = std::find(loop.begin(), loop.end(), t);
    if (pos == loop.end()) continue;  // already transformed: not a tensor propagation touches
    const int64_t axis = int64_t(pos - loop.begin());
    target->split(axis, a.devices, /*inner_split=*/false);
    target->axis(axis)->parallelize(a.type);
  }
  moveDidOutermost(target);
}

void shardAtSamePositions(ir::TensorView* target, const ir::TensorView* ref) {
  target->setDeviceMesh(ref->deviceMesh());
  const std::vector<ir::IterDomain*> ref_ids = ir::TensorDomain::noReductions(ref->logical());
  const std::vector<ir::IterDomain*> ids = ir::TensorDomain::noReductions(target->logical());
  LOOM_ASSERT(ids.size() == ref_ids.size(), "shardAtSamePositions: ", target->toString(), " and ",
              ref->toString(), " differ in rank");
  for (const ShardedAxis& a : shardedAxes(ref)) {
    const size_t pos = size_t(std::find(ref_ids.begin(), ref_ids.end(), a.logical) - ref_ids.begin());
    const auto& loop = target->loop();
    const int64_t at = int64_t(std::find(loop.begin(), loop.end(), ids.at(pos)) - loop.begin());
    target->outerSplit(at, a.devices);
    target->axis(at)->parallelize(a.type);
  }
  moveDidOutermost(target);
}

namespace {

// nvFuser's logical DID (a logical ID of the mesh axis's size parallelized directly: one element
// per device) rewritten as the form Loom runs: an outer split by the mesh size whose outer piece
// is the DID loop ID (the inner piece has one element per device).
bool canonicalizeLogicalDids(ir::Fusion& fusion) {
  bool changed = false;
  for (ir::TensorView* tv : fusion.allTvs()) {
    // A size-1 broadcast on a one-device mesh axis shards nothing (shardedAxes skips it).
    for (ir::IterDomain* id : tv->logical()) {
      if (id->isDeviceDim() && id->isBroadcast() && !id->hasExpandedExtent()) {
        id->parallelize(ir::ParallelType::Serial);
        changed = true;
      }
    }
    for (const ShardedAxis& a : shardedAxes(tv)) {
      if (a.did != a.logical) continue;
      const auto& loop = tv->loop();
      const int64_t k = int64_t(std::find(loop.begin(), loop.end(), a.did) - loop.begin());
      a.did->parallelize(ir::ParallelType::Serial);
      tv->split(k, a.devices, /*inner_split=*/false);
      tv->axis(k)->parallelize(a.type);
      changed = true;
    }
  }
  return changed;
}

}  // namespace

bool propagateShardings(ir::Fusion& fusion) {
  if (!isMultidevice(fusion)) return false;
  // The user's annotations first: a malformed one is an error naming the tensor.
  for (const ir::TensorView* tv : fusion.allTvs()) (void)shardedAxes(tv);
  const bool canonical = canonicalizeLogicalDids(fusion);
  return shardNewTensors(fusion) || canonical;
}

bool shardNewTensors(ir::Fusion& fusion) {
  if (!isMultidevice(fusion)) return false;
  bool changed = false;
  const std::vector<ir::Expr*> exprs = fusion.exprs();
  // Forward, producers first: every output of an expr (siblings alike) from its best input.
  for (ir::Expr* e : exprs) {
    const ir::TensorView* ref = bestReference(tensorsOf(e->inputs()));
    if (ref == nullptr) continue;
    for (ir::TensorView* out : tensorsOf(e->outputs())) {
      if (out->hasDeviceMesh()) continue;
      shardLike(out, ref, /*ref_is_producer=*/true);
      changed = true;
    }
  }
  // Backward, consumers first: inputs (and what feeds them) left without a mesh.
  for (auto it = exprs.rbegin(); it != exprs.rend(); ++it) {
    const ir::TensorView* ref = bestReference(tensorsOf((*it)->outputs()));
    if (ref == nullptr) continue;
    for (ir::TensorView* in : tensorsOf((*it)->inputs())) {
      if (in->hasDeviceMesh()) continue;
      shardLike(in, ref, /*ref_is_producer=*/false);
      changed = true;
    }
  }
  return changed;
}

bool finalizeShardings(ir::Fusion& fusion) {
  if (!isMultidevice(fusion)) return false;
  // Tensors the passes after propagation created (empty-work replacements, the Welford
  // translation's sum, broadcast, difference and square) are sharded like their neighbours.
  bool changed = shardNewTensors(fusion);
  for (ir::TensorView* tv : fusion.allTvs()) {
    LOOM_ASSERT(tv->hasDeviceMesh(), tv->toString(),
                " has no device mesh after sharding propagation in a multidevice fusion");
    const std::vector<ShardedAxis> axes = shardedAxes(tv);
    if (axes.empty()) continue;
    changed |= moveDidOutermost(tv);
    // The allocation domain: the DID IDs first, then the allocation (else logical) order with
    // each sharded logical ID replaced by its local part. Already sharded ones are kept.
    const std::vector<ir::IterDomain*>& alloc = tv->maybeAllocation();
    if (std::any_of(alloc.begin(), alloc.end(), [](ir::IterDomain* id) { return id->isDeviceDim(); })) {
      continue;
    }
    std::vector<ir::IterDomain*> ids;
    ir::Contiguity contiguity;
    for (const ShardedAxis& a : axes) {
      ids.push_back(a.did);
      contiguity.push_back(true);  // one block per device: the local buffer has no gap there
    }
    const ir::Contiguity& flags = tv->contiguity();
    for (size_t k = 0; k < alloc.size(); ++k) {
      ir::IterDomain* id = alloc[k];
      const std::optional<bool> flag = k < flags.size() ? flags[k] : std::nullopt;
      bool sharded = false;
      for (const ShardedAxis& a : axes) {
        if (a.logical != id) continue;
        ids.push_back(a.did->definition()->as<ir::Split>()->inner());
        sharded = true;
      }
      if (!sharded) ids.push_back(id);
      contiguity.push_back(flag);
    }
    tv->setAllocationDomain(std::move(ids), std::move(contiguity));
    changed = true;
  }
  return changed;
}

}  // namespace loom::multidevice
