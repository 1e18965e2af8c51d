// SPDX-License-Identifier: Apache-2.0
// Cutting a global tensor into a device's shard and putting shards back together (sharding.h),
// and the sharded copy of a fusion that says how its outputs are sharded.
#include <cstring>

#include "loom/ir/fusion.h"
#include "loom/multidevice/communication.h"
#include "loom/multidevice/sharding.h"
#include "loom/support/error.h"
#include "loom/support/strings.h"

namespace loom::multidevice {

namespace {

// Per logical dim (reductions dropped) of `tv`: the number of blocks and the block index
// `device` holds (1 and 0 for an unsharded dim).
struct Blocks {
  std::vector<int64_t> count;
  std::vector<int64_t> index;
};

Blocks blocksOf(const ir::TensorView* tv, int64_t device) {
  std::vector<ir::IterDomain*> logical = ir::TensorDomain::noReductions(tv->logical());
  Blocks b{std::vector<int64_t>(logical.size(), 1), std::vector<int64_t>(logical.size(), 0)};
  if (!tv->hasDeviceMesh()) return b;
  const ir::DeviceMesh& mesh = tv->deviceMesh();
  LOOM_CHECK(mesh.indexOf(device) >= 0, "device ", device, " is not in the device mesh ", mesh,
             " of ", tv->toString());
  for (const ShardedAxis& a : shardedAxes(tv)) {
    auto it = std::find(logical.begin(), logical.end(), a.logical);
    LOOM_ASSERT(it != logical.end(), "sharded ", a.logical->toString(), " is not logical");
    const size_t k = size_t(it - logical.begin());
    b.count[k] = a.devices;
    b.index[k] = mesh.coordinate(device, a.type);
  }
  return b;
}

// Copies every element of `src` into `dst` (same sizes, same dtype), strides of each honoured.
void copyElements(const Tensor& src, const Tensor& dst) {
  const int64_t n = src.numel();
  const size_t item = src.itemSize();
  const auto* s = static_cast<const unsigned char*>(src.data());
  auto* d = static_cast<unsigned char*>(dst.data());
  std::vector<int64_t> index(size_t(src.dim()), 0);
  for (int64_t linear = 0; linear < n; ++linear) {
    int64_t so = 0, doff = 0;
    for (int64_t k = 0; k < src.dim(); ++k) {
      so += index[size_t(k)] * src.stride(k);
      doff += index[size_t(k)] * dst.stride(k);
    }
    std::memcpy(d + doff * int64_t(item), s + so * int64_t(item), item);
    for (int64_t k = src.dim() - 1; k >= 0; --k) {
      if (++index[size_t(k)] < src.size(k)) break;
      index[size_t(k)] = 0;
    }
  }
}

}  // namespace

Tensor shardTensor(const Tensor& global, int64_t dim, const ir::DeviceMesh& mesh, int64_t device,
                   ir::ParallelType axis) {
  LOOM_CHECK(ir::isDeviceDim(axis), "shard_tensor: ", ir::parallelTypeName(axis),
             " is not a device parallel type (mesh_x, mesh_y, mesh_z)");
  const int64_t rank = global.dim();
  LOOM_CHECK(dim >= -rank && dim < rank, "shard_tensor: dim ", dim, " is out of range for a ",
             rank, "-D tensor");
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

Tensor shardTensor(const Tensor& global, const ir::TensorView* tv, int64_t device) {
  const Blocks b = blocksOf(tv, device);
  LOOM_CHECK(global.dim() == int64_t(b.count.size()), "shardTensor: ", tv->toString(), " has ",
             b.count.size(), " dims but the tensor has ", global.dim());
  std::vector<int64_t> sizes = global.sizes();
  int64_t offset = global.offset();
  for (size_t k = 0; k < sizes.size(); ++k) {
    LOOM_CHECK(sizes[k] % b.count[k] == 0, "shardTensor: dim ", k, " of ", tv->toString(),
               " has size ", sizes[k], ", which ", b.count[k], " devices do not divide");
    sizes[k] /= b.count[k];
    offset += b.index[k] * sizes[k] * global.stride(int64_t(k));
  }
  return Tensor(global.storage(), global.dtype(), sizes, global.strides(), offset);
}

Tensor unshardTensor(const std::vector<Tensor>& shards, const ir::TensorView* tv) {
  const std::vector<int64_t> devices =
      tv->hasDeviceMesh() ? tv->deviceMesh().devices() : std::vector<int64_t>{0};
  LOOM_CHECK(shards.size() == devices.size(), "unshardTensor: ", tv->toString(), " is on ",
             devices.size(), " devices but ", shards.size(), " shards were given");
  const Blocks first = blocksOf(tv, devices[0]);
  std::vector<int64_t> sizes = shards[0].sizes();
  LOOM_CHECK(sizes.size() == first.count.size(), "unshardTensor: ", tv->toString(), " has ",
             first.count.size(), " dims but the shards have ", sizes.size());
  for (size_t k = 0; k < sizes.size(); ++k) sizes[k] *= first.count[k];
  Tensor global = Tensor::empty(sizes, shards[0].dtype());
  std::vector<bool> placed;  // by block: the first device holding it fills it
  std::vector<std::vector<int64_t>> seen;
  for (size_t i = 0; i < devices.size(); ++i) {
    const Blocks b = blocksOf(tv, devices[i]);
    if (std::find(seen.begin(), seen.end(), b.index) != seen.end()) continue;
    seen.push_back(b.index);
    LOOM_CHECK(shards[i].sizes() == shards[0].sizes() && shards[i].dtype() == shards[0].dtype(),
               "unshardTensor: the shard of device ", devices[i], " is [", join(shards[i].sizes()),
               "] ", dataTypeName(shards[i].dtype()), ", the first [", join(shards[0].sizes()),
               "] ", dataTypeName(shards[0].dtype()));
    Tensor view = shardTensor(global, tv, devices[i]);
    copyElements(shards[i], view);
  }
  return global;
}


}  // namespace loom::multidevice
