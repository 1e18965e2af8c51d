// SPDX-License-Identifier: Apache-2.0
// TensorDomain.
#include "loom/ir/tensor_domain.h"

#include <algorithm>

#include "loom/ir/cloner.h"
#include "loom/ir/iter_domain.h"
#include "loom/support/strings.h"

namespace loom::ir {
namespace {

std::string idList(const std::vector<IterDomain*>& ids) {
  std::vector<std::string> names;
  for (auto* id : ids) names.push_back(id->toString());
  return "[" + join(names) + "]";
}

}  // namespace

TensorDomain::TensorDomain(std::vector<IterDomain*> logical, Contiguity contiguity)
    : TensorDomain({}, std::move(logical), {}, {}, std::move(contiguity)) {}

TensorDomain::TensorDomain(std::vector<IterDomain*> root, std::vector<IterDomain*> logical,
                           std::vector<IterDomain*> allocation, std::vector<IterDomain*> loop,
                           Contiguity contiguity)
    : Val(NodeKind::TensorDomain, kIndexType),
      root_(std::move(root)),
      logical_(std::move(logical)),
      allocation_(std::move(allocation)),
      loop_(std::move(loop)) {
  if (loop_.empty()) loop_ = logical_;
  if (allocation_ == logical_) allocation_.clear();
  if (contiguity.empty()) contiguity = defaultContiguity(maybeAllocation());
  validateContiguity(contiguity);
  contiguity_ = std::move(contiguity);
}

TensorDomain::TensorDomain(const TensorDomain* src, IrCloner& cloner)
    : Val(NodeKind::TensorDomain, kIndexType),
      root_(cloner.clone(src->root_)),
      logical_(cloner.clone(src->logical_)),
      allocation_(cloner.clone(src->allocation_)),
      loop_(cloner.clone(src->loop_)),
      contiguity_(src->contiguity_) {}

Statement* TensorDomain::cloneInto(IrCloner& cloner) const {
  return new TensorDomain(this, cloner);
}

int64_t TensorDomain::normalizeAxis(int64_t axis) const {
  int64_t n = nDims();
  LOOM_CHECK_INDEX(axis >= -n && axis < n, "axis ", axis, " is out of range for loop domain ",
                   idList(loop_), " of ", n, " IterDomains");
  return axis < 0 ? axis + n : axis;
}

IterDomain* TensorDomain::axis(int64_t axis) const { return loop_[size_t(normalizeAxis(axis))]; }

bool TensorDomain::hasReduction() const {
  return std::any_of(logical_.begin(), logical_.end(), [](auto* id) { return id->isReduction(); });
}

bool TensorDomain::hasBroadcast() const {
  return std::any_of(logical_.begin(), logical_.end(), [](auto* id) { return id->isBroadcast(); });
}

void TensorDomain::setLoopDomain(std::vector<IterDomain*> loop) { loop_ = std::move(loop); }

void TensorDomain::setAllocationDomain(std::vector<IterDomain*> allocation,
                                       Contiguity contiguity) {
  if (allocation == logical_) allocation.clear();
  const auto& ids = allocation.empty() ? logical_ : allocation;
  if (contiguity.empty()) contiguity = defaultContiguity(ids);
  LOOM_CHECK(contiguity.size() == ids.size(), "allocation domain ", idList(ids), " has ",
             ids.size(), " IterDomains but ", contiguity.size(), " contiguity flags");
  allocation_ = std::move(allocation);
  validateContiguity(contiguity);
  contiguity_ = std::move(contiguity);
}

void TensorDomain::setContiguity(Contiguity contiguity) {
  validateContiguity(contiguity);
  contiguity_ = std::move(contiguity);
}

void TensorDomain::validateContiguity(const Contiguity& c) const {
  const auto& ids = maybeAllocation();
  LOOM_CHECK(c.size() == ids.size(), "contiguity has ", c.size(), " flags but allocation domain ",
             idList(ids), " has ", ids.size(), " IterDomains");
  for (size_t i = 0; i < ids.size(); ++i) {
    bool expect_none = ids[i]->isBroadcast() || ids[i]->isReduction();
    LOOM_CHECK(c[i].has_value() != expect_none, "contiguity flag ", i, " of ", idList(ids),
               " must be ", expect_none ? "empty (broadcast or reduction IterDomain)"
                                        : "true or false",
               " for ", ids[i]->toString());
  }
}

std::vector<IterDomain*> TensorDomain::noReductions(const std::vector<IterDomain*>& ids) {
  std::vector<IterDomain*> out;
  for (auto* id : ids) {
    if (!id->isReduction()) out.push_back(id);
  }
  return out;
}

std::vector<IterDomain*> TensorDomain::noBroadcasts(const std::vector<IterDomain*>& ids) {
  std::vector<IterDomain*> out;
  for (auto* id : ids) {
    if (!id->isBroadcast()) out.push_back(id);
  }
  return out;
}

Contiguity TensorDomain::defaultContiguity(const std::vector<IterDomain*>& ids, bool contiguous) {
  Contiguity c;
  c.reserve(ids.size());
  for (auto* id : ids) {
    if (id->isBroadcast() || id->isReduction()) {
      c.push_back(std::nullopt);
    } else {
      c.push_back(contiguous);
    }
  }
  return c;
}

std::string TensorDomain::toString() const { return idList(loop_); }

}  // namespace loom::ir
