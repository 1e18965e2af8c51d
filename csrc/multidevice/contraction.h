// SPDX-License-Identifier: Apache-2.0
// A matmul or linear whose contracted dim is sharded (Megatron's row-parallel linear): why it
// needs a communication, and its decomposition into a local partial product per device and a
// sum of the partials (an Allreduce, or a ReduceScatter when the output is sharded).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "loom/ir/fusion.h"
#include "loom/multidevice/sharding.h"

namespace loom::multidevice {

/// The DID on the contracted r{k} of `tv`, the output of a MatmulOp or LinearOp (nvFuser's mark
/// of a row-parallel product: each device's product is a partial sum over its block of k), when
/// its mesh axis has several devices; nullopt otherwise (no DID there, one device, or `tv` is
/// no contraction's output). UserError naming `tv` for a DID on r{k} that is not the outer piece
/// of one outer split of r{k} by the mesh axis's size.
std::optional<ShardedAxis> partialContractionAxis(const ir::TensorView* tv);

/// Why `e`, a MatmulOp or LinearOp whose contracted dim is sharded over several devices (in an
/// operand, or by a DID on its output's r{k}), needs a communication; "" for any other
/// expression. UserError naming the tensors when the sharding is one decompose_reshardings
/// cannot run (a 1-D operand, operands sharded on their contracted dims along different mesh
/// axes or along another than the output's r{k}, operands on different meshes).
std::string contractionReason(const ir::Expr* e);

/// Rewrites `e` (contractionReason non-empty) as each device's partial product of its blocks of
/// the contracted dim, then their sum over the devices (the communication), then the bias:
///
///   out = linear(x, w, bias)        x [.., m, k], w [n, k], both sharded on DIDx along k
///   xp = permute(splitDim(x, k, d))  [d, .., m, k/d]   sharded along d: each device's block
///   wp = permute(splitDim(w, k, d))  [d, k/d, n]       (then broadcast to x's batch rank)
///   partial = matmul(xp, wp)         [d, .., m, n]     sharded along d: local
///   out' = sum(partial, {0}) + bias  an Allreduce (a ReduceScatter when out is sharded on
///                                    DIDx along another dim), the bias added once
///
/// An operand whose contracted dim is not sharded is read through a Scatter (a local slice): one
/// of them when the other is sharded on k, both when only the output's r{k} carries the DID.
/// bf16 and f16 partials are summed in f32 and rounded once, after the bias. Returns the
/// expressions it made whose inputs may still need resharding (the bias's addition).
std::vector<ir::Expr*> decomposeShardedContraction(ir::Fusion& fusion, ir::Expr* e);

}  // namespace loom::multidevice
