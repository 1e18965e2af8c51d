// SPDX-License-Identifier: Apache-2.0
// TensorMetadata: what a tensor argument is apart from its elements, the one value that input
// binding, argument checks, cache keys and heuristics read.
//
//   TensorMetadata m = TensorMetadata::of(t);   // any device: nothing is read from memory
//   m.sizes, m.strides      // the buffer this process holds (a sharded tensor's local shard)
//   m.globalSizes           // the logical extents: the local sizes unless a binding that knows
//                           // the tensor's sharding says otherwise (eval::tensorMetadata)
//   m.alignment             // dataAlignment(): what vectorized accesses may assume
#pragma once

#include <cstdint>
#include <vector>

#include "loom/tensor/tensor.h"

namespace loom {

/// The largest power of two, at most 16 bytes, that divides the address `data`; 16 when the
/// tensor has no elements (its address is never used). The one alignment rule: vectorized
/// accesses of up to 16 bytes, cache keys and launch plans all read it.
int64_t dataAlignment(const void* data, int64_t numel);

struct TensorMetadata {
  DataType dtype = DataType::Float32;
  Device device;
  std::vector<int64_t> sizes;        ///< local: what this buffer holds
  std::vector<int64_t> strides;      ///< in elements, per logical dim
  std::vector<int64_t> globalSizes;  ///< logical extents across devices (see the file comment)
  int64_t alignment = 16;            ///< dataAlignment of the first element

  /// The metadata of a defined tensor (globalSizes = sizes).
  static TensorMetadata of(const Tensor& t);
  int64_t dim() const { return int64_t(sizes.size()); }
  int64_t numel() const;
};

/// Appends the fields of `t` that compiled code depends on, for cache keys and launch-plan
/// signatures (runtime::InputKey, KernelExecutor's plans): -1 for an undefined tensor, else its
/// device, dtype, rank, sizes, strides and, with `alignment`, dataAlignment. One serializer, so
/// every key tells two tensors apart by the same fields. Inline: it is on every cached run.
inline void appendKeyFields(std::vector<int64_t>& out, const Tensor& t, bool alignment = true) {
  if (!t.defined()) {
    out.push_back(-1);
    return;
  }
  out.push_back(int64_t(t.device().type) << 32 | int64_t(uint32_t(t.device().index)));
  out.push_back(int64_t(t.dtype()));
  out.push_back(t.dim());
  for (int64_t s : t.sizes()) out.push_back(s);
  for (int64_t s : t.strides()) out.push_back(s);
  if (alignment) out.push_back(dataAlignment(t.data(), t.numel()));
}

}  // namespace loom
