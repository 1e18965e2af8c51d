// SPDX-License-Identifier: Apache-2.0
// Pass localize_shards (sharding.h): the program one device runs on its shards.
//
//   before: x [b, s{2048}, e] mesh=[0, 1, 2, 3]     after: x [b, s{512}, e]
//           (a symbolic s: s / 4, with s the whole sequence)
//           loop [i3{4, DIDx}, b, i4{512}, e]              loop = logical, no mesh
//
// Every device of a mesh runs the same program: each device's shard of every tensor is the same
// block of the same dims. A tensor on a mesh the device is not in (a stand-in of a device
// program, segmenter/device_program.h) is localized alike: its shape is any member's. The
// communications decompose_reshardings left pair a localized ID
// with one that is not (IterDomain::isLocalized); the runtime runs them.
#include <algorithm>
#include <map>
#include <unordered_set>

#include "loom/ir/builder.h"
#include "loom/ir/exprs.h"
#include "loom/ir/fusion.h"
#include "loom/ir/scalar.h"
#include "loom/ir/scalar_math.h"
#include "loom/ir/tensor_domain.h"
#include "loom/ir/transforms.h"
#include "loom/multidevice/sharding.h"
#include "loom/support/error.h"
#include "loom/transform/transforms_below.h"

namespace loom::multidevice {

namespace {

// The local extent of `id`, sharded over `devices`: a constant divides (shardedAxes checked it
// divides); a symbolic extent n becomes n / devices (one scalar per (n, devices), shared by
// every ID of that extent), so n keeps meaning the whole where a communication's other side
// reads it, and binding a local tensor of size L gives n = L * devices
// (ExpressionEvaluator::bindInputs).
struct Localizer {
  std::unordered_set<ir::IterDomain*> done;
  std::map<std::pair<ir::Scalar*, int64_t>, ir::Scalar*> local_extents;

