// SPDX-License-Identifier: Apache-2.0
// TensorView: a tensor value in a fusion (a TensorDomain, a memory type, a device mesh), with the
// scheduling state that inlining uses. Scheduling primitives that touch only this tensor's own
// domains (split, merge, reorder, ...) are members; those that rewrite the graph (rFactor, caches,
// inlining, replay) live in the transform layer.
#pragma once

#include <unordered_map>
#include <vector>

#include "loom/ir/base.h"
#include "loom/ir/device_mesh.h"
#include "loom/ir/tensor_domain.h"

namespace loom::ir {

class IterDomain;

enum class MemoryType : uint8_t { Local, Shared, Global };
std::string_view memoryTypeName(MemoryType m);  ///< "local", "shared", "global"
std::optional<MemoryType> parseMemoryType(std::string_view s);

class TensorView : public Val {
 public:
  LOOM_DECLARE_CLONE(TensorView)

  TensorView(TensorDomain* domain, DataType dtype, MemoryType memory_type = MemoryType::Local);
  TensorView(const TensorView* src, IrCloner& cloner);

  TensorDomain* domain() const { return domain_; }
  /// Replaces the whole domain (used by rewrites such as rFactor and clearReductionIterDomains).
  void setDomain(TensorDomain* domain);

  const std::vector<IterDomain*>& root() const;
  const std::vector<IterDomain*>& logical() const;
  const std::vector<IterDomain*>& allocation() const;
  const std::vector<IterDomain*>& loop() const;
  const std::vector<IterDomain*>& maybeAllocation() const;
  const Contiguity& contiguity() const;

  /// Rank of the logical domain without reductions: the rank users see.
  int64_t rank() const;
  /// Number of loop IDs.
  int64_t nDims() const;
  /// Loop ID at `axis` (negative counts from the end).
  IterDomain* axis(int64_t axis) const;

  MemoryType memoryType() const { return memory_type_; }
  const DeviceMesh& deviceMesh() const { return mesh_; }
  bool hasDeviceMesh() const { return !mesh_.empty(); }

  /// Loop positions shared with consumers / with producers (set by inlining).
  int64_t computeAtPosition() const { return compute_at_pos_; }
  int64_t maxProducerPosition() const { return max_producer_pos_; }
  void setComputeAtPosition(int64_t pos) { compute_at_pos_ = pos; }
  void setMaxProducerPosition(int64_t pos) { max_producer_pos_ = pos; }

  // ---- Scheduling of this tensor's own domain (implemented in csrc/ir/tensor_view_schedule.cpp).
  /// Splits loop axis `axis`. inner_split: factor is the inner extent; else the outer extent.
  TensorView* split(int64_t axis, int64_t factor, bool inner_split = true);
  TensorView* split(int64_t axis, Scalar* factor, bool inner_split = true);
  /// Outer split: `parts` becomes the outer extent (as used for DID sharding).
  TensorView* outerSplit(int64_t axis, int64_t parts) { return split(axis, parts, false); }
  TensorView* merge(int64_t outer, int64_t inner);
  /// Merges axis and axis+1.
  TensorView* merge(int64_t axis) { return merge(axis, axis + 1); }
  /// Merges loop axes [from, to] into one.
  TensorView* flatten(int64_t from = 0, int64_t to = -1);
  /// Moves loop axes: old position -> new position; unnamed axes keep their relative order.
  TensorView* reorder(const std::unordered_map<int64_t, int64_t>& old_to_new);
  /// New loop axis i is old loop axis permutation[i].
  TensorView* reorder(const std::vector<int64_t>& permutation);
  TensorView* setMemoryType(MemoryType type);
  TensorView* setAllocationDomain(std::vector<IterDomain*> ids, Contiguity contiguity = {});
  /// Replaces the contiguity flags, one per maybeAllocation() ID (nullopt for broadcast and
  /// reduction IDs). Kernels index contiguous dims without strides, and KernelExecutor rejects
  /// input tensors whose strides break the flags.
  TensorView* setContiguity(Contiguity contiguity);
  TensorView* setDeviceMesh(DeviceMesh mesh);

  std::string toString() const override;

 private:
  TensorDomain* domain_;
  MemoryType memory_type_;
  DeviceMesh mesh_;
  int64_t compute_at_pos_ = 0;
  int64_t max_producer_pos_ = 0;
};


}  // namespace loom::ir
