// SPDX-License-Identifier: Apache-2.0
// clearReductionIterDomains.
#include "loom/transform/reduction_ids.h"

#include "loom/ir/builder.h"
#include "loom/ir/iter_domain.h"

namespace loom::transform {

using namespace loom::ir;

void clearReductionIterDomains(TensorView* tv) {
  LOOM_CHECK(!tv->domain()->hasRoot(), "clearReductionIterDomains on ", tv->toString(),
             ": it has a root domain (an rFactor product or reshape output); clear the reduction "
             "IDs of the rFactored tensor's consumer instead");
  FusionGuard guard(tv->fusion());
  const auto& alloc = tv->maybeAllocation();
  const auto& contig = tv->contiguity();
  std::vector<IterDomain*> logical = TensorDomain::noReductions(tv->logical());
  std::vector<IterDomain*> loop = TensorDomain::noReductions(tv->loop());
  std::vector<IterDomain*> new_alloc;
  Contiguity new_contig;
  // Contiguity is aligned with allocation, not logical: walk them together.
  for (size_t i = 0; i < alloc.size(); ++i) {
    if (alloc[i]->isReduction()) continue;
    new_alloc.push_back(alloc[i]);
    new_contig.push_back(contig[i]);
  }
  if (new_alloc == logical) new_alloc.clear();
  tv->setDomain(IrBuilder::create<TensorDomain>(std::vector<IterDomain*>{}, std::move(logical),
                                                std::move(new_alloc), std::move(loop),
                                                std::move(new_contig)));
}

}  // namespace loom::transform
