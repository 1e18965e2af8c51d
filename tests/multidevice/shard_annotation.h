// SPDX-License-Identifier: Apache-2.0
// The user's sharding annotation, as the multidevice tests write it: an outer split of one axis
// by the mesh's size along a parallel type, the outer piece on that type.
#pragma once

#include <cstdint>

#include "loom/ir/ir.h"

namespace loom::multidevice {

/// Shards loop axis `axis` of `tv` (an unsharded axis: its logical position when nothing before
/// it was split) over `mesh` on `type`.
inline void shard(ir::TensorView* tv, int64_t axis, const ir::DeviceMesh& mesh,
                  ir::ParallelType type = ir::ParallelType::DIDx) {
  tv->setDeviceMesh(mesh);
  tv->outerSplit(axis, mesh.size(type));
  tv->axis(axis)->parallelize(type);
}

/// The unit tests' form: on `type`, over four devices unless `mesh` says otherwise.
inline void shard(ir::TensorView* tv, int64_t axis, ir::ParallelType type = ir::ParallelType::DIDx,
                  const ir::DeviceMesh& mesh = ir::DeviceMesh::arange(4)) {
  shard(tv, axis, mesh, type);
}

}  // namespace loom::multidevice
