// SPDX-License-Identifier: Apache-2.0
// TensorView: construction and domain accessors. Scheduling members are in
// tensor_view_schedule.cpp.
#include "loom/ir/tensor_view.h"

#include <algorithm>
#include <array>

#include "loom/ir/cloner.h"
#include "loom/ir/iter_domain.h"
#include "loom/ir/scalar.h"
#include "loom/ir/tensor_domain.h"
#include "loom/ir/transforms.h"

namespace loom::ir {
namespace {
constexpr std::array<std::string_view, 3> kMemoryTypeNames = {"local", "shared", "global"};
}

std::string_view memoryTypeName(MemoryType m) { return kMemoryTypeNames.at(size_t(m)); }

std::optional<MemoryType> parseMemoryType(std::string_view s) {
  for (size_t i = 0; i < kMemoryTypeNames.size(); ++i) {
    if (kMemoryTypeNames[i] == s) return MemoryType(i);
  }
  return std::nullopt;
}

TensorView::TensorView(TensorDomain* domain, DataType dtype, MemoryType memory_type)
    : Val(NodeKind::TensorView, dtype), domain_(domain), memory_type_(memory_type) {
  LOOM_ASSERT(domain_ != nullptr, "a TensorView needs a domain");
}

TensorView::TensorView(const TensorView* src, IrCloner& cloner)
    : Val(NodeKind::TensorView, src->dtype()),
      domain_(cloner.clone(src->domain_)),
      memory_type_(src->memory_type_),
      mesh_(src->mesh_),
      compute_at_pos_(src->compute_at_pos_),
      max_producer_pos_(src->max_producer_pos_) {}

Statement* TensorView::cloneInto(IrCloner& cloner) const { return new TensorView(this, cloner); }

void TensorView::setDomain(TensorDomain* domain) {
  LOOM_ASSERT(domain != nullptr && domain->fusion() == fusion(),
              "setDomain needs a domain of the same fusion");
  domain_ = domain;
}

const std::vector<IterDomain*>& TensorView::root() const { return domain_->root(); }
const std::vector<IterDomain*>& TensorView::logical() const { return domain_->logical(); }
const std::vector<IterDomain*>& TensorView::allocation() const { return domain_->allocation(); }
const std::vector<IterDomain*>& TensorView::loop() const { return domain_->loop(); }
const std::vector<IterDomain*>& TensorView::maybeAllocation() const {
  return domain_->maybeAllocation();
}
const Contiguity& TensorView::contiguity() const { return domain_->contiguity(); }

int64_t TensorView::rank() const {
  return int64_t(TensorDomain::noReductions(domain_->logical()).size());
}
int64_t TensorView::nDims() const { return domain_->nDims(); }
IterDomain* TensorView::axis(int64_t axis) const { return domain_->axis(axis); }

std::string TensorView::toString() const { return "T" + std::to_string(name()); }


}  // namespace loom::ir
