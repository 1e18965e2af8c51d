// SPDX-License-Identifier: Apache-2.0
// Passes propagate_shardings and finalize_shardings (sharding.h).
//
// Propagation maps each DID split of a reference tensor through the op between it and an
// unsharded neighbour: forward from a producer (its sharded logical ID -> the consumer's root or
// logical ID the op maps it to -> through a reshape to the logical ID whose outer split is the
// same blocks: shardedImage), backward from a consumer (the inverse: shardedPreimage). A
// reduced, broadcast or otherwise unmatched ID is left unsharded; decompose_reshardings then says
// which communication that needs.
//
//   x [b, s, e] sharded on s (DIDx) -> y = exp(x) [b, s, e]: y's s is outer-split by d on DIDx
//   -> m = sum(y, {2}) [b, s, r{e}]: s again; a sum over s instead would leave r{s} unsharded.
#include <algorithm>

#include "loom/ir/builder.h"
#include "loom/ir/exprs.h"
#include "loom/ir/logical_map.h"
#include "loom/ir/scalar.h"
#include "loom/ir/scalar_math.h"
#include "loom/ir/tensor_domain.h"
#include "loom/ir/transforms.h"
#include "loom/multidevice/sharding.h"
#include "loom/support/error.h"
#include "multidevice/contraction.h"

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

// The inputs an output of `e` may take its sharding from, the preferred first (ties go to the
// first). A matmul's or linear's second operand (the weight) comes first: Megatron's layers keep
// the weights where they are and move the activations, so a column-parallel linear of a
// sequence-sharded input is sharded like its weight (an Allgather of the input), not like the
// input (an Allgather of the weight).
std::vector<ir::TensorView*> forwardCandidates(const ir::Expr* e) {
  std::vector<ir::TensorView*> ins = tensorsOf(e->inputs());
  if ((e->isA<ir::MatmulOp>() || e->isA<ir::LinearOp>()) && ins.size() >= 2) {
    std::swap(ins[0], ins[1]);
  }
  return ins;
}

// When `e` sums partials over the devices (its input `ref` is sharded on a mesh axis along a dim
// `e` reduces) and its output `out` only feeds, through single-use elementwise exprs of the same
// dims, a tensor sharded on that mesh axis along a kept dim: that tensor. `out` then takes its
// sharding, so the sum is a ReduceScatter in `out`'s dtype, not an Allreduce and a local slice
// (rFactor of a bf16 product: the partials summed in f32, the cast to bf16 after, on each
// device's slice). Else nullptr.
const ir::TensorView* scatteringConsumer(const ir::Expr* e, const ir::TensorView* out,
                                         const ir::TensorView* ref) {
  if (!e->isA<ir::ReductionOp>()) return nullptr;
  const auto p2c = ir::producerToConsumerMap(ref, out);
  const ShardedAxis* reduced = nullptr;
  const std::vector<ShardedAxis> axes = shardedAxes(ref);
  for (const ShardedAxis& a : axes) {
    auto it = p2c.find(a.logical);
    if (a.devices > 1 && it != p2c.end() && it->second->isReduction()) reduced = &a;
  }
  if (reduced == nullptr) return nullptr;
  const size_t rank = ir::TensorDomain::noReductions(out->logical()).size();
  const ir::TensorView* tv = out;
  while (!tv->isFusionOutput() && tv->uses().size() == 1) {
    const ir::Expr* u = tv->uses().front();
    const auto* ls = u->dynCast<ir::LoadStoreOp>();
    if (!u->isA<ir::UnaryOp>() && !u->isA<ir::BinaryOp>() &&
        (ls == nullptr || ls->opType() != ir::LoadStoreOpType::Set)) {
      return nullptr;
    }
    const auto* next = u->output(0)->dynCast<ir::TensorView>();
    if (next == nullptr || next->domain()->hasRoot() ||
        ir::TensorDomain::noReductions(next->logical()).size() != rank) {
      return nullptr;
    }
    if (next->hasDeviceMesh()) {
      const std::vector<ShardedAxis> next_axes = shardedAxes(next);
      const bool scattered = next->deviceMesh() == ref->deviceMesh() &&
                             findAxis(next_axes, reduced->type) != nullptr &&
                             next_axes.size() == 1;
      return scattered ? next : nullptr;
    }
    tv = next;
  }
  return nullptr;
}

}  // namespace

