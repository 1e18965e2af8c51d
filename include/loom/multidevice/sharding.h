// SPDX-License-Identifier: Apache-2.0
// Shardings: which logical IDs of a tensor are split over which axes of its device mesh, and the
// pre-segmentation passes that spread them over a fusion.
//
// A tensor is sharded along DID type P (DIDx/y/z) when one of its loop IDs is P-parallel. The
// passes work with one form of it: that loop ID is the outer output of an outer split of a logical
// ID by the size of P's mesh axis (the buffer then holds a contiguous block of that dim on each
// device). The logical domain stays global. nvFuser's other block forms (a logical DID of the
// mesh's extent; an inner split whose outer piece is the DID, and splits of outer pieces) are
// rewritten into it by propagate_shardings; a DID on an inner piece (strided rows) is refused.
//
//   x : [b, s, e] mesh=[0, 1, 2, 3]      loop [i3{4, DIDx}, i0{b}, i4{s/4}, i2{e}]
//                                        i3, i4 = outer_split(i1, 4)
//
// Passes (segmenter/presegment.h runs them, in this order with the others):
//   propagate_shardings  nvFuser's other block forms become the outer split (a symbolic extent
//                        whose blocks need a certain size leaves an ir::ExtentRequirement); then
//                        a tensor without a mesh takes the mesh and the DID splits of a sharded
//                        producer (else a sharded consumer), mapped through the op's logical
//                        map; tensors the user gave a mesh are never changed
//   decompose_reshardings (communication.h) a producer and consumer sharded differently need a
//                        communication: each such expression becomes local compute plus one
//   finalize_shardings   tensors created by later passes are sharded like their neighbours;
//                        DID loop IDs move outermost and the allocation domain carries the DID
//                        split (the buffer is the local shard)
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "loom/ir/fusion.h"
#include "loom/ir/tensor_view.h"
#include "loom/tensor/tensor.h"

namespace loom::ir {
class Split;
}  // namespace loom::ir

