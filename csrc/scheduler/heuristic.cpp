// SPDX-License-Identifier: Apache-2.0
// SchedulerType names, DeviceInfo printing and SchedulerRuntimeInfo (sizes, strides, alignment).
#include "loom/scheduler/heuristic.h"

#include <cstdint>
#include <sstream>

#include "loom/ir/iter_domain.h"
#include "loom/support/error.h"
#include "loom/tensor/tensor_metadata.h"

namespace loom::scheduler {

std::string_view schedulerTypeName(SchedulerType type) {
  switch (type) {
    case SchedulerType::Pointwise:
      return "pointwise";
    case SchedulerType::Reduction:
      return "reduction";
    case SchedulerType::InnerPersistent:
      return "inner_persistent";
    case SchedulerType::Scan:
      return "scan";
    case SchedulerType::Sort:
      return "sort";
    case SchedulerType::Transpose:
      return "transpose";
    case SchedulerType::InnerOuterPersistent:
      return "inner_outer_persistent";
    case SchedulerType::OuterPersistent:
      return "outer_persistent";
    case SchedulerType::Scatter:
      return "scatter";
  }
  return "unknown";
}

std::string DeviceInfo::toString() const {
  std::ostringstream os;
  os << "sms=" << sm_count << " threads/block=" << max_threads_per_block
     << " threads/sm=" << max_threads_per_sm << " warp=" << warp_size
     << " smem/block=" << shared_memory_per_block << " regs/sm=" << registers_per_sm
     << " l2=" << l2_bytes;
  return os.str();
}

SchedulerRuntimeInfo::SchedulerRuntimeInfo(const ir::Fusion& fusion,
                                           std::span<const eval::Argument> args,
                                           DeviceInfo device)
    : fusion_(&fusion), device_(device) {
  ee_.bindInputs(fusion, args);
  for (size_t i = 0; i < args.size(); ++i) {
    const auto* tv = fusion.inputs()[i]->dynCast<ir::TensorView>();
    const auto* t = std::get_if<Tensor>(&args[i]);
    if (tv == nullptr || t == nullptr) continue;
    input_strides_[tv] = t->strides();
    input_alignment_[tv] = dataAlignment(t->data(), t->numel());
  }
}

SchedulerRuntimeInfo::SchedulerRuntimeInfo(const ir::Fusion& fusion,
                                           eval::ExpressionEvaluator sizes, DeviceInfo device)
    : fusion_(&fusion), ee_(std::move(sizes)), device_(device) {}

std::vector<int64_t> SchedulerRuntimeInfo::strides(const ir::TensorView* tv) {
  if (auto it = input_strides_.find(tv); it != input_strides_.end()) return it->second;
  // Dense in allocation order, honouring contiguity flags of fusion inputs: a dim whose flag is
  // false has an unknown stride (-1), and so has every dim outside it.
  std::vector<ir::IterDomain*> logical = ir::TensorDomain::noReductions(tv->logical());
  std::vector<int64_t> result(logical.size(), -1);
  const auto& alloc = tv->maybeAllocation();
  const auto& contiguity = tv->contiguity();
  bool known = true;
  int64_t stride = 1;
  for (int64_t a = int64_t(alloc.size()) - 1; a >= 0; --a) {
    ir::IterDomain* id = alloc[size_t(a)];
    if (id->isReduction()) continue;
    int64_t pos = -1;
    for (size_t l = 0; l < logical.size(); ++l) {
      if (logical[l] == id) pos = int64_t(l);
    }
    if (pos < 0) return std::vector<int64_t>(logical.size(), -1);  // split allocation: unknown
    if (id->isBroadcast()) {
      result[size_t(pos)] = 0;
      continue;
    }
    bool contiguous = !tv->isFusionInput() || size_t(a) >= contiguity.size() ||
                      contiguity[size_t(a)].value_or(true);
    if (!contiguous) known = false;
    result[size_t(pos)] = known ? stride : -1;
    if (known) stride *= ee_.extentOf(id, tv);
  }
  return result;
}

int64_t SchedulerRuntimeInfo::alignmentBytes(const ir::TensorView* tv) const {
  auto it = input_alignment_.find(tv);
  return it == input_alignment_.end() ? 16 : it->second;
}

}  // namespace loom::scheduler
