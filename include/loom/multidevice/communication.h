// SPDX-License-Identifier: Apache-2.0
// Communication: what a resharding expression moves between devices, decided from its producer's
// and consumer's shardings and meshes (before localize_shards clears them), and run by the
// runtime in a segment of its own.
//
//   One mesh (every device of it runs the same program; the team of a communication is the
//   devices that share the running device's coordinates on every axis but the communicating one):
//   T1 = set(T0)    T0 sharded on DIDx along dim 1, T1 replicated   -> Allgather along dim 1
//                   ... T1 sharded on DIDx along dim 0 instead      -> AllToAll
//                   T0 replicated, T1 sharded                       -> Scatter (a local slice)
//   T2 = sum(T1)    T1's dim 1 sharded on DIDx (1 element per device), T2 replicated
//                                                                   -> Allreduce (sum)
//                   ... T2 sharded on DIDx along another dim j      -> ReduceScatter along j
//
//   From mesh P (the producer's) to mesh C (the consumer's), e.g. pipeline stages; the team is
//   every device that sends or receives, and a device of neither mesh takes no part:
//   T1 = set(T0)    sharded alike (or both replicated), P and C of one shape
//                                    -> SendRecv: P[i] sends its block to C[i]
//                   both replicated, P and C of different sizes
//                                    -> Broadcast from P's first device
//                   T0 sharded, T1 replicated on one device -> Gather into it
//                   T0 replicated, T1 sharded on a 1-D mesh -> Scatter from P's first device
//   T2 = sum(T1)    T1's dim sharded (1 element per device), T2 on one device
//                                    -> Reduce into it
//
// Between meshes every extent must be a constant: a receiving device may hold no tensor to
// read the sizes from.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "loom/ir/device_mesh.h"
#include "loom/ir/fusion.h"
#include "loom/multidevice/communicator.h"

namespace loom::multidevice {

/// Scatter within one mesh: a replicated tensor read as shards; every device already holds the
/// whole, so it takes its block locally (no collective is issued). Between meshes it is a real
/// scatter from the root.
enum class CommunicationType : uint8_t {
  Allgather,
  Allreduce,
  ReduceScatter,
  AllToAll,
  Scatter,
  Broadcast,
  SendRecv,
  Gather,
  Reduce,
};
/// "Allgather", "Allreduce", ..., "Reduce".
std::string_view communicationTypeName(CommunicationType t);

struct Communication {
  CommunicationType type = CommunicationType::Allgather;
  ir::DeviceMesh mesh;       ///< the producer's mesh (the senders)
  ir::DeviceMesh receivers;  ///< the consumer's mesh (equal to `mesh` unless data moves between meshes)
  ir::ParallelType axis = ir::ParallelType::DIDx;  ///< the mesh axis whose teams communicate
  /// Allgather and AllToAll: the consumer's logical dim (reductions skipped) the blocks are
  /// concatenated along. ReduceScatter: the consumer's dim the result is scattered along.
  int64_t dim = -1;
  /// AllToAll and Scatter: the consumer's dim each device keeps one block of.
  int64_t splitDim = -1;
  /// Allreduce and ReduceScatter: the producer's dim (reductions skipped) of one element per
  /// device that is reduced, and the reduction.
  int64_t reducedDim = -1;
  ReduceOp op = ReduceOp::Sum;
  /// Between meshes: Broadcast and Scatter, the sender (the producer mesh's first device);
  /// Gather and Reduce, the receiver (the consumer mesh's only device). -1 otherwise.
  int64_t root = -1;

  /// True when the data moves from one mesh to another.
  bool betweenMeshes() const { return !(mesh == receivers); }
  /// True when `device` sends data (between meshes; within one mesh every member does).
  bool sends(int64_t device) const;
  /// True when `device` gets the consumer tensor.
  bool receives(int64_t device) const;
  /// True when `device` takes part at all (then it runs the communication).
  bool involves(int64_t device) const { return sends(device) || receives(device); }
  /// The devices `device` communicates with, itself included: within one mesh its team along
  /// `axis` (in mesh order); between meshes every device that sends or receives (the
  /// producer's mesh in order, then the receivers not in it; for Broadcast and Scatter the
  /// consumer's mesh, then the root when it is not a receiver). Empty when `device` takes no
  /// part.
  Team team(int64_t device) const;
  /// "Allgather over DIDx of mesh [0, 1] along dim 1".
  std::string toString() const;
  bool operator==(const Communication&) const = default;
};

/// The communication `e` needs when it is a pure communication (a set, or a reduction of one
/// DID-sharded dim whose local extent is 1; decompose_reshardings leaves only these); nullopt
/// when `e` reshards nothing. UserError naming `e` and what
/// is missing when it reshards in a way Loom cannot run (yet).
std::optional<Communication> communicationOf(const ir::Expr* e);

/// True when some expression of `fusion` reshards (its communication is still to run).
bool hasCommunication(const ir::Fusion& fusion);

/// Pass decompose_reshardings (after propagate_shardings): every expression that both computes
/// and reshards becomes local compute plus a pure communication:
///  - a reduction over a sharded dim with several elements per device becomes a local partial
///    reduction of each device's block (x viewed as [.., d, s/d, ..], reduced over s/d, sharded
///    along d: one partial per device) and the reduction of the partials, an Allreduce (or a
///    ReduceScatter when the result is sharded along another dim on that axis); with one
///    element per device the reduction is the communication as it is;
///  - a Welford over a sharded dim becomes each device's Welford of its block, three Allgathers
///    (or Gathers, into another mesh) of the (avg, m2, n) partials and their exact local combine
///    (ops::welfordCombine), then a Scatter (a local slice) of each result the user sharded;
///  - any other resharding expression (a pointwise op, a reshape, ...) reads a `set` copy of
///    each input, sharded like its output and on its mesh: the copy is the communication (an
///    Allgather, an AllToAll, a Scatter, or a move between meshes). A reduction whose input is
///    on another mesh reads such a copy too.
/// Then every resharding expression must be one Loom runs (communicationOf), else a UserError
/// naming it and what Loom runs instead: any symbolic size between meshes, two mesh axes
/// changed at once, and moves between meshes other
/// than those listed in the file comment. Returns whether it changed the fusion.
bool decomposeReshardings(ir::Fusion& fusion);

}  // namespace loom::multidevice
