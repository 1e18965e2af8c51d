// SPDX-License-Identifier: Apache-2.0
// Resharding detection (sharding.h): an expression whose producer and consumer are sharded
// differently moves data between devices; reshardingReason names the communication it needs
// (decompose_reshardings, communication.h, turns it into one), checkNoResharding refuses it.
#include <algorithm>
#include <sstream>

#include "loom/ir/exprs.h"
#include "loom/ir/logical_map.h"
#include "loom/ir/scalar.h"
#include "loom/ir/transforms.h"
#include "loom/multidevice/sharding.h"
#include "loom/support/error.h"
#include "multidevice/contraction.h"

namespace loom::multidevice {

namespace {

std::string pairReason(const ir::Expr* e, const ir::TensorView* p, const ir::TensorView* c) {
  std::ostringstream os;
  const std::string where = "'" + e->toString() + "'";
  if (p->hasDeviceMesh() && c->hasDeviceMesh() && !(p->deviceMesh() == c->deviceMesh())) {
    os << where << " moves " << p->toString() << " from device mesh " << p->deviceMesh()
       << " to " << c->toString() << " on device mesh " << c->deviceMesh()
       << ": that needs a communication between the meshes";
    return os.str();
  }
  const std::vector<ShardedAxis> p_axes = shardedAxes(p);
  const std::vector<ShardedAxis> c_axes = shardedAxes(c);
  const auto p2c = ir::producerToConsumerMap(p, c);
  for (const ShardedAxis& a : p_axes) {
    if (a.devices == 1) continue;  // one device holds it all: nothing moves
    const std::string_view name = ir::parallelTypeName(a.type);
    const ShardedAxis* ca = findAxis(c_axes, a.type);
    auto it = p2c.find(a.logical);
    // The same blocks on the same axis: alike, even when the consumer's root ID is a reduction
    // whose per-device split survives (the partial of a decomposed sharded reduction).
    if (it != p2c.end() && ca != nullptr && !ca->logical->isReduction() &&
        shardedImage(c, it->second, a.devices) == ca->logical) {
      continue;
    }
    if (it != p2c.end() && it->second->isReduction()) {
      os << where << " reduces dim " << a.logical->toString() << " of " << p->toString()
         << ", which is sharded on " << name << ": that needs "
         << (ca != nullptr ? "a ReduceScatter" : "an Allreduce") << " of the partial results";
      return os.str();
    }
    ir::IterDomain* image = it == p2c.end() ? nullptr : shardedImage(c, it->second, a.devices);
    if (ca == nullptr) {
      os << where << " reads " << p->toString() << ", sharded on " << name << " along "
         << a.logical->toString() << ", into " << c->toString() << ", which is not sharded on "
         << name << ": that needs an Allgather";
      return os.str();
    }
    if (image != ca->logical) {
      os << where << " reads " << p->toString() << ", sharded on " << name << " along "
         << a.logical->toString() << ", into " << c->toString() << ", sharded on " << name
         << " along " << ca->logical->toString()
         << (image == nullptr ? " (not the same blocks of data)" : " (another dim)")
         << ": that needs an AllToAll";
      return os.str();
    }
  }
  const auto c2p = ir::consumerToProducerMap(p, c);
  for (const ShardedAxis& ca : c_axes) {
    if (ca.devices == 1 || findAxis(p_axes, ca.type) != nullptr) continue;  // compared above
    // The producer dim the consumer's sharded dim reads (through a reshape's root).
    ir::IterDomain* id = shardedPreimage(c, ca.logical, ca.devices);
    auto it = id == nullptr ? c2p.end() : c2p.find(id);
    if (it != c2p.end() && it->second->isBroadcast()) continue;  // no data along that dim
    // A matmul's operand without the output's sharded dim (x of a column-parallel linear, whose
    // output features come from w): every device reads all of it, which it holds.
    if (id != nullptr && it == c2p.end() &&
        (e->isA<ir::MatmulOp>() || e->isA<ir::LinearOp>())) {
      continue;
    }
    os << where << " reads " << p->toString() << ", which is not sharded on "
       << ir::parallelTypeName(ca.type) << ", into " << c->toString() << ", sharded on "
       << ir::parallelTypeName(ca.type) << " along " << ca.logical->toString()
       << ": that needs a Scatter";
    return os.str();
  }
  return "";
}

}  // namespace

std::string reshardingReason(const ir::Expr* e) {
  // A sharded contracted dim maps to no dim of the output, so the pairs below would call it an
  // Allgather; it is a sum over that dim.
  if (std::string why = contractionReason(e); !why.empty()) return why;
  for (ir::Val* in : e->inputs()) {
    auto* p = in->dynCast<ir::TensorView>();
    if (p == nullptr) continue;
    for (ir::Val* out : e->outputs()) {
      auto* c = out->dynCast<ir::TensorView>();
      if (c == nullptr) continue;
      std::string why = pairReason(e, p, c);
      if (!why.empty()) return why;
    }
  }
  return "";
}

void checkNoResharding(const ir::Fusion& fusion) {
  if (!isMultidevice(fusion)) return;
  for (const ir::Expr* e : fusion.exprs()) {
    std::string why = reshardingReason(e);
    LOOM_CHECK(why.empty(), why, ". This check asks for a fusion without communications: shard "
                                 "producer and consumer alike");
  }
}

}  // namespace loom::multidevice
