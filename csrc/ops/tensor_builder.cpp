// SPDX-License-Identifier: Apache-2.0
// TensorBuilder: input TensorViews with constant, symbolic or broadcast extents, contiguity and
// a stride order (allocation domain).
#include "loom/ops/tensor_builder.h"

#include <algorithm>

#include "loom/ir/builder.h"
#include "loom/ir/iter_domain.h"
#include "ops/utils.h"

namespace loom::ops {

using ir::IrBuilder;
using ir::IterDomain;
using ir::IterType;

TensorBuilder& TensorBuilder::shape(std::vector<int64_t> sizes) {
  for (size_t i = 0; i < sizes.size(); ++i) {
    LOOM_CHECK(sizes[i] >= -1, "TensorBuilder: size ", sizes[i], " at dimension ", i, " of ",
               detail::shapeString(sizes), " is invalid (use -1 for a symbolic size). The value ",
               sizes[i], " at index ", i,
               " was neither symbolic(-1), zero_element(0), broadcast(1), or static(>1)");
  }
  sizes_ = std::move(sizes);
  return *this;
}

TensorBuilder& TensorBuilder::rank(int64_t n) {
  LOOM_CHECK(n >= 0, "TensorBuilder: rank ", n, " is negative");
  sizes_.assign(size_t(n), -1);
  return *this;
}

TensorBuilder& TensorBuilder::dtype(DataType dtype) {
  dtype_ = dtype;
  return *this;
}

TensorBuilder& TensorBuilder::contiguity(ir::Contiguity contiguity) {
  contiguity_ = std::move(contiguity);
  return *this;
}

TensorBuilder& TensorBuilder::contiguous(bool contiguous) {
  contiguous_ = contiguous;
  return *this;
}

TensorBuilder& TensorBuilder::strideOrder(std::vector<int64_t> order) {
  stride_order_ = std::move(order);
  return *this;
}

ir::TensorView* TensorBuilder::build() const {
  std::vector<IterDomain*> logical;
  for (size_t i = 0; i < sizes_.size(); ++i) {
    const int64_t s = sizes_[i];
    // nvFuser's convention: no contiguity for a dim whose size is not 1 makes it an expanded
    // broadcast (a stride-0 dim), of the given or a run-time extent.
    const bool expanded = contiguity_ && i < contiguity_->size() && !(*contiguity_)[i] && s != 1;
    if (expanded) {
      ir::Scalar* extent = s == -1 ? IrBuilder::symbolic(kIndexType) : IrBuilder::index(s);
      logical.push_back(IrBuilder::create<IterDomain>(IrBuilder::index(0), IrBuilder::index(1),
                                                      IterType::Broadcast, ir::ParallelType::Serial,
                                                      extent));
    } else if (s == -1) {
      logical.push_back(IterDomain::create(IrBuilder::symbolic(kIndexType)));
    } else if (s == 1) {
      logical.push_back(IterDomain::create(IrBuilder::index(1), IterType::Broadcast));
    } else {
      logical.push_back(IterDomain::create(IrBuilder::index(s)));
    }
  }
  const size_t rank = logical.size();

  std::vector<IterDomain*> allocation;
  if (!stride_order_.empty()) {
    LOOM_CHECK(stride_order_.size() == rank, "TensorBuilder: stride order ",
               detail::shapeString(stride_order_), " has ", stride_order_.size(),
               " entries for a tensor of rank ", rank);
    std::vector<bool> seen(rank, false);
    for (int64_t a : stride_order_) {
      LOOM_CHECK(a >= 0 && size_t(a) < rank && !seen[size_t(a)], "TensorBuilder: stride order ",
                 detail::shapeString(stride_order_), " is not a permutation of 0..", rank - 1);
      seen[size_t(a)] = true;
      allocation.push_back(logical[size_t(a)]);
    }
  }

  ir::Contiguity contiguity;
  if (contiguity_) {
    LOOM_CHECK(contiguity_->size() == rank, "TensorBuilder: contiguity has ", contiguity_->size(),
               " entries for a tensor of rank ", rank,
               " (one per dimension: The size of contiguity must equal to the number of "
               "non-broadcasting IterDomains plus the broadcast ones, given as None)");
    for (size_t i = 0; i < rank; ++i) {
      LOOM_CHECK((*contiguity_)[i].has_value() != logical[i]->isBroadcast(),
                 "TensorBuilder: contiguity entry ", i, " must be ",
                 logical[i]->isBroadcast() ? "nullopt (size-1 broadcast dimension)"
                                           : "true or false");
    }
    // Entries are given per logical axis; the domain stores them in allocation order.
    if (allocation.empty()) {
      contiguity = *contiguity_;
    } else {
      for (int64_t a : stride_order_) contiguity.push_back((*contiguity_)[size_t(a)]);
    }
  } else {
    contiguity = ir::TensorDomain::defaultContiguity(allocation.empty() ? logical : allocation,
                                                     contiguous_.value_or(true));
  }
  auto* td = IrBuilder::create<ir::TensorDomain>(std::vector<IterDomain*>{}, logical, allocation,
                                                 std::vector<IterDomain*>{}, contiguity);
  return IrBuilder::create<ir::TensorView>(td, dtype_, ir::MemoryType::Global);
}

}  // namespace loom::ops
