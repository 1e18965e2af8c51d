// SPDX-License-Identifier: Apache-2.0
// Communication (communication.h): what a resharding expression moves, and pass
// decompose_reshardings, which leaves only expressions that are one communication.
#include "loom/multidevice/communication.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "loom/ir/exprs.h"
#include "loom/ir/logical_map.h"
#include "loom/ir/scalar.h"
#include "loom/ir/tensor_domain.h"
#include "loom/multidevice/sharding.h"
#include "loom/ops/reduction.h"
#include "loom/ops/shape.h"
#include "loom/support/error.h"
#include "multidevice/contraction.h"

namespace loom::multidevice {

namespace {

// Position of `id` among `tv`'s logical IDs without reductions; -1 when it is not one.
int64_t logicalDim(const ir::TensorView* tv, const ir::IterDomain* id) {
  const std::vector<ir::IterDomain*> ids = ir::TensorDomain::noReductions(tv->logical());
  auto it = std::find(ids.begin(), ids.end(), id);
  return it == ids.end() ? -1 : int64_t(it - ids.begin());
}

std::optional<ReduceOp> reduceOpOf(ir::ReductionOpType t) {
  switch (t) {
    case ir::ReductionOpType::Sum: return ReduceOp::Sum;
    case ir::ReductionOpType::Prod: return ReduceOp::Prod;
    case ir::ReductionOpType::Max: return ReduceOp::Max;
    case ir::ReductionOpType::Min: return ReduceOp::Min;
  }
  return std::nullopt;
}

[[noreturn]] void unsupported(const ir::Expr* e, const std::string& what) {
  LOOM_THROW("'", e->toString(), "' needs a communication Loom cannot run yet: ", what,
             " (", reshardingReason(e), ")");
}

// The sharded axis of `p` that `e` (a reduction producing `c`) reduces, or nullptr.
const ShardedAxis* reducedShardedAxis(const std::vector<ShardedAxis>& p_axes,
                                      const ir::TensorView* p, const ir::TensorView* c) {
  const auto p2c = ir::producerToConsumerMap(p, c);
  const std::vector<ShardedAxis> c_axes = shardedAxes(c);
  for (const ShardedAxis& a : p_axes) {
    if (a.devices == 1) continue;  // one device holds it all
    auto it = p2c.find(a.logical);
    if (it == p2c.end() || !it->second->isReduction()) continue;
    // A partial keeps the per-device blocks sharded: that reduction is local.
    const ShardedAxis* ca = findAxis(c_axes, a.type);
    if (ca != nullptr && !ca->logical->isReduction() &&
        shardedImage(c, it->second, a.devices) == ca->logical) {
      continue;
    }
    return &a;
  }
  return nullptr;
}

// The other DID types must shard `p` and `c` alike: one communication changes one mesh axis.
void requireOthersAlike(const ir::Expr* e, const ir::TensorView* p, const ir::TensorView* c,
                        ir::ParallelType changed) {
  const std::vector<ShardedAxis> p_axes = shardedAxes(p);
  const std::vector<ShardedAxis> c_axes = shardedAxes(c);
  const auto p2c = ir::producerToConsumerMap(p, c);
  for (ir::ParallelType t : {ir::ParallelType::DIDx, ir::ParallelType::DIDy,
                             ir::ParallelType::DIDz}) {
    if (t == changed) continue;
    const ShardedAxis* pa = findAxis(p_axes, t);
    const ShardedAxis* ca = findAxis(c_axes, t);
    if (pa == nullptr && ca == nullptr) continue;
    bool alike = pa != nullptr && ca != nullptr;
    if (alike) {
      auto it = p2c.find(pa->logical);
      alike = it != p2c.end() && shardedImage(c, it->second, pa->devices) == ca->logical;
    }
    if (!alike) unsupported(e, "it changes the sharding along two mesh axes");
  }
}


// Positions of `p`'s and `c`'s logical dims agree (a set keeps them in place).
bool sameDim(const ir::TensorView* p, const ir::IterDomain* p_id, const ir::TensorView* c,
             const ir::IterDomain* c_id) {
  const int64_t k = logicalDim(p, p_id);
  return k >= 0 && k == logicalDim(c, c_id);
}

// The sharded axes of `tv` over more than one device (one device holds it all).
std::vector<ShardedAxis> splitAxes(const ir::TensorView* tv) {
  std::vector<ShardedAxis> out;
  for (const ShardedAxis& a : shardedAxes(tv)) {
    if (a.devices > 1) out.push_back(a);
  }
  return out;
}

// True when the outputs of one expression are on one mesh and sharded along the same dims.
bool outputsAlike(const std::vector<ir::TensorView*>& outs) {
  auto layout = [](const ir::TensorView* tv) {
    std::vector<std::pair<int64_t, int64_t>> out;  // (DID type, logical dim)
    for (const ShardedAxis& a : splitAxes(tv)) out.emplace_back(int64_t(a.type), logicalDim(tv, a.logical));
    std::sort(out.begin(), out.end());
    return out;
  };
  for (const ir::TensorView* tv : outs) {
    if (!(tv->deviceMesh() == outs.front()->deviceMesh()) || layout(tv) != layout(outs.front())) {
      return false;
    }
  }
  return true;
}

// `e` moves data from p's mesh to c's (file comment of communication.h).
Communication moveBetweenMeshes(const ir::Expr* e, const ir::TensorView* p, const ir::TensorView* c) {
  Communication comm;
  comm.mesh = p->deviceMesh();
  comm.receivers = c->deviceMesh();
  for (ir::IterDomain* id : ir::TensorDomain::noReductions(p->logical())) {
    if (!id->extent()->constInt().has_value()) {
      unsupported(e, "a move between device meshes of a tensor with a symbolic size (" +
                         id->toString() + "): a receiving device holds nothing to read it from");
    }
  }
  const std::vector<ShardedAxis> p_axes = splitAxes(p);
  const std::vector<ShardedAxis> c_axes = splitAxes(c);
  const ir::DeviceMesh& from = comm.mesh;
  const ir::DeviceMesh& to = comm.receivers;
  if (const auto* r = dynamic_cast<const ir::ReductionOp*>(e)) {
    const ShardedAxis* a = reducedShardedAxis(shardedAxes(p), p, c);
    if (a == nullptr) unsupported(e, "a reduction between meshes that reduces no sharded dim");
    auto extent = a->logical->extent()->constInt();
    if (*extent != a->devices || !r->hasIdentityInit()) {
      unsupported(e, "a reduction between meshes that is not a reduction of one partial per "
                     "device");
    }
    if (to.size() != 1 || !c_axes.empty() || p_axes.size() != 1 || from.size() != a->devices) {
      unsupported(e, "a reduction between meshes other than one of partials sharded over "
                     "every device of one mesh into a single device (a Reduce); reduce into one "
                     "device, then move the result");
    }
    comm.type = CommunicationType::Reduce;
    comm.axis = a->type;
    comm.root = to.devices().front();
    comm.reducedDim = logicalDim(p, a->logical);
    comm.op = *reduceOpOf(r->opType());
    return comm;
  }
  if (dynamic_cast<const ir::LoadStoreOp*>(e) == nullptr) {
    unsupported(e, "only a set or a reduction of partials moves data between meshes");
  }
  const auto p2c = ir::producerToConsumerMap(p, c);
  auto alike = [&] {
    if (p_axes.size() != c_axes.size() || !(from.shape() == to.shape())) return false;
    for (const ShardedAxis& a : p_axes) {
      const ShardedAxis* ca = findAxis(c_axes, a.type);
      auto it = p2c.find(a.logical);
      if (ca == nullptr || it == p2c.end() || shardedImage(c, it->second, a.devices) != ca->logical ||
          !sameDim(p, a.logical, c, ca->logical)) {
        return false;
      }
    }
    return true;
  };
  if (alike()) {
    comm.type = CommunicationType::SendRecv;
    return comm;
  }
  if (p_axes.empty() && c_axes.empty()) {
    comm.type = CommunicationType::Broadcast;
    comm.root = from.devices().front();
    return comm;
  }
  if (c_axes.empty() && p_axes.size() == 1 && to.size() == 1 &&
      from.size() == p_axes.front().devices) {
    const ShardedAxis& a = p_axes.front();
    auto it = p2c.find(a.logical);
    if (it == p2c.end() || !sameDim(p, a.logical, c, it->second)) {
      unsupported(e, "a Gather into a reshaped or permuted output");
    }
    comm.type = CommunicationType::Gather;
    comm.axis = a.type;
    comm.root = to.devices().front();
    comm.dim = logicalDim(c, it->second);
    return comm;
  }
  if (p_axes.empty() && c_axes.size() == 1 && to.size() == c_axes.front().devices) {
    const ShardedAxis& ca = c_axes.front();
    const auto c2p = ir::consumerToProducerMap(p, c);
    auto it = c2p.find(ca.logical);
    if (it == c2p.end() || !sameDim(p, it->second, c, ca.logical)) {
      unsupported(e, "a Scatter into a reshaped or permuted output");
    }
    comm.type = CommunicationType::Scatter;
    comm.axis = ca.type;
    comm.root = from.devices().front();
    comm.splitDim = logicalDim(c, ca.logical);
    return comm;
  }
  unsupported(e, "a move between meshes other than a SendRecv (alike shardings, meshes of one "
                 "shape), a Broadcast (replicated on both), a Gather of the shards of a whole "
                 "mesh into one device, or a Scatter from a replicated tensor onto a 1-D mesh; "
                 "move the data in two steps");
}
}  // namespace

std::string_view communicationTypeName(CommunicationType t) {
  switch (t) {
    case CommunicationType::Allgather: return "Allgather";
    case CommunicationType::Allreduce: return "Allreduce";
    case CommunicationType::ReduceScatter: return "ReduceScatter";
    case CommunicationType::AllToAll: return "AllToAll";
    case CommunicationType::Scatter: return "Scatter";
    case CommunicationType::Broadcast: return "Broadcast";
    case CommunicationType::SendRecv: return "SendRecv";
    case CommunicationType::Gather: return "Gather";
    case CommunicationType::Reduce: return "Reduce";
  }
  LOOM_UNREACHABLE();
}

bool Communication::sends(int64_t device) const {
  if (!betweenMeshes()) return mesh.indexOf(device) >= 0;
  switch (type) {
    case CommunicationType::Broadcast:
    case CommunicationType::Scatter: return device == root;
    default: return mesh.indexOf(device) >= 0;
  }
}

bool Communication::receives(int64_t device) const { return receivers.indexOf(device) >= 0; }

Team Communication::team(int64_t device) const {
  if (!betweenMeshes()) return mesh.team(device, axis);
  if (!involves(device)) return {};
  // The same list on every member: the senders' order decides a Gather's blocks, the
  // receivers' a Scatter's.
  const bool from_root =
      type == CommunicationType::Broadcast || type == CommunicationType::Scatter;
  const ir::DeviceMesh& first = from_root ? receivers : mesh;
  Team out = first.devices();
  auto add = [&](int64_t d) {
    if (std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
  };
  if (from_root) {
    add(root);
  } else {
    for (int64_t d : receivers.devices()) add(d);
  }
  return out;
}

std::string Communication::toString() const {
  std::ostringstream os;
  os << communicationTypeName(type);
  if (type == CommunicationType::Allreduce || type == CommunicationType::ReduceScatter) {
    os << " (" << reduceOpName(op) << ")";
  }
  if (betweenMeshes()) {
    os << " from mesh " << mesh << " to mesh " << receivers;
    if (root >= 0) os << ", root " << root;
  } else {
    os << " over " << ir::parallelTypeName(axis) << " of mesh " << mesh;
  }
  if (reducedDim >= 0) os << ", reducing dim " << reducedDim;
  if (dim >= 0) {
    os << (type == CommunicationType::ReduceScatter ? ", scattered along dim " : ", gathered along dim ")
       << dim;
  }
  if (splitDim >= 0) os << ", split along dim " << splitDim;
  return os.str();
}

std::optional<Communication> communicationOf(const ir::Expr* e) {
  if (reshardingReason(e).empty()) return std::nullopt;
  std::vector<ir::TensorView*> ins, outs;
  for (ir::Val* v : e->inputs()) {
    if (auto* tv = v->dynCast<ir::TensorView>()) ins.push_back(tv);
  }
  for (ir::Val* v : e->outputs()) {
    if (auto* tv = v->dynCast<ir::TensorView>()) outs.push_back(tv);
  }
  if (ins.size() != 1 || outs.size() != 1) {
    unsupported(e, "a communication reads one tensor and writes one");
  }
  const ir::TensorView* p = ins.front();
  const ir::TensorView* c = outs.front();
  if (!p->hasDeviceMesh() || !c->hasDeviceMesh()) {
    unsupported(e, "a tensor with a device mesh next to one without");
  }
  if (!(p->deviceMesh() == c->deviceMesh())) return moveBetweenMeshes(e, p, c);
  const std::vector<ShardedAxis> p_axes = shardedAxes(p);
  const std::vector<ShardedAxis> c_axes = shardedAxes(c);
  Communication comm;
  comm.mesh = p->deviceMesh();
  comm.receivers = comm.mesh;
  if (const auto* r = dynamic_cast<const ir::ReductionOp*>(e)) {
    const ShardedAxis* a = reducedShardedAxis(p_axes, p, c);
    if (a == nullptr) unsupported(e, "a reduction that reshards no reduced dim");
    auto extent = a->logical->extent()->constInt();
    if (!extent.has_value() || *extent != a->devices) {
      unsupported(e, "a reduction over a sharded dim with more than one element per device "
                     "(a local partial reduction, then an Allreduce of the partials)");
    }
    if (!r->hasIdentityInit()) unsupported(e, "a sharded reduction with a non-identity init");
    const auto p2c = ir::producerToConsumerMap(p, c);
    size_t reduced = 0;
    for (ir::IterDomain* id : c->logical()) reduced += id->isReduction() ? 1 : 0;
    if (reduced != 1) unsupported(e, "a reduction of the partials over more than the sharded dim");
    comm.axis = a->type;
    comm.reducedDim = logicalDim(p, a->logical);
    comm.op = *reduceOpOf(r->opType());
    requireOthersAlike(e, p, c, a->type);
    if (const ShardedAxis* ca = findAxis(c_axes, a->type)) {
      if (ca->logical->isReduction()) {
        unsupported(e, "a DID-parallel reduction ID (shard the output along one of its "
                       "iteration dims for a ReduceScatter)");
      }
      comm.type = CommunicationType::ReduceScatter;
      comm.dim = logicalDim(c, ca->logical);
    } else {
      comm.type = CommunicationType::Allreduce;
    }
    return comm;
  }
  if (dynamic_cast<const ir::LoadStoreOp*>(e) == nullptr) {
    unsupported(e, "only a set or a reduction of partials is a communication");
  }
  // A set keeps the dims in place (a permuting set reads another order: refused below).
  const auto p2c = ir::producerToConsumerMap(p, c);
  for (const ShardedAxis& a : p_axes) {
    if (a.devices == 1) continue;
    const ShardedAxis* ca = findAxis(c_axes, a.type);
    auto it = p2c.find(a.logical);
    if (it == p2c.end()) unsupported(e, "moving a sharded dim the output does not have");
    if (ca != nullptr && shardedImage(c, it->second, a.devices) == ca->logical) continue;
    requireOthersAlike(e, p, c, a.type);
    comm.axis = a.type;
    comm.dim = logicalDim(c, it->second);
    if (comm.dim < 0 || comm.dim != logicalDim(p, a.logical)) {
      unsupported(e, "a communication into a reshaped or permuted output");
    }
    if (ca == nullptr) {
      comm.type = CommunicationType::Allgather;
      return comm;
    }
    comm.type = CommunicationType::AllToAll;
    comm.splitDim = logicalDim(c, ca->logical);
    return comm;
  }
  for (const ShardedAxis& ca : c_axes) {
    if (ca.devices == 1 || findAxis(p_axes, ca.type) != nullptr) continue;
    requireOthersAlike(e, p, c, ca.type);
    comm.type = CommunicationType::Scatter;
    comm.axis = ca.type;
    comm.splitDim = logicalDim(c, ca.logical);
    const auto c2p = ir::consumerToProducerMap(p, c);
    auto it = c2p.find(ca.logical);
    if (it == c2p.end() || logicalDim(p, it->second) != comm.splitDim) {
      unsupported(e, "a Scatter into a reshaped or permuted output");
    }
    return comm;
  }
  unsupported(e, "a set that moves no sharded dim");
}

namespace {

// A reduction of x (into `out`) over the sharded dim `a`, seen per device block: xr views x as
// [.., d, s/d, ..] (sharded along d), `localAxes` are the dims of xr each device reduces (s/d
// and the reduction's other dims) and `devicesDim` is d's position among the partial's dims.
struct BlockReduction {
  ir::TensorView* xr = nullptr;
  std::vector<int64_t> localAxes;
  int64_t devicesDim = 0;
};

BlockReduction blockReduction(ir::TensorView* x, const ir::TensorView* out, const ShardedAxis& a) {
  const std::vector<ir::IterDomain*> ids = ir::TensorDomain::noReductions(x->logical());
  const int64_t k = logicalDim(x, a.logical);
  const auto p2c = ir::producerToConsumerMap(x, out);
  BlockReduction b;
  for (size_t i = 0; i < ids.size(); ++i) {
    const bool reduced = p2c.count(ids[i]) != 0 && p2c.at(ids[i])->isReduction();
    if (int64_t(i) == k) {
      b.localAxes.push_back(int64_t(i) + 1);
    } else if (reduced) {
      b.localAxes.push_back(int64_t(i) < k ? int64_t(i) : int64_t(i) + 1);
    } else if (int64_t(i) < k) {
      ++b.devicesDim;
    }
  }
  std::sort(b.localAxes.begin(), b.localAxes.end());
  // An outer split by d: a static view even of a symbolic extent.
  b.xr = ops::splitDim(x, k, a.devices);
  shardLike(b.xr, x, /*ref_is_producer=*/true);
  return b;
}

// The reduction `r` over the sharded logical dim `a` of its input, with several elements per
// device, as a local partial reduction and a reduction of the partials (the communication):
//
//   out = sum(x, {k, ...})          x [.., s, ..] sharded on DIDx along s (d devices)
//   xr = reshape(x, [.., d, s/d, ..])   sharded along d: one block per device, a local view
//   partial = sum(xr, {k + 1, ...})     [.., d, ..] sharded along d: each device's partial
//   out' = sum(partial, {k'})           an Allreduce (or a ReduceScatter), replacing out
void decomposeReduction(ir::Fusion& fusion, ir::ReductionOp* r, const ShardedAxis& a) {
  ir::TensorView* out = r->out();
  const BlockReduction b = blockReduction(r->in(), out, a);
  auto reduce = [&](ir::TensorView* in, const std::vector<int64_t>& axes) {
    switch (r->opType()) {
      case ir::ReductionOpType::Sum: return ops::sum(in, axes);
      case ir::ReductionOpType::Prod: return ops::prod(in, axes);
      case ir::ReductionOpType::Max: return ops::max(in, axes);
      case ir::ReductionOpType::Min: return ops::min(in, axes);
    }
    LOOM_UNREACHABLE();
  };
  ir::TensorView* partial = reduce(b.xr, b.localAxes);
  ir::TensorView* result = reduce(partial, {b.devicesDim});
  LOOM_ASSERT(result->dtype() == out->dtype(), "the decomposed reduction changed the dtype of ",
              out->toString());
  shardLike(partial, b.xr, /*ref_is_producer=*/true);
  // The result keeps the user's sharding of `out` (a ReduceScatter when it is sharded on the
  // same axis along another dim), else `out`'s mesh (replicated).
  shardAtSamePositions(result, out);
  if (out->isFusionOutput()) fusion.replaceOutput(out, result);
  fusion.replaceAllUses(out, result);
}

// A Welford over the sharded dim `a` of its raw input: each device's partial statistics of its
// block, gathered (three Allgathers of one triple per device) and combined exactly:
//
//   xr = reshape(x, [.., d, s/d, ..])             sharded along d
//   (pa, pm, pn) = welford(xr, {s/d, ...})        [.., d, ..] sharded along d: one per device
//   (ga, gm, gn) = set(pa), set(pm), set(pn)      replicated: Allgathers
//   (avg, m2, n) = welfordCombine(ga, gm, gn, {d}) local, replacing the original outputs
//   (then a Scatter, a local slice, of each result the user sharded)
void decomposeWelford(ir::Fusion& fusion, ir::WelfordOp* w, const ShardedAxis& a) {
  auto* x = w->inAvg()->dynCast<ir::TensorView>();
  if (x == nullptr || !w->hasRawInput() || !w->hasIdentityInit()) {
    unsupported(w,
                "a Welford over a sharded dim that combines partial statistics or starts "
                "from a non-zero init");
  }
  auto* out_avg = w->output(0)->as<ir::TensorView>();
  auto* out_m2 = w->output(1)->as<ir::TensorView>();
  auto* out_n = w->output(2)->as<ir::TensorView>();
  const BlockReduction b = blockReduction(x, out_avg, a);
  ops::WelfordResult partial = ops::welford(b.xr, b.localAxes);
  std::vector<ir::TensorView*> gathered;
  for (ir::TensorView* t : {partial.avg, partial.m2, partial.n}) {
    ir::TensorView* g = ops::set(t);
    g->setDeviceMesh(out_avg->deviceMesh());  // replicated: the set is an Allgather
    gathered.push_back(g);
  }
  ops::WelfordResult combined =
      ops::welfordCombine(gathered[0], gathered[1], gathered[2], {b.devicesDim});
  const std::pair<ir::TensorView*, ir::TensorView*> replaced[] = {
      {out_avg, combined.avg}, {out_m2, combined.m2}, {out_n, combined.n}};
  for (auto [old_tv, new_tv] : replaced) {
    LOOM_ASSERT(old_tv->dtype() == new_tv->dtype(), "the decomposed Welford changed the dtype of ",
                old_tv->toString());
    new_tv->setDeviceMesh(old_tv->deviceMesh());
    if (!splitAxes(old_tv).empty()) {
      // The user sharded the statistics: each device keeps its block of the combined whole
      // (a Scatter, a local slice).
      ir::TensorView* block = ops::set(new_tv);
      shardAtSamePositions(block, old_tv);
      new_tv = block;
    }
    if (old_tv->isFusionOutput()) fusion.replaceOutput(old_tv, new_tv);
    fusion.replaceAllUses(old_tv, new_tv);
  }
}

// The logical dim (reductions skipped) each DID type shards `tv` along, over more than one
// device.
using Layout = std::map<ir::ParallelType, int64_t>;
Layout layoutOf(const ir::TensorView* tv) {
  Layout out;
  for (const ShardedAxis& a : splitAxes(tv)) out[a.type] = logicalDim(tv, a.logical);
  return out;
}

// A copy of `q` on `mesh` sharded by `layout` (outer splits by the mesh sizes).
ir::TensorView* copySharded(ir::TensorView* q, const ir::DeviceMesh& mesh, const Layout& layout) {
  ir::TensorView* t = ops::set(q);
  t->setDeviceMesh(mesh);
  std::vector<std::pair<int64_t, ir::ParallelType>> by_dim;
  for (auto [type, dim] : layout) by_dim.emplace_back(dim, type);
  std::sort(by_dim.rbegin(), by_dim.rend());  // the last dim first: earlier positions stay
  for (auto [dim, type] : by_dim) {
    t->outerSplit(dim, mesh.size(type));
    t->axis(dim)->parallelize(type);
  }
  return t;
}

// A set whose output is sharded unlike its input along several mesh axes (nvFuser's 2-D
// AllToAll: [DIDy, DIDx] read as [DIDx, DIDy]) becomes a chain of sets that each change one axis,
// the communications Loom runs: an axis whose output dim another axis holds in the input is
// gathered first (Allgather), then each axis still sharded moves to its output dim (AllToAll),
// then each axis the chain does not shard yet is cut (a local slice). `e` itself is the last
// step. Returns whether it made the chain.
bool chainMultiAxisReshard(ir::Expr* e) {
  auto* ls = e->dynCast<ir::LoadStoreOp>();
  if (ls == nullptr) return false;
  auto* p = ls->input(0)->dynCast<ir::TensorView>();
  auto* c = ls->output(0)->dynCast<ir::TensorView>();
  if (p == nullptr || c == nullptr || !p->hasDeviceMesh() || !c->hasDeviceMesh() ||
      !(p->deviceMesh() == c->deviceMesh()) ||
      ir::TensorDomain::noReductions(p->logical()).size() !=
          ir::TensorDomain::noReductions(c->logical()).size()) {
    return false;
  }
  const Layout from = layoutOf(p);
  const Layout to = layoutOf(c);
  auto at = [](const Layout& l, ir::ParallelType t) {
    auto it = l.find(t);
    return it == l.end() ? int64_t(-1) : it->second;
  };
  std::vector<ir::ParallelType> changed;
  for (ir::ParallelType t :
       {ir::ParallelType::DIDx, ir::ParallelType::DIDy, ir::ParallelType::DIDz}) {
    if (at(from, t) != at(to, t)) changed.push_back(t);
  }
  if (changed.size() < 2) return false;
  std::vector<Layout> steps;
  Layout cur = from;
  for (ir::ParallelType t : changed) {
    if (at(cur, t) < 0) continue;
    const int64_t target = at(to, t);
    bool held = false;
    for (auto [u, dim] : cur) held = held || (u != t && dim == target);
    if (target < 0 || held) {
      cur.erase(t);
      steps.push_back(cur);
    }
  }
  for (ir::ParallelType t : changed) {
    if (at(cur, t) >= 0 && at(to, t) >= 0 && at(cur, t) != at(to, t)) {
      cur[t] = at(to, t);
      steps.push_back(cur);
    }
  }
  for (ir::ParallelType t : changed) {
    if (at(cur, t) < 0 && at(to, t) >= 0) {
      cur[t] = at(to, t);
      steps.push_back(cur);
    }
  }
  LOOM_ASSERT(cur == to && !steps.empty(), "the reshard chain of ", e->toString(),
              " does not end at its output's sharding");
  ir::TensorView* q = p;
  for (size_t i = 0; i + 1 < steps.size(); ++i) q = copySharded(q, p->deviceMesh(), steps[i]);
  e->replaceInput(p, q);
  return true;
}

// Reshard before: each input of `e` sharded unlike its outputs is copied (a set: the
// communication) into a tensor sharded like the output, which `e` reads. Returns whether it
// made a copy.
bool reshardInputs(ir::Fusion& fusion, ir::Expr* e) {
  std::vector<ir::TensorView*> outs;
  for (ir::Val* v : e->outputs()) {
    if (auto* tv = v->dynCast<ir::TensorView>()) outs.push_back(tv);
  }
  // Several outputs (a Welford's) are sharded alike by propagation; else communicationOf
  // names the expression afterwards.
  if (outs.empty() || !outputsAlike(outs)) return false;
  bool changed = false;
  for (ir::Val* v : std::vector<ir::Val*>(e->inputs())) {
    auto* in = v->dynCast<ir::TensorView>();
    if (in == nullptr) continue;
    ir::TensorView* copy = ops::set(in);
    e->replaceInput(in, copy);
    shardLike(copy, outs.front(), /*ref_is_producer=*/false);
    if (!reshardingReason(copy->definition()).empty()) {
      (void)chainMultiAxisReshard(copy->definition());
      changed = true;
      continue;
    }
    // Already sharded like the output: read it as it is.
    e->replaceInput(copy, in);
    fusion.removeVal(copy);
  }
  return changed;
}

}  // namespace

bool hasCommunication(const ir::Fusion& fusion) {
  if (!isMultidevice(fusion)) return false;
  for (ir::Expr* e : fusion.exprs()) {
    if (!reshardingReason(e).empty()) return true;
  }
  return false;
}

bool decomposeReshardings(ir::Fusion& fusion) {
  if (!hasCommunication(fusion)) return false;
  ir::FusionGuard guard(&fusion);
  bool changed = false;
  for (ir::Expr* e : fusion.exprs()) {
    if (reshardingReason(e).empty()) continue;
    if (auto* r = e->dynCast<ir::ReductionOp>()) {
      const std::vector<ShardedAxis> p_axes = shardedAxes(r->in());
      const ShardedAxis* a = reducedShardedAxis(p_axes, r->in(), r->out());
      if (a != nullptr) {
        auto extent = a->logical->extent()->constInt();
        // One element per device along the dim: the reduction is the communication itself.
        if (extent.has_value() && *extent == a->devices) continue;
        if (!r->hasIdentityInit()) unsupported(e, "a sharded reduction with a non-identity init");
        decomposeReduction(fusion, r, *a);
        changed = true;
        continue;
      }
      // Otherwise only a move between meshes is left: reshard the input before (below).
    }
    if (auto* w = e->dynCast<ir::WelfordOp>()) {
      auto* in = w->inAvg()->dynCast<ir::TensorView>();
      auto* out = w->output(0)->as<ir::TensorView>();
      const std::vector<ShardedAxis> in_axes =
          in == nullptr ? std::vector<ShardedAxis>{} : shardedAxes(in);
      const ShardedAxis* a = in == nullptr ? nullptr : reducedShardedAxis(in_axes, in, out);
      if (a != nullptr) {
        decomposeWelford(fusion, w, *a);
        changed = true;
        continue;
      }
    }
    if (!contractionReason(e).empty()) {
      // A matmul or linear over a sharded contracted dim: partial products, then their sum.
      for (ir::Expr* made : decomposeShardedContraction(fusion, e)) {
        (void)reshardInputs(fusion, made);
      }
      changed = true;
      continue;
    }
    if (e->isA<ir::LoadStoreOp>()) {
      changed |= chainMultiAxisReshard(e);
      continue;
    }
    changed |= reshardInputs(fusion, e);
  }
  // Tensors the decompositions made in between (casts) take their neighbours' shardings.
  if (changed) (void)shardNewTensors(fusion);
  for (ir::Expr* e : fusion.exprs()) (void)communicationOf(e);
  return changed;
}

}  // namespace loom::multidevice
