// SPDX-License-Identifier: Apache-2.0
// Cutting a global tensor into a device's shard and putting shards back together (sharding.h),
// and the sharded copy of a fusion that says how its outputs are sharded.
#include <algorithm>
#include <cstring>
#include <memory>

#include "loom/ir/fusion.h"
#include "loom/ir/scalar.h"
#include "loom/ir/tensor_domain.h"
#include "loom/ir/transforms.h"
#include "loom/multidevice/communication.h"
#include "loom/multidevice/sharding.h"
#include "loom/support/error.h"
#include "loom/support/strings.h"

namespace loom::multidevice {

namespace {

// True when a DID-parallel ID derives from `id` (through splits or merges).
bool didBelow(const ir::IterDomain* id) {
  if (id->isDeviceDim()) return true;
  for (const ir::Expr* use : id->uses()) {
    for (const ir::Val* out : use->outputs()) {
      if (didBelow(out->as<ir::IterDomain>())) return true;
    }
  }
  return false;
}

// The global indices of the logical dim `id` (of global extent `n`) that `device` holds, in the
// order its shard lays them out: the dim's transforms to the loop domain are splits, each
// recomposed as outer * inner_extent + inner (outer before inner), with every DID-parallel piece
// fixed at the device's coordinate on that mesh axis. An outer split by the mesh size gives one
// contiguous block; an inner split, a split of a split, or two mesh axes on one dim give the
// strided selections nvFuser's shard_tensor gives (reshape, then slice at the coordinate).
std::vector<int64_t> selectedIndices(const ir::TensorView* tv, ir::IterDomain* id, int64_t n,
                                     const ir::DeviceMesh& mesh, int64_t device) {
  if (!didBelow(id)) {
    // No mesh axis below: loop transforms of an unsharded dim or of a local piece (splits,
    // merges with other dims) reorder loops, not data; the device holds every index.
    std::vector<int64_t> all(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) all[size_t(i)] = i;
    return all;
  }
  if (id->isDeviceDim()) {  // a logical ID parallelized directly: one index per device
    const int64_t devices = mesh.size(id->parallelType());
    LOOM_CHECK(n == devices, "shard_tensor: ", tv->toString(), "'s dim ", id->toString(),
               " is parallelized on ", ir::parallelTypeName(id->parallelType()),
               " without a split, so its size must be the mesh axis's ", devices, ", not ", n);
    return {mesh.coordinate(device, id->parallelType())};
  }
  ir::Split* split = nullptr;
  for (ir::Expr* use : id->uses()) {
    if (auto* s = use->dynCast<ir::Split>(); s != nullptr && s->in() == id) split = s;
    LOOM_CHECK(!use->isA<ir::Merge>(), "shard_tensor: ", tv->toString(), "'s dim ", id->toString(),
               " is merged on its way to the loop domain; shard_tensor follows "
               "splits only");
  }
  if (split == nullptr) {
    std::vector<int64_t> all(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) all[size_t(i)] = i;
    return all;
  }
  auto factor = split->factor()->constInt();
  LOOM_CHECK(factor.has_value() && *factor > 0 && n % *factor == 0,
             "shard_tensor: ", tv->toString(), " splits ", id->toString(), " of size ", n, " by ",
             split->factor()->toString(), ", which does not divide it");
  const int64_t outer_n = split->innerSplit() ? n / *factor : *factor;
  const int64_t inner_n = n / outer_n;
  const std::vector<int64_t> outer = selectedIndices(tv, split->outer(), outer_n, mesh, device);
  const std::vector<int64_t> inner = selectedIndices(tv, split->inner(), inner_n, mesh, device);
  std::vector<int64_t> out;
  out.reserve(outer.size() * inner.size());
  for (int64_t o : outer) {
    for (int64_t i : inner) out.push_back(o * inner_n + i);
  }
  return out;
}

// Per logical dim (reductions dropped: a reduced output comes back whole) of `tv`, the global
// indices `device` holds (selectedIndices); every index for a tensor without a mesh.
std::vector<std::vector<int64_t>> selectionsOf(const ir::TensorView* tv, const Tensor& global,
                                               int64_t device) {
  const std::vector<ir::IterDomain*> logical = ir::TensorDomain::noReductions(tv->logical());
  LOOM_CHECK(global.dim() == int64_t(logical.size()), "shard_tensor: ", tv->toString(), " has ",
             logical.size(), " dims but the tensor has ", global.dim());
  std::vector<std::vector<int64_t>> sel;
  for (size_t k = 0; k < logical.size(); ++k) {
    const int64_t n = global.size(int64_t(k));
    if (!tv->hasDeviceMesh()) {
      std::vector<int64_t> all(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) all[size_t(i)] = i;
      sel.push_back(std::move(all));
      continue;
    }
    sel.push_back(selectedIndices(tv, logical[k], n, tv->deviceMesh(), device));
  }
  return sel;
}

bool isRange(const std::vector<int64_t>& indices) {
  for (size_t i = 1; i < indices.size(); ++i) {
    if (indices[i] != indices[0] + int64_t(i)) return false;
  }
  return true;
}

// Visits every position of a tensor of `sizes` with the matching position in the global tensor
// (each dim through its selection), as element offsets in `a` and `b`.
template <typename F>
void forEachSelected(const std::vector<std::vector<int64_t>>& sel, const Tensor& a, const Tensor& b,
                     F&& f) {
  const size_t rank = sel.size();
  int64_t count = 1;
  for (const auto& s : sel) count *= int64_t(s.size());
  std::vector<size_t> pos(rank, 0);
  for (int64_t linear = 0; linear < count; ++linear) {
    int64_t oa = 0, ob = 0;
    for (size_t k = 0; k < rank; ++k) {
      oa += int64_t(pos[k]) * a.stride(int64_t(k));
      ob += sel[k][pos[k]] * b.stride(int64_t(k));
    }
    f(oa, ob);
    for (size_t k = rank; k-- > 0;) {
      if (++pos[k] < sel[k].size()) break;
      pos[k] = 0;
    }
  }
}

}  // namespace

Tensor shardTensor(const Tensor& global, int64_t dim, const ir::DeviceMesh& mesh, int64_t device,
                   ir::ParallelType axis) {
  LOOM_CHECK(ir::isDeviceDim(axis), "shard_tensor: ", ir::parallelTypeName(axis),
             " is not a device parallel type (mesh_x, mesh_y, mesh_z)");
  const int64_t rank = global.dim();
  LOOM_CHECK(dim >= -rank && dim < rank, "shard_tensor: dim ", dim, " is out of range for a ", rank,
             "-D tensor");
  if (dim < 0) dim += rank;
  const int64_t coordinate = mesh.coordinate(device, axis);
  LOOM_CHECK(coordinate >= 0, "shard_tensor: device ", device, " is not in the mesh ", mesh);
  const int64_t parts = mesh.size(axis);
  const int64_t extent = global.size(dim);
  LOOM_CHECK(extent % parts == 0, "shard_tensor: dim ", dim, " has size ", extent, ", which the ",
             parts, " devices of the mesh axis do not divide");
  std::vector<int64_t> sizes = global.sizes();
  sizes[size_t(dim)] = extent / parts;
  return Tensor(global.storage(), global.dtype(), sizes, global.strides(),
                global.offset() + coordinate * sizes[size_t(dim)] * global.stride(dim));
}

namespace {

// The sharding `tv` has when its fusion runs: a tensor the user gave no mesh in a fusion with
// meshes takes one from propagate_shardings (the sharding the runtime gives it, its outputs'
// included), read from a propagated copy so the user's fusion stays as written. Null when `tv` has
// a mesh of its own or none comes to it.
std::unique_ptr<ir::Fusion> propagatedCopy(const ir::TensorView* tv,
                                           const ir::TensorView** propagated) {
  *propagated = nullptr;
  if (tv->hasDeviceMesh() || tv->fusion() == nullptr || !isMultidevice(*tv->fusion())) {
    return nullptr;
  }
  std::unique_ptr<ir::Fusion> copy = tv->fusion()->clone();
  propagateShardings(*copy);
  for (const ir::TensorView* other : copy->allTvs()) {
    if (other->name() == tv->name() && other->hasDeviceMesh()) *propagated = other;
  }
  return copy;
}

}  // namespace

int64_t shardedLogicalAxis(const ir::TensorView* tv, ir::ParallelType type) {
  const ir::TensorView* propagated = nullptr;
  const std::unique_ptr<ir::Fusion> copy = propagatedCopy(tv, &propagated);
  const ir::TensorView* t = propagated != nullptr ? propagated : tv;
  if (!t->hasDeviceMesh()) return -1;
  const std::vector<ir::IterDomain*> logical = ir::TensorDomain::noReductions(t->logical());
  for (const ShardedAxis& a : shardedAxes(t)) {
    if (a.type != type) continue;
    auto it = std::find(logical.begin(), logical.end(), a.logical);
    return it == logical.end() ? -1 : int64_t(it - logical.begin());
  }
  return -1;
}

Tensor shardTensor(const Tensor& global, const ir::TensorView* tv, int64_t device) {
  const ir::TensorView* propagated = nullptr;
  const std::unique_ptr<ir::Fusion> copy = propagatedCopy(tv, &propagated);
  if (propagated != nullptr) return shardTensor(global, propagated, device);
  LOOM_CHECK(!tv->hasDeviceMesh() || tv->deviceMesh().indexOf(device) >= 0, "device ", device,
             " is not in the device mesh ", tv->deviceMesh(), " of ", tv->toString());
  const std::vector<std::vector<int64_t>> sel = selectionsOf(tv, global, device);
  std::vector<int64_t> sizes;
  bool ranges = true;
  for (const auto& s : sel) {
    sizes.push_back(int64_t(s.size()));
    ranges = ranges && isRange(s);
  }
  if (ranges) {  // one block per dim: a view
    int64_t offset = global.offset();
    for (size_t k = 0; k < sel.size(); ++k) {
      if (!sel[k].empty()) offset += sel[k][0] * global.stride(int64_t(k));
    }
    return Tensor(global.storage(), global.dtype(), sizes, global.strides(), offset);
  }
  Tensor shard = Tensor::empty(sizes, global.dtype());
  const size_t item = global.itemSize();
  const auto* src = static_cast<const unsigned char*>(global.data());
  auto* dst = static_cast<unsigned char*>(shard.data());
  forEachSelected(sel, shard, global, [&](int64_t to, int64_t from) {
    std::memcpy(dst + to * int64_t(item), src + from * int64_t(item), item);
  });
  return shard;
}

Tensor unshardTensor(const std::vector<Tensor>& shards, const ir::TensorView* tv) {
  const std::vector<int64_t> devices =
      tv->hasDeviceMesh() ? tv->deviceMesh().devices() : std::vector<int64_t>{0};
  LOOM_CHECK(shards.size() == devices.size(), "unshardTensor: ", tv->toString(), " is on ",
             devices.size(), " devices but ", shards.size(), " shards were given");
  // The global sizes: each dim's shard size times the number of distinct selections along it
  // is not known without the transforms, so read them from the sharded dims' splits: a shard
  // of s elements along a dim whose selection of a global n has s elements.
  const std::vector<ir::IterDomain*> logical = ir::TensorDomain::noReductions(tv->logical());
  LOOM_CHECK(shards[0].dim() == int64_t(logical.size()), "unshardTensor: ", tv->toString(), " has ",
             logical.size(), " dims but the shards have ", shards[0].dim());
  std::vector<int64_t> sizes;
  for (size_t k = 0; k < logical.size(); ++k) {
    // The global extent n whose selection has the shard's size: n = shard size * the product of
    // the mesh sizes of the DID pieces under this dim.
    int64_t parts = 1;
    std::vector<ir::IterDomain*> work{logical[k]};
    while (!work.empty() && tv->hasDeviceMesh()) {
      ir::IterDomain* id = work.back();
      work.pop_back();
      if (id->isDeviceDim()) parts *= tv->deviceMesh().size(id->parallelType());
      for (ir::Expr* use : id->uses()) {
        if (auto* s = use->dynCast<ir::Split>(); s != nullptr && s->in() == id) {
          work.push_back(s->outer());
          work.push_back(s->inner());
        }
      }
    }
    sizes.push_back(shards[0].size(int64_t(k)) * parts);
  }
  Tensor global = Tensor::empty(sizes, shards[0].dtype());
  const size_t item = global.itemSize();
  auto* dst = static_cast<unsigned char*>(global.data());
  for (size_t i = 0; i < devices.size(); ++i) {
    LOOM_CHECK(shards[i].sizes() == shards[0].sizes() && shards[i].dtype() == shards[0].dtype(),
               "unshardTensor: the shard of device ", devices[i], " is [", join(shards[i].sizes()),
               "] ", dataTypeName(shards[i].dtype()), ", the first [", join(shards[0].sizes()),
               "] ", dataTypeName(shards[0].dtype()));
    const std::vector<std::vector<int64_t>> sel = selectionsOf(tv, global, devices[i]);
    const Tensor src = shards[i].isContiguous() ? shards[i] : shards[i].contiguous();
    const auto* from = static_cast<const unsigned char*>(src.data());
    forEachSelected(sel, src, global, [&](int64_t s_off, int64_t g_off) {
      std::memcpy(dst + g_off * int64_t(item), from + s_off * int64_t(item), item);
    });
  }
  return global;
}

}  // namespace loom::multidevice