void shardLike(ir::TensorView* target, const ir::TensorView* ref, bool ref_is_producer) {
  const std::vector<ShardedAxis> axes = shardedAxes(ref);
  target->setDeviceMesh(ref->deviceMesh());
  const std::vector<ShardedAxis> present = shardedAxes(target);
  for (const ShardedAxis& a : axes) {
    if (findAxis(present, a.type) != nullptr) continue;  // another reference gave this mesh axis
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
    // A matmul's or linear's r{k} takes the operand's sharding of k as nvFuser's propagation
    // gives it (the mark of a partial sum, which decompose_reshardings reads); other reduced
    // IDs stay unsharded.
    const bool contracted_k = t != nullptr && t->isReduction() && a.devices > 1 &&
                              target->definition() != nullptr &&
                              (target->definition()->isA<ir::MatmulOp>() ||
                               target->definition()->isA<ir::LinearOp>()) &&
                              t == target->logical().back();
    if (t == nullptr || (t->isReduction() && !contracted_k) || t->isBroadcast()) continue;
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
    const size_t pos =
        size_t(std::find(ref_ids.begin(), ref_ids.end(), a.logical) - ref_ids.begin());
    const auto& loop = target->loop();
    const int64_t at = int64_t(std::find(loop.begin(), loop.end(), ids.at(pos)) - loop.begin());
    target->outerSplit(at, a.devices);
    target->axis(at)->parallelize(a.type);
  }
  moveDidOutermost(target);
}

namespace {

// True when `a` is the form every pass works with: the outer piece of an outer split of the
// logical ID (by the mesh size: shardedAxes checked it).
bool isOuterSplitForm(const ShardedAxis& a) {
  const ir::Expr* def = a.did->definition();
  const auto* split = def == nullptr ? nullptr : def->dynCast<ir::Split>();
  return split != nullptr && !split->innerSplit() && split->outer() == a.did &&
         split->in() == a.logical;
}

// True when `id` is `root` or derives from it.
bool derivesFrom(const ir::IterDomain* id, const ir::IterDomain* root) {
  std::vector<const ir::IterDomain*> stack{id};
  while (!stack.empty()) {
    const ir::IterDomain* cur = stack.back();
    stack.pop_back();
    if (cur == root) return true;
    if (cur->definition() == nullptr) continue;
    for (const ir::Val* in : cur->definition()->inputs()) {
      if (const auto* in_id = in->dynCast<ir::IterDomain>()) stack.push_back(in_id);
    }
  }
  return false;
}

// Removes every transform below `id` (a replaced split tree), deepest first.
void removeTransformsBelow(ir::Fusion& fusion, ir::IterDomain* id) {
  std::vector<ir::Expr*> order;
  std::vector<ir::IterDomain*> stack{id};
  while (!stack.empty()) {
    ir::IterDomain* cur = stack.back();
    stack.pop_back();
    for (ir::Expr* use : cur->uses()) {
      if (std::find(order.begin(), order.end(), use) != order.end()) continue;
      order.push_back(use);
      for (ir::Val* out : use->outputs()) stack.push_back(out->as<ir::IterDomain>());
    }
  }
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    std::vector<ir::Val*> outs = (*it)->outputs();
    fusion.removeExpr(*it);
    for (ir::Val* out : outs) {
      if (out->uses().empty()) fusion.removeVal(out);
    }
  }
}

