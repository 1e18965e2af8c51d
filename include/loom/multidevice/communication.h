// SPDX-License-Identifier: Apache-2.0
// Communication: what a resharding expression moves between devices, decided from its producer's
// and consumer's shardings (before localize_shards clears them), and run by the runtime in a
// segment of its own.
//
//   T1 = set(T0)    T0 sharded on DIDx along dim 1, T1 replicated   -> Allgather along dim 1
//                   ... T1 sharded on DIDx along dim 0 instead      -> AllToAll
//                   T0 replicated, T1 sharded                       -> Scatter (a local slice)
//   T2 = sum(T1)    T1's dim 1 sharded on DIDx (1 element per device), T2 replicated
//                                                                   -> Allreduce (sum)
//                   ... T2 sharded on DIDx along another dim j      -> ReduceScatter along j
//
// Every device runs the same program: the team of a communication is the devices of the mesh
// that share the running device's coordinates on every axis but the communicating one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "loom/ir/device_mesh.h"
#include "loom/ir/fusion.h"
#include "loom/multidevice/communicator.h"

namespace loom::multidevice {

/// Scatter: a replicated tensor read as shards; every device already holds the whole, so it
/// takes its block locally (no collective is issued).
enum class CommunicationType : uint8_t { Allgather, Allreduce, ReduceScatter, AllToAll, Scatter };
/// "Allgather", "Allreduce", "ReduceScatter", "AllToAll", "Scatter".
std::string_view communicationTypeName(CommunicationType t);

struct Communication {
  CommunicationType type = CommunicationType::Allgather;
  ir::DeviceMesh mesh;                         ///< the producer's and consumer's mesh
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

  /// The devices `device` communicates with (in mesh order), itself included.
  Team team(int64_t device) const { return mesh.team(device, axis); }
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
///    of the (avg, m2, n) partials and their exact local combine (ops::welfordCombine);
///  - any other resharding expression (a pointwise op, a reshape, ...) reads a `set` copy of
///    each input, sharded like its output: the copy is the communication (an Allgather, an
///    AllToAll or a Scatter).
/// Then every resharding expression must be one Loom runs (communicationOf), else a UserError
/// naming it: symbolic sizes along a communicated dim, Broadcast, SendRecv, a Welford over a
/// sharded dim with sharded results, and two mesh axes changed at once are refused for now. Returns whether it changed
/// the fusion.
bool decomposeReshardings(ir::Fusion& fusion);

}  // namespace loom::multidevice
