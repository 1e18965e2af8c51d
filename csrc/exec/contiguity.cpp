// SPDX-License-Identifier: Apache-2.0
// Contiguity flags against real strides (see contiguity.h for the rule).
#include "loom/exec/contiguity.h"

#include <algorithm>

#include "loom/ir/iter_domain.h"
#include "loom/ir/tensor_domain.h"
#include "loom/support/strings.h"

namespace loom::exec {

namespace {

// Calls fn(allocation position, logical position, implied stride) for each allocation dim that
// is neither a broadcast nor a reduction, innermost first; `implied` is the stride that density
// with the dims inside it needs. Returns false, visiting nothing, when the allocation domain is
// not a permutation of the logical domain.
template <typename Fn>
bool walkDense(const ir::TensorView* tv, std::span<const int64_t> sizes,
               std::span<const int64_t> strides, Fn&& fn) {
  const std::vector<ir::IterDomain*> logical = ir::TensorDomain::noReductions(tv->logical());
  const std::vector<ir::IterDomain*>& alloc = tv->maybeAllocation();
  LOOM_ASSERT(sizes.size() == logical.size() && strides.size() == logical.size(), "tensor ",
              tv->toString(), " of rank ", logical.size(), " given ", sizes.size(), " sizes");
  std::vector<size_t> pos(alloc.size(), 0);
  for (size_t a = 0; a < alloc.size(); ++a) {
    if (alloc[a]->isReduction()) continue;
    auto it = std::find(logical.begin(), logical.end(), alloc[a]);
    if (it == logical.end()) return false;
    pos[a] = size_t(it - logical.begin());
  }
  int64_t implied = 1;
  for (size_t a = alloc.size(); a-- > 0;) {
    if (alloc[a]->isReduction() || alloc[a]->isBroadcast()) continue;
    const size_t p = pos[a];
    fn(a, p, implied);
    implied = sizes[p] * (sizes[p] == 1 ? implied : strides[p]);
  }
  return true;
}

}  // namespace

std::string contiguityString(const ir::Contiguity& c) {
  std::string s = "[";
  for (size_t i = 0; i < c.size(); ++i) {
    s += i ? ", " : "";
    s += !c[i].has_value() ? "-" : *c[i] ? "t" : "f";
  }
  return s + "]";
}

ir::Contiguity contiguityFromStrides(const ir::TensorView* tv, std::span<const int64_t> sizes,
                                     std::span<const int64_t> strides) {
  ir::Contiguity c = ir::TensorDomain::defaultContiguity(tv->maybeAllocation(), false);
  walkDense(tv, sizes, strides, [&](size_t a, size_t p, int64_t implied) {
    c[a] = sizes[p] == 1 || strides[p] == implied;
  });
  return c;
}

void checkContiguity(const ir::TensorView* tv, const std::string& what,
                     std::span<const int64_t> sizes, std::span<const int64_t> strides) {
  if (std::find(sizes.begin(), sizes.end(), 0) != sizes.end()) return;  // no element is read
  const ir::Contiguity& declared = tv->contiguity();
  // The next inner dim of each visited one, for the message.
  int64_t inner_pos = -1;
  walkDense(tv, sizes, strides, [&](size_t a, size_t p, int64_t implied) {
    const int64_t inner = inner_pos;
    inner_pos = int64_t(p);
    if (!declared[a].value_or(false) || sizes[p] == 1 || strides[p] == implied) return;
    std::string why = inner < 0 ? std::string("it is the innermost dimension")
                                : "dense with dimension " + std::to_string(inner) + " (size " +
                                      std::to_string(sizes[size_t(inner)]) + ")";
    std::string order = tv->domain()->hasAllocation() ? " on the allocation line" : "";
    LOOM_THROW(what, ": dimension ", p, " is declared contiguous, which needs stride ", implied,
               " (", why, "), but the tensor has stride ", strides[p], " (sizes ",
               "[" + join(sizes) + "]", ", strides ", "[" + join(strides) + "]",
               "). Declare the contiguity these strides have, ",
               contiguityString(contiguityFromStrides(tv, sizes, strides)),
               " in allocation order (contig=... in .fus", order,
               ", TensorView::setContiguity or TensorBuilder::contiguity), or pass a contiguous "
               "tensor");
  });
}

std::vector<int64_t> kernelStrides(const ir::TensorView* tv, std::span<const int64_t> sizes,
                                   std::span<const int64_t> strides) {
  std::vector<int64_t> out(strides.begin(), strides.end());
  walkDense(tv, sizes, strides, [&](size_t, size_t p, int64_t implied) {
    if (sizes[p] == 1) out[p] = implied;
  });
  return out;
}

}  // namespace loom::exec