// The conditions under which `a`'s split tree (an inner split with the DID on its outer piece,
// splits of outer pieces) holds the blocks of outer_split(logical, devices): the DID piece has
// the mesh's size and every split divides its input. Those the constants do not settle
// (shardedAxes checked the constant ones) are checked when the fusion runs.
void requireBlocks(ir::Fusion& fusion, const ir::TensorView* tv, const ShardedAxis& a) {
  std::vector<const ir::Split*> chain;
  for (const ir::IterDomain* cur = a.did; cur != a.logical;) {
    const auto* split = cur->definition()->as<ir::Split>();
    chain.push_back(split);
    cur = split->in();
  }
  std::string what = tv->toString() + ": " + std::string(ir::parallelTypeName(a.type)) +
                     " shards " + a.logical->toString() + " through " + splitText(chain.front());
  if (chain.size() == 1 && chain.front()->innerSplit()) {
    const int64_t f = *chain.front()->factor()->constInt();
    what += ", which gives each of the " + std::to_string(a.devices) +
            " devices one block of it only when its extent is " + std::to_string(f) + " x " +
            std::to_string(a.devices) + " = " + std::to_string(f * a.devices) +
            " (split by extent / " + std::to_string(a.devices) + ", or write outer_split(axis, " +
            std::to_string(a.devices) + "), to shard other extents)";
  } else {
    what += ", which gives each of the " + std::to_string(a.devices) +
            " devices one block of it only when the piece on the mesh has " +
            std::to_string(a.devices) + " elements and every split divides evenly";
  }
  if (!a.did->extent()->constInt().has_value()) {
    fusion.addExtentRequirement({a.did->extent(), a.devices, a.logical->extent(), what});
  }
  for (const ir::Split* split : chain) {
    if (split->in()->extent()->constInt().has_value()) continue;
    ir::Scalar* rest = ir::scalar_math::mod(split->in()->extent(), split->factor());
    fusion.addExtentRequirement({rest, 0, a.logical->extent(), what});
  }
}