  void localize(ir::IterDomain* id, int64_t devices) {
    if (!done.insert(id).second) return;
    ir::Scalar* n = id->extent();
    if (auto c = n->constInt()) {
      id->localizeExtent(ir::IrBuilder::index(*c / devices));
      return;
    }
    ir::Scalar*& local = local_extents[{n, devices}];
    if (local == nullptr) local = ir::scalar_math::div(n, ir::IrBuilder::index(devices));
    id->localizeExtent(local);
  }
};

// Removes every transform below `id` (the user's further splits of a shard's local part: loop
// scheduling the schedulers redo on the localized tensor), deepest first, so each removed ID has
// no uses left. An allocation domain built from them cannot be localized: refused by name.
void removeTransformsBelow(ir::Fusion& fusion, const ir::TensorView* tv, ir::IterDomain* id) {
  const std::vector<ir::IterDomain*> alloc = tv->maybeAllocation();
  const std::vector<ir::Expr*> below = transform::transformsBelow({id});
  for (const ir::Expr* e : below) {
    for (ir::Val* out : e->outputs()) {
      auto* out_id = out->as<ir::IterDomain>();
      LOOM_CHECK(std::find(alloc.begin(), alloc.end(), out_id) == alloc.end(), tv->toString(),
                 ": its allocation domain splits the local part of a sharded dim (",
                 out_id->toString(),
                 "); give the allocation the DID split and the logical IDs only");
    }
  }
  transform::removeTransforms(fusion, below);
}

// An iota or RngOp whose output is sharded: its values depend on each element's index in the
// whole tensor, which the local program gets as the device's block of it. Recorded before the
// extents are localized (the global extents), rewritten after (the offsets are multiples of
// the local extents).
struct Block {
  ir::TensorView* tv = nullptr;
  std::vector<ir::Scalar*> global;  ///< per logical dim (reductions skipped)
  /// Per logical dim: the device's position along the mesh axis that shards it (0: unsharded).
  std::vector<int64_t> position;
};

Block blockOf(ir::TensorView* tv, const std::vector<ShardedAxis>& axes, int64_t device) {
  Block b;
  b.tv = tv;
  const std::vector<ir::IterDomain*> ids = ir::TensorDomain::noReductions(tv->logical());
  const ir::DeviceMesh& mesh = tv->deviceMesh();
  // A device outside the mesh never computes the tensor (segmenter/device_program.h): any
  // member's block will do.
  const bool member = mesh.indexOf(device) >= 0;
  for (ir::IterDomain* id : ids) {
    b.global.push_back(id->extent());
    int64_t pos = 0;
    for (const ShardedAxis& a : axes) {
      if (a.logical != id) continue;
      // shardedAxes accepts only a logical ID split by its mesh axis size (propagate_shardings
      // rewrote nvFuser's other block forms into it, and refuses strided ones), so the device
      // holds block `pos` of it.
      LOOM_ASSERT(a.did->definition()->isA<ir::Split>() &&
                      a.did->definition()->as<ir::Split>()->outer() == a.did,
                  tv->toString(), " is sharded along ", id->toString(), " by ",
                  a.did->toString(), ", which is not the outer piece of a split of it");
      pos = member ? mesh.coordinate(device, a.type) : 0;
    }
    b.position.push_back(pos);
  }
  return b;
}

// Replaces the definition of b.tv (its extents local now) by one that computes the device's
// block of the whole: index offsets position * local extent, and the global extents.
void drawBlock(ir::Fusion& fusion, const Block& b) {
  ir::Expr* def = b.tv->definition();
  const std::vector<ir::IterDomain*> ids = ir::TensorDomain::noReductions(b.tv->logical());
  std::vector<ir::Scalar*> offsets;
  for (size_t d = 0; d < ids.size(); ++d) {
    offsets.push_back(b.position[d] == 0
                          ? ir::IrBuilder::index(0)
                          : ir::scalar_math::mul(ir::IrBuilder::index(b.position[d]),
                                                 ids[d]->extent()));
  }
  if (auto* iota = def->dynCast<ir::IotaOp>()) {
    ir::Scalar* start = iota->start();
    ir::Scalar* step = iota->step();
    fusion.removeExpr(def);
    ir::IrBuilder::create<ir::IotaOp>(b.tv, start, step, offsets.at(0));
    return;
  }
  auto* rng = def->as<ir::RngOp>();
  const ir::RngOpType type = rng->rngType();
  ir::Scalar* seed = rng->seed();
  ir::Scalar* offset = rng->offset();
  ir::Scalar* p0 = rng->param0();
  ir::Scalar* p1 = rng->param1();
  fusion.removeExpr(def);
  ir::IrBuilder::create<ir::RngOp>(b.tv, type, seed, offset, p0, p1, std::move(offsets),
                                   b.global);
}

}  // namespace

bool localizeShardings(ir::Fusion& fusion, int64_t device) {
  if (!isMultidevice(fusion)) return false;
  ir::FusionGuard guard(&fusion);
  struct Entry {
    ir::TensorView* tv;
    std::vector<ShardedAxis> axes;
  };
  std::vector<Entry> entries;
  std::vector<Block> blocks;
  for (ir::TensorView* tv : fusion.allTvs()) {
    if (!tv->hasDeviceMesh()) continue;
    std::vector<ShardedAxis> axes = shardedAxes(tv);
    if (!axes.empty() && tv->definition() != nullptr &&
        (tv->definition()->isA<ir::IotaOp>() || tv->definition()->isA<ir::RngOp>())) {
      blocks.push_back(blockOf(tv, axes, device));
    }
    if (const auto* scan =
            tv->definition() != nullptr ? tv->definition()->dynCast<ir::ScanOp>() : nullptr) {
      for (const ShardedAxis& a : axes) {
        // Each device would scan its own shard from the identity.
        LOOM_CHECK(a.logical != scan->scanId(), scan->toString(), ": a ", scan->opName(),
                   " along a sharded dim (", a.logical->toString(),
                   ") is not supported (each device would scan its shard from the start); "
                   "scan unsharded, or shard another dim");
      }
    }
    entries.push_back({tv, std::move(axes)});
  }
  Localizer localizer;
  for (Entry& e : entries) {
    ir::TensorView* tv = e.tv;
    // The sharded logical ID and, through a reshape, the root IDs its blocks come from.
    for (const ShardedAxis& a : e.axes) {
      // Walk first, then localize: the walk checks the extents it passes.
      std::vector<ir::IterDomain*> path;
      (void)shardedPreimage(tv, a.logical, a.devices,
                            [&](ir::IterDomain* id) { path.push_back(id); });
      for (ir::IterDomain* id : path) localizer.localize(id, a.devices);
    }
    // The allocation without the DID splits: each local part back to its logical ID.
    const std::vector<ir::IterDomain*> alloc = tv->maybeAllocation();
    const ir::Contiguity flags = tv->contiguity();
    std::vector<ir::IterDomain*> ids;
    ir::Contiguity contiguity;
    bool had_did = false;
    for (size_t k = 0; k < alloc.size(); ++k) {
      ir::IterDomain* id = alloc[k];
      if (id->isDeviceDim()) {
        had_did = true;
        continue;
      }
      for (const ShardedAxis& a : e.axes) {
        if (a.did->definition()->as<ir::Split>()->inner() == id) id = a.logical;
      }
      ids.push_back(id);
      contiguity.push_back(k < flags.size() ? flags[k] : std::nullopt);
    }
    if (had_did) tv->setAllocationDomain(std::move(ids), std::move(contiguity));
    tv->domain()->setLoopDomain(tv->logical());
    for (const ShardedAxis& a : e.axes) {
      auto* split = a.did->definition()->as<ir::Split>();
      ir::IterDomain* inner = split->inner();
      removeTransformsBelow(fusion, tv, inner);
      fusion.removeExpr(split);
      fusion.removeVal(a.did);
      fusion.removeVal(inner);
    }
    tv->setDeviceMesh(ir::DeviceMesh());
  }
  for (const Block& b : blocks) drawBlock(fusion, b);
  return true;
}

}  // namespace loom::multidevice
