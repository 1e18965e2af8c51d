// SPDX-License-Identifier: Apache-2.0
// What a tensor's sharding is, and the forms Loom refuses (sharding.h).
#include <algorithm>

#include "loom/ir/scalar.h"
#include "loom/ir/tensor_domain.h"
#include "loom/ir/transforms.h"
#include "loom/multidevice/sharding.h"
#include "loom/support/error.h"

namespace loom::multidevice {

namespace {

// True when `split` cuts a piece of a split whose other piece is a mesh axis: a DID inside
// another DID's shard.
bool nestedInAnotherDid(const ir::Split* split) {
  const ir::Expr* parent = split->in()->definition();
  const auto* up = parent == nullptr ? nullptr : parent->dynCast<ir::Split>();
  return up != nullptr && (up->outer()->isDeviceDim() || up->inner()->isDeviceDim());
}

}  // namespace

std::vector<ShardedAxis> shardedAxes(const ir::TensorView* tv) {
  std::vector<ShardedAxis> axes;
  const std::vector<ir::IterDomain*>& logical = tv->logical();
  for (ir::IterDomain* id : tv->loop()) {
    if (!id->isDeviceDim()) continue;
    const ir::ParallelType p = id->parallelType();
    const std::string_view name = ir::parallelTypeName(p);
    LOOM_CHECK(tv->hasDeviceMesh(), tv->toString(), ": loop ID ", id->toString(), " is ", name,
               " but the tensor has no device mesh (setDeviceMesh)");
    const ir::DeviceMesh& mesh = tv->deviceMesh();
    LOOM_CHECK(mesh.hasAxis(p), tv->toString(), ": loop ID ", id->toString(), " is ", name,
               " but its device mesh ", mesh, " has no axis for it (DIDx is the last axis)");
    LOOM_CHECK(findAxis(axes, p) == nullptr, tv->toString(), ": two loop IDs are ", name, " (",
               findAxis(axes, p)->did->toString(), " and ", id->toString(), ")");
    const int64_t devices = mesh.size(p);
    if (std::find(logical.begin(), logical.end(), id) != logical.end()) {
      // nvFuser's logical DID: the dim has one element per device (propagate_shardings rewrites
      // it as an outer split by the mesh size, the form below).
      auto extent = id->extent()->constInt();
      LOOM_CHECK(!extent.has_value() || *extent == devices, tv->toString(), ": logical ID ",
                 id->toString(), " is ", name, " without a split, which gives each device one "
                 "element of it, so its extent must be the mesh axis's ", devices, ", not ",
                 *extent, "; to give each device a block of it, write outer_split(axis, ",
                 devices, ") and parallelize the outer piece");
      if (id->isBroadcast() && !id->hasExpandedExtent()) {
        // A size-1 dim on a mesh axis of one device (nvFuser's [d, ...] at d = 1): nothing to
        // shard; propagate_shardings clears it.
        LOOM_CHECK(devices == 1, tv->toString(), ": ", name, " shards the broadcast ID ",
                   id->toString(), ", which has one element for ", devices, " devices");
        continue;
      }
      axes.push_back({p, id, id, devices});
      continue;
    }
    auto* split = id->definition() == nullptr ? nullptr : id->definition()->dynCast<ir::Split>();
    const bool logical_in =
        split != nullptr && std::find(logical.begin(), logical.end(), split->in()) != logical.end();
    LOOM_CHECK(split != nullptr && !split->innerSplit() && split->outer() == id && logical_in,
               tv->toString(), ": ", name, " loop ID ", id->toString(),
               " must be the outer part of an outer split of a logical ID (outer_split(axis, ",
               devices, ")), or a logical ID of extent ", devices, " itself; ",
               split == nullptr ? "it is made by a merge: shard one logical dim, not a merge"
               : split->innerSplit()
                   ? "it comes from an inner split, whose pieces are strided across the dim: "
                     "Loom runs shardings whose devices hold contiguous blocks "
                     "(multidevice.shard_tensor can still cut such a tensor)"
               : split->outer() != id ? "it is the inner part of the split"
               : nestedInAnotherDid(split)
                   ? "it shards a piece another mesh axis already sharded (two mesh axes on one "
                     "dim): reshape the dim into two dims and shard each with its own outer split"
                   : "it splits an ID that is not logical (a split of a split: shard the logical "
                     "dim with one outer split)");
    auto factor = split->factor()->constInt();
    LOOM_CHECK(factor.has_value() && *factor == devices, tv->toString(), ": ", name, " loop ID ",
               id->toString(), " splits ", split->in()->toString(), " into ",
               split->factor()->toString(), " parts but the mesh has ", devices,
               " devices along ", name);
    LOOM_CHECK(!split->in()->isBroadcast(), tv->toString(), ": ", name, " loop ID ",
               id->toString(), " shards the broadcast ID ", split->in()->toString());
    auto extent = split->in()->extent()->constInt();
    LOOM_CHECK(!extent.has_value() || *extent % devices == 0, tv->toString(), ": dim ",
               split->in()->toString(), " of extent ", extent.value_or(0),
               " is sharded over ", devices, " devices (", name,
               "), which do not divide it");
    axes.push_back({p, id, split->in(), devices});
  }
  return axes;
}

namespace {

bool dividedBy(const ir::IterDomain* id, int64_t devices) {
  auto e = id->extent()->constInt();
  return e.has_value() && *e % devices == 0;
}

}  // namespace

ir::IterDomain* shardedImage(const ir::TensorView* tv, ir::IterDomain* id, int64_t devices) {
  const std::vector<ir::IterDomain*>& logical = tv->logical();
  for (int steps = 0; steps < 64 && id != nullptr; ++steps) {
    if (std::find(logical.begin(), logical.end(), id) != logical.end()) return id;
    ir::IterDomain* next = nullptr;
    for (ir::Expr* use : id->uses()) {
      if (auto* s = use->dynCast<ir::Split>(); s != nullptr && s->in() == id) {
        if (dividedBy(s->outer(), devices)) next = s->outer();
      } else if (auto* m = use->dynCast<ir::Merge>(); m != nullptr && m->outer() == id) {
        next = m->out();
      }
      if (next != nullptr) break;
    }
    id = next;
  }
  return nullptr;
}

ir::IterDomain* shardedPreimage(const ir::TensorView* tv, ir::IterDomain* id, int64_t devices,
                                const std::function<void(ir::IterDomain*)>& visit) {
  const std::vector<ir::IterDomain*>& root = tv->domain()->maybeRoot();
  for (int steps = 0; steps < 64 && id != nullptr; ++steps) {
    if (visit) visit(id);
    if (std::find(root.begin(), root.end(), id) != root.end()) return id;
    ir::Expr* def = id->definition();
    if (auto* s = def == nullptr ? nullptr : def->dynCast<ir::Split>();
        s != nullptr && s->outer() == id && dividedBy(id, devices)) {
      id = s->in();
    } else if (auto* m = def == nullptr ? nullptr : def->dynCast<ir::Merge>();
               m != nullptr && m->out() == id) {
      id = m->outer();
    } else {
      return nullptr;
    }
  }
  return nullptr;
}

const ShardedAxis* findAxis(const std::vector<ShardedAxis>& axes, ir::ParallelType type) {
  for (const ShardedAxis& a : axes) {
    if (a.type == type) return &a;
  }
  return nullptr;
}

bool isMultidevice(const ir::Fusion& fusion) {
  for (const ir::TensorView* tv : fusion.allTvs()) {
    if (tv->hasDeviceMesh()) return true;
  }
  return false;
}

}  // namespace loom::multidevice
