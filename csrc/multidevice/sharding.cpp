// SPDX-License-Identifier: Apache-2.0
// What a tensor's sharding is, and the forms Loom refuses (sharding.h).
#include "loom/multidevice/sharding.h"

#include <algorithm>

#include "loom/ir/scalar.h"
#include "loom/ir/tensor_domain.h"
#include "loom/ir/transforms.h"
#include "loom/support/error.h"

namespace loom::multidevice {

namespace {

// The splits from DID loop ID `id` up to the logical ID it shards, the DID's own first, each
// time through the split's outer piece (nvFuser's getShardedLogicalAxis follows the same path):
// the DID then selects one contiguous block of the dim. UserError naming the tensor for any other
// way to the logical domain.
std::vector<const ir::Split*> outerPieceChain(const ir::TensorView* tv, const ir::IterDomain* id,
                                              std::string_view name, int64_t devices) {
  const std::vector<ir::IterDomain*>& logical = tv->logical();
  const std::string form = "outer_split(axis, " + std::to_string(devices) +
                           ") and parallelize the outer piece (or split(axis, extent / " +
                           std::to_string(devices) + ") and parallelize its outer piece)";
  std::vector<const ir::Split*> chain;
  const ir::IterDomain* cur = id;
  while (std::find(logical.begin(), logical.end(), cur) == logical.end()) {
    const ir::Expr* def = cur->definition();
    const auto* split = def == nullptr ? nullptr : def->dynCast<ir::Split>();
    LOOM_CHECK(split != nullptr, tv->toString(), ": ", name, " loop ID ", id->toString(),
               " must come from a logical ID through the outer pieces of splits; ",
               def == nullptr ? "it derives from none"
                              : "it is made by a merge: shard one logical dim, not a merge",
               ". To shard a dim in blocks, write ", form);
    const ir::IterDomain* other = split->outer() == cur ? split->inner() : split->outer();
    LOOM_CHECK(!other->isDeviceDim(), tv->toString(), ": ", name, " loop ID ", id->toString(),
               " shards a piece of a dim another mesh axis shards too (", other->toString(),
               "; two mesh axes on one dim): reshape the dim into two dims and shard each with "
               "its own outer split");
    LOOM_CHECK(split->outer() == cur, tv->toString(), ": ", name, " loop ID ", id->toString(),
               cur == id ? " is" : " comes from", " the inner piece of ", splitText(split),
               ", which gives each device elements strided across the dim; nvFuser does not "
               "run a DID on an inner piece either (an inner split: shard_tensor can still cut "
               "such a tensor). Write ",
               form, " for contiguous blocks");
    chain.push_back(split);
    cur = split->in();
  }
  return chain;
}

// The checks of a chain other than one outer split by the mesh size (an inner split whose outer
// piece is the DID, splits of outer pieces): where the extents are constants, the DID piece has
// the mesh size and every split divides its input (then the DID's blocks are the ones of
// outer_split(dim, devices)); symbolic ones are checked when the fusion runs (canonicalized by
// propagate_shardings with ir::ExtentRequirement).
void checkOuterPieceChain(const ir::TensorView* tv, const ir::IterDomain* id,
                          const std::vector<const ir::Split*>& chain, std::string_view name,
                          int64_t devices) {
  const ir::IterDomain* dim = chain.back()->in();
  for (const ir::Split* split : chain) {
    LOOM_CHECK(split->factor()->constInt().has_value(), tv->toString(), ": ", name, " loop ID ",
               id->toString(), " comes from ", splitText(split),
               ", whose factor is not a constant");
    auto in = split->in()->extent()->constInt();
    const int64_t factor = *split->factor()->constInt();
    LOOM_CHECK(!in.has_value() || *in % factor == 0, tv->toString(), ": ", name, " loop ID ",
               id->toString(), " comes from ", splitText(split), ", which does not divide ",
               split->in()->toString(), " of extent ", in.value_or(0),
               " evenly; the devices' blocks of ", dim->toString(), " would differ in size");
  }
  auto did_extent = id->extent()->constInt();
  LOOM_CHECK(!did_extent.has_value() || *did_extent == devices, tv->toString(), ": ", name,
             " loop ID ", id->toString(), " has ", did_extent.value_or(0), " elements (",
             dim->toString(), " of extent ", dim->extent()->toString(), " through ",
             splitText(chain.front()), ") but the mesh has ", devices, " devices along ", name,
             "; the piece on the mesh must have the mesh's size");
}

}  // namespace

std::vector<ShardedAxis> shardedAxes(const ir::TensorView* tv) {
  std::vector<ShardedAxis> axes;
  const std::vector<ir::IterDomain*>& logical = tv->logical();
  for (ir::IterDomain* id : tv->loop()) {
    if (!id->isDeviceDim()) continue;
    // nvFuser marks a reduction whose dim is sharded across devices with a DID on the reduction
    // ID: the devices' partials are summed (the input's sharding says so already), so it shards
    // nothing of the output; propagate_shardings clears it.
    if (id->isReduction()) continue;
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
      if (id->isBroadcast() && !id->hasExpandedExtent()) {
        // A size-1 dim on a mesh axis of one device (nvFuser's [d, ...] at d = 1): nothing to
        // shard; propagate_shardings clears it.
        LOOM_CHECK(devices == 1, tv->toString(), ": ", name, " shards the broadcast ID ",
                   id->toString(), ", which has one element for ", devices,
                   " devices: leave it unsharded (every device holds it)");
        continue;
      }
      auto extent = id->extent()->constInt();
      LOOM_CHECK(!extent.has_value() || *extent == devices, tv->toString(), ": logical ID ",
                 id->toString(), " is ", name,
                 " without a split, which gives each device one "
                 "element of it, so its extent must be the mesh axis's ",
                 devices, ", not ", *extent,
                 "; to give each device a block of it, write outer_split(axis, ", devices,
                 ") and parallelize the outer piece");
      axes.push_back({p, id, id, devices});
      continue;
    }
    const std::vector<const ir::Split*> chain = outerPieceChain(tv, id, name, devices);
    const ir::Split* top = chain.back();  // the split of the logical ID
    ir::IterDomain* dim = top->in();
    if (dim->isBroadcast() && !dim->hasExpandedExtent() && devices == 1) {
      // The split form of the size-1 case above (nvFuser's outer_split(0, d) of a [d, ...] dim
      // at d = 1): nothing to shard; propagate_shardings clears it.
      continue;
    }
    LOOM_CHECK(!dim->isBroadcast(), tv->toString(), ": ", name, " loop ID ", id->toString(),
               " shards the broadcast ID ", dim->toString(), " through ", splitText(top), ", ",
               dim->hasExpandedExtent()
                   ? "an expanded broadcast (stride 0, one value repeated on every device): "
                     "leave it unsharded; Loom shards iteration dims, so shard a tensor where "
                     "this dim is one (the result of an op with an operand of that size that is "
                     "not a broadcast)"
                   : "which has one element for " + std::to_string(devices) +
                         " devices: leave it unsharded (every device holds it)");
    if (chain.size() == 1 && !top->innerSplit()) {
      // The form every pass works with: an outer split by the mesh size.
      auto factor = top->factor()->constInt();
      LOOM_CHECK(factor.has_value() && *factor == devices, tv->toString(), ": ", name, " loop ID ",
                 id->toString(), " splits ", dim->toString(), " into ", top->factor()->toString(),
                 " parts but the mesh has ", devices, " devices along ", name);
      auto extent = dim->extent()->constInt();
      LOOM_CHECK(!extent.has_value() || *extent % devices == 0, tv->toString(), ": dim ",
                 dim->toString(), " of extent ", extent.value_or(0), " is sharded over ", devices,
                 " devices (", name, "), which do not divide it");
    } else {
      checkOuterPieceChain(tv, id, chain, name, devices);
    }
    axes.push_back({p, id, dim, devices});
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

std::string splitText(const ir::Split* split) {
  return split->opName() + "(" + split->in()->toString() + ", " + split->factor()->toString() + ")";
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