namespace loom::multidevice {

/// One DID-parallel loop ID of a tensor and the logical ID it shards.
struct ShardedAxis {
  ir::ParallelType type = ir::ParallelType::DIDx;
  ir::IterDomain* did = nullptr;      ///< the DID loop ID (the outer piece of its split)
  ir::IterDomain* logical = nullptr;  ///< the logical ID it splits
  int64_t devices = 1;                ///< the mesh size along `type` (the split factor)
};

/// The sharded axes of `tv` (in loop order). UserError naming the tensor when its sharding is none
/// of the block forms above: a DID loop ID without a mesh or without a mesh axis of its type, two
/// loop IDs on one DID type, a DID ID reached through an inner piece or a merge, two mesh axes on
/// one dim, an outer split by another factor than its mesh axis size, a piece on the mesh whose
/// constant extent is not the mesh size, a constant split that does not divide its input, or a
/// constant sharded extent the mesh size does not divide.
std::vector<ShardedAxis> shardedAxes(const ir::TensorView* tv);

/// How messages name a split: "split(i0{8}, 4)" (inner) or "outer_split(i0{8}, 2)".
std::string splitText(const ir::Split* split);

/// The sharded axis of `tv` along `type`, or nullptr.
const ShardedAxis* findAxis(const std::vector<ShardedAxis>& axes, ir::ParallelType type);

/// The logical ID of `tv` whose outer split by `devices` holds the same blocks of data as an
/// outer split of its root-or-logical ID `id`: `id` itself when logical; through a reshape's
/// root -> logical transforms, the outer output of a split of `id` (when `devices` divides it) or
/// the output of a merge whose outer input is `id`. nullptr when there is none.
ir::IterDomain* shardedImage(const ir::TensorView* tv, ir::IterDomain* id, int64_t devices);

/// The inverse walk, from the logical ID `id` of `tv` back to its root (or logical) ID, calling
/// `visit` on every ID on the way (`id` first); returns the root ID, or nullptr when the
/// transforms between them do not keep the blocks (then the walk stops there).
ir::IterDomain* shardedPreimage(const ir::TensorView* tv, ir::IterDomain* id, int64_t devices,
                                const std::function<void(ir::IterDomain*)>& visit = {});

/// True when some tensor of the fusion has a device mesh.
bool isMultidevice(const ir::Fusion& fusion);
/// True when `device` holds (a shard of) `tv`: `tv` has no mesh or `device` is in it.
inline bool holds(const ir::TensorView* tv, int64_t device) {
  return !tv->hasDeviceMesh() || tv->deviceMesh().indexOf(device) >= 0;
}

/// Gives `target` (no mesh yet, or one `ref` shares) the mesh of `ref` and each of its DID splits
/// that maps onto a logical ID of `target` through their op (`ref` is its producer, or its
/// consumer), for the DID types `target` does not have yet; DID loop IDs go outermost. A reduced,
/// broadcast or unmatched ID stays unsharded.
void shardLike(ir::TensorView* target, const ir::TensorView* ref, bool ref_is_producer);

/// Gives `target` (no mesh yet) `ref`'s mesh and DID splits, each on the logical dim (reductions
/// skipped) at the position it has in `ref`: for tensors of one shape that are not producer and
/// consumer (a replacement of `ref`, a stand-in for it).
void shardAtSamePositions(ir::TensorView* target, const ir::TensorView* ref);
/// Pass propagate_shardings (see the file comment): checks every annotation, then
/// shardNewTensors; returns whether it changed the fusion.
bool propagateShardings(ir::Fusion& fusion);
/// Tensors without a mesh in a multidevice fusion take their neighbours' shardings (forward from
/// producers, then backward from consumers). propagate_shardings does it for the whole fusion;
/// the passes after it that make tensors (reduction_inits, decompose_reshardings, and
/// finalize_shardings for those of the passes between) end with it for theirs. Returns whether
/// it changed the fusion.
bool shardNewTensors(ir::Fusion& fusion);

/// UserError for the first expression whose producer and consumer are sharded differently (see
/// reshardingReason); changes nothing. For callers that want a fusion without communications.
void checkNoResharding(const ir::Fusion& fusion);

/// Why `e` needs a communication ("T1 is sharded on DIDx along i3 but T2 reduces it: an
/// Allreduce ..."), or "" when every producer/consumer pair of `e` is sharded alike.
std::string reshardingReason(const ir::Expr* e);

/// Pass finalize_shardings (see the file comment); returns whether it changed the fusion.
bool finalizeShardings(ir::Fusion& fusion);

/// Pass localize_shards (after finalize_shardings, when a device runs the fusion): the program
/// every device of the mesh runs on its shards. Every DID split is removed (loop and allocation go
/// back to the logical IDs, the meshes are cleared) and each sharded logical ID holds the local
/// extent: a constant N becomes N / devices, a symbolic n the scalar n / devices (binding a local
/// tensor of size L gives n = L * devices, so n keeps meaning the whole where a communication's
/// other side reads it).
/// Every device of a mesh runs the same program on its own data; the communications
/// decompose_reshardings left pair one device's view with the whole, and the runtime runs them.
/// An iota or random numbers (RngOp) sharded along a dim compute `device`'s block of the whole:
/// they get index offsets (its position along the mesh axis times the local extent) and, for an
/// RngOp, the global extents, so each device's shard equals the matching slice of the unsharded
/// result. Tensors on meshes the running device is not in are localized like those of any
/// member (the runtime gives a device only the tensors it holds: segmenter/device_program.h).
bool localizeShardings(ir::Fusion& fusion, int64_t device);

/// The shard of the global tensor `global` (shaped like `tv`'s logical domain without
/// reductions) that `device` holds under `tv`'s sharding, read from the split tree of each DID
/// loop ID whatever its form (an outer or inner split, a split of a split, a logical DID of one
/// element per device, two mesh axes on one dim): a view where the device's indices along each
/// dim form one block, else a gathered copy (an inner split's strided rows); the whole tensor
/// when `tv` is not sharded. A tensor without a mesh of its own in a fusion with meshes is cut
/// as propagate_shardings shards it when the fusion runs (an unannotated output of a sharded
/// linear: its shard of the output features), as nvFuser's tests expect. UserError when the
/// device is not in `tv`'s mesh or the shapes disagree.
Tensor shardTensor(const Tensor& global, const ir::TensorView* tv, int64_t device);

/// The logical dim (reductions skipped) of `tv` that DID type `type` shards, or -1 (nvFuser's
/// Sharding::axisShardedOn); a tensor without a mesh of its own in a fusion with meshes as
/// propagate_shardings shards it (as shardTensor reads it).
int64_t shardedLogicalAxis(const ir::TensorView* tv, ir::ParallelType type);
/// The block of `global` along `dim` (negative counts from the end) that `device` holds when
/// `dim` is sharded over the mesh axis `axis` (DIDx/y/z) of `mesh`: a view. UserError for a
/// device outside the mesh or a size the axis does not divide.
Tensor shardTensor(const Tensor& global, int64_t dim, const ir::DeviceMesh& mesh, int64_t device,
                   ir::ParallelType axis = ir::ParallelType::DIDx);

/// The global tensor put back together from `shards` (one per device of `tv`'s mesh, in mesh
/// order): a new contiguous host tensor. Devices that hold the same block (replicated along
/// an axis `tv` is not sharded on) must agree; the first one is taken.
Tensor unshardTensor(const std::vector<Tensor>& shards, const ir::TensorView* tv);

}  // namespace loom::multidevice