// nvFuser's other ways of sharding a dim in blocks rewritten as the form Loom runs, an outer split
// of the logical ID by the mesh size whose outer piece is the DID loop ID:
//   a logical DID (a logical ID of the mesh axis's size parallelized directly: one element per
//   device);
//   an inner split whose outer piece is the DID, and splits of outer pieces (nvFuser's
//   inner_split / split(inner_split=True) forms): the same blocks when the pieces divide evenly,
//   which requireBlocks has checked when the fusion runs.
// The loop IDs derived from the logical one give way to the two pieces of the outer split (the
// local piece's own splits are loop scheduling the schedulers redo).
bool canonicalizeDids(ir::Fusion& fusion) {
  ir::FusionGuard guard(&fusion);
  bool changed = false;
  for (ir::TensorView* tv : fusion.allTvs()) {
    // A size-1 broadcast on a one-device mesh axis shards nothing (shardedAxes skips it), whether
    // parallelized directly or through splits (the splits stay as loop scheduling).
    for (ir::IterDomain* id : tv->loop()) {
      if (id->isDeviceDim() && id->isReduction()) {
        // nvFuser's mark of a reduction across devices (shardedAxes skips it): the partials'
        // sum comes from the input's sharding. On a matmul's or linear's r{k} it stays for
        // decompose_reshardings: it shards the contraction even when the operands are not
        // sharded on k (they are scattered then).
        if (const auto p = partialContractionAxis(tv); p && p->did == id) continue;
        id->parallelize(ir::ParallelType::Serial);
        changed = true;
        continue;
      }
      if (!id->isDeviceDim() || tv->deviceMesh().size(id->parallelType()) != 1) continue;
      for (ir::IterDomain* l : tv->logical()) {
        if (l->isBroadcast() && !l->hasExpandedExtent() && derivesFrom(id, l)) {
          id->parallelize(ir::ParallelType::Serial);
          changed = true;
          break;
        }
      }
    }
    for (const ShardedAxis& a : shardedAxes(tv)) {
      if (a.did == a.logical) {
        const auto& loop = tv->loop();
        const int64_t k = int64_t(std::find(loop.begin(), loop.end(), a.did) - loop.begin());
        a.did->parallelize(ir::ParallelType::Serial);
        tv->split(k, a.devices, /*inner_split=*/false);
        tv->axis(k)->parallelize(a.type);
        changed = true;
        continue;
      }
      if (isOuterSplitForm(a)) continue;
      for (ir::IterDomain* id : tv->maybeAllocation()) {
        LOOM_CHECK(id == a.logical || !derivesFrom(id, a.logical), tv->toString(),
                   ": its allocation domain holds ", id->toString(), ", a piece of the sharded ",
                   a.logical->toString(), "; give the allocation the logical IDs");
      }
      requireBlocks(fusion, tv, a);
      auto [did, rest] = ir::IterDomain::split(a.logical, ir::IrBuilder::index(a.devices),
                                               /*inner_split=*/false);
      did->parallelize(a.type);
      std::vector<ir::IterDomain*> loop;
      bool rest_placed = false;
      for (ir::IterDomain* id : tv->loop()) {
        if (!derivesFrom(id, a.logical)) {
          loop.push_back(id);
        } else if (id == a.did) {
          loop.push_back(did);
        } else if (!rest_placed) {
          loop.push_back(rest);
          rest_placed = true;
        }
      }
      if (!rest_placed) {
        loop.insert(std::find(loop.begin(), loop.end(), did) + 1, rest);
      }
      ir::Expr* fresh = did->definition();
      tv->domain()->setLoopDomain(std::move(loop));
      // The old tree goes (the new split stays: it is what the loop derives from now).
      for (ir::Expr* use : std::vector<ir::Expr*>(a.logical->uses())) {
        if (use == fresh) continue;
        for (ir::Val* out : use->outputs())
          removeTransformsBelow(fusion, out->as<ir::IterDomain>());
        std::vector<ir::Val*> outs = use->outputs();
        fusion.removeExpr(use);
        for (ir::Val* out : outs) {
          if (out->uses().empty()) fusion.removeVal(out);
        }
      }
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
  const bool canonical = canonicalizeDids(fusion);
  return shardNewTensors(fusion) || canonical;
}

namespace {

// Tensors neither direction reaches: made from no tensor (full, iota, a random op: sdpfa_fwd's
// seed and offset) and consumed by none, such as a fusion output of a factory. They hold the same
// values on every device, so they go unsharded on the fusion's mesh; with several meshes the
// user says which.
bool placeUnreached(ir::Fusion& fusion) {
  std::vector<ir::TensorView*> unreached;
  std::vector<ir::DeviceMesh> meshes;
  for (ir::TensorView* tv : fusion.allTvs()) {
    if (!tv->hasDeviceMesh()) {
      unreached.push_back(tv);
    } else if (std::find(meshes.begin(), meshes.end(), tv->deviceMesh()) == meshes.end()) {
      meshes.push_back(tv->deviceMesh());
    }
  }
  if (unreached.empty() || meshes.empty()) return false;
  for (ir::TensorView* tv : unreached) {
    LOOM_CHECK(meshes.size() == 1, tv->toString(),
               " has no device mesh, and none comes to it from its producers or consumers, while "
               "the fusion's tensors are on ", meshes.size(),
               " meshes: give it one (set_device_mesh)");
    tv->setDeviceMesh(meshes.front());
  }
  return true;
}

}  // namespace

bool shardNewTensors(ir::Fusion& fusion) {
  if (!isMultidevice(fusion)) return false;
  bool changed = false;
  const std::vector<ir::Expr*> exprs = fusion.exprs();
  // Forward, producers first: every output of an expr (siblings alike) from its best input.
  for (ir::Expr* e : exprs) {
    const std::vector<ir::TensorView*> candidates = forwardCandidates(e);
    const ir::TensorView* ref = bestReference(candidates);
    if (ref == nullptr) continue;
    for (ir::TensorView* out : tensorsOf(e->outputs())) {
      if (out->hasDeviceMesh()) continue;
      if (const ir::TensorView* slicer = scatteringConsumer(e, out, ref)) {
        shardAtSamePositions(out, slicer);
      }
      shardLike(out, ref, /*ref_is_producer=*/true);
      // The mesh axes the reference leaves unsharded come from the other inputs on its mesh
      // (data parallel on DIDy from the activations, tensor parallel on DIDx from the weight).
      for (const ir::TensorView* other : candidates) {
        if (other != ref && other->hasDeviceMesh() && other->deviceMesh() == ref->deviceMesh()) {
          shardLike(out, other, /*ref_is_producer=*/true);
        }
      }
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
  return placeUnreached(fusion) || changed;
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
    if (std::any_of(alloc.begin(), alloc.end(),
                    [](ir::IterDomain* id) { return id->isDeviceDim(); })) {
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
