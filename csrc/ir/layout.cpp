// SPDX-License-Identifier: Apache-2.0
// denseLayout: allocation-order sizes and logical strides of a tensor Loom allocates.
#include "loom/ir/layout.h"

#include <algorithm>

#include "loom/ir/iter_domain.h"
#include "loom/tensor/tensor.h"

namespace loom::ir {

DenseLayout denseLayout(const TensorView* tv, const std::vector<int64_t>& sizes) {
  auto logical = TensorDomain::noReductions(tv->logical());
  auto alloc = TensorDomain::noReductions(tv->maybeAllocation());
  LOOM_ASSERT(sizes.size() == logical.size(), "denseLayout of ", tv->toString(), ": ",
              sizes.size(), " sizes for ", logical.size(), " logical dims");
  std::vector<size_t> perm;  // alloc position -> logical position
  for (IterDomain* id : alloc) {
    auto it = std::find(logical.begin(), logical.end(), id);
    LOOM_CHECK(it != logical.end(), "output ", tv->toString(),
               ": allocation domains other than a permutation of logical are not supported yet");
    perm.push_back(size_t(it - logical.begin()));
  }
  // An expanded broadcast holds one element (stride 0): its loop runs once, so that is what a
  // kernel writes, and what a reader declaring it expanded expects.
  auto expanded = [&](size_t p) { return logical[p]->isBroadcast() && logical[p]->hasExpandedExtent(); };
  DenseLayout l;
  for (size_t p : perm) {
    l.allocSizes.push_back(expanded(p) && sizes[p] != 0 ? 1 : sizes[p]);
    l.view = l.view || expanded(p);
  }
  std::vector<int64_t> alloc_strides = Tensor::contiguousStrides(l.allocSizes);
  l.strides.assign(sizes.size(), 0);
  for (size_t i = 0; i < perm.size(); ++i) {
    l.strides[perm[i]] = expanded(perm[i]) ? 0 : alloc_strides[i];
    l.view = l.view || perm[i] != i;
  }
  return l;
}

}  // namespace loom::ir
