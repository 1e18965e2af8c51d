// SPDX-License-Identifier: Apache-2.0
// The one rule relating argument sizes to symbolic extents (extent_bindings.h).
#include "loom/ir/extent_bindings.h"

#include <algorithm>

#include "loom/ir/iter_domain.h"
#include "loom/ir/scalar_math.h"
#include "loom/ir/tensor_domain.h"
#include "loom/ir/transforms.h"

namespace loom::ir {

namespace {

bool isSymbol(const Scalar* s) { return s != nullptr && !s->isConst() && s->definition() == nullptr; }

// The number of blocks of each logical dim a DID loop ID shards: the size of its mesh axis,
// for a DID reached from the logical ID through outer pieces of splits (an outer split by the
// mesh size, or nvFuser's inner-split forms, multidevice/sharding.h).
std::vector<int64_t> didSplitFactors(const TensorView* tv, const std::vector<IterDomain*>& logical) {
  std::vector<int64_t> counts(logical.size(), 1);
  for (const IterDomain* id : tv->loop()) {
    if (!id->isDeviceDim() || id->definition() == nullptr) continue;
    if (!tv->deviceMesh().hasAxis(id->parallelType())) continue;
    // Up through outer pieces (a logical DID itself is canonicalized before sizes are bound).
    const IterDomain* cur = id;
    bool through_outer_pieces = true;
    while (through_outer_pieces &&
           std::find(logical.begin(), logical.end(), cur) == logical.end()) {
      const auto* split =
          cur->definition() == nullptr ? nullptr : cur->definition()->dynCast<Split>();
      through_outer_pieces = split != nullptr && split->outer() == cur;
      if (through_outer_pieces) cur = split->in();
    }
    auto it = std::find(logical.begin(), logical.end(), cur);
    if (!through_outer_pieces || cur == id || it == logical.end()) continue;
    counts[size_t(it - logical.begin())] *= tv->deviceMesh().size(id->parallelType());
  }
  return counts;
}

}  // namespace

std::vector<int64_t> shardCounts(const TensorView* tv) {
  return didSplitFactors(tv, TensorDomain::noReductions(tv->logical()));
}

std::vector<int64_t> shardFactors(const TensorView* tv) {
  const std::vector<IterDomain*> logical = TensorDomain::noReductions(tv->logical());
  std::vector<int64_t> factors = didSplitFactors(tv, logical);
  for (size_t d = 0; d < logical.size(); ++d) {
    int64_t c = 0;
    if (scalar_math::dividedSymbol(logical[d]->extent(), &c) != nullptr) factors[d] *= c;
  }
  return factors;
}

std::vector<ExtentBinding> extentBindings(const TensorView* tv) {
  const std::vector<IterDomain*> logical = TensorDomain::noReductions(tv->logical());
  const std::vector<int64_t> split = didSplitFactors(tv, logical);
  std::vector<ExtentBinding> out;
  for (size_t d = 0; d < logical.size(); ++d) {
    const IterDomain* id = logical[d];
    const auto dim = int64_t(d);
    if (id->hasExpandedExtent()) {
      if (isSymbol(id->expandedExtent())) out.push_back({id->expandedExtent(), dim, split[d]});
      continue;
    }
    if (id->isBroadcast()) continue;
    int64_t c = 0;
    if (const Scalar* whole = scalar_math::dividedSymbol(id->extent(), &c)) {
      out.push_back({whole, dim, c * split[d]});
    } else if (isSymbol(id->extent())) {
      out.push_back({id->extent(), dim, split[d]});
    }
  }
  return out;
}

std::optional<InputBinding> findInputBinding(const Fusion& fusion, const Scalar* symbol) {
  for (size_t i = 0; i < fusion.inputs().size(); ++i) {
    const auto* tv = fusion.inputs()[i]->dynCast<TensorView>();
    if (tv == nullptr) continue;
    for (const ExtentBinding& b : extentBindings(tv)) {
      if (b.symbol == symbol) return InputBinding{i, tv, b};
    }
  }
  return std::nullopt;
}

}  // namespace loom::ir
