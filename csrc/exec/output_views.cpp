// SPDX-License-Identifier: Apache-2.0
// Outputs that are views of an input: the chains of view ops and their layouts (output_views.h).
#include "loom/exec/output_views.h"

#include <algorithm>

#include "loom/ir/exprs.h"
#include "loom/ir/tensor_domain.h"
#include "loom/ir/tensor_view.h"
#include "loom/ir/transforms.h"
#include "loom/support/error.h"

namespace loom::exec {

namespace {

int64_t positionOf(const std::vector<ir::Val*>& vals, const ir::Val* v) {
  auto it = std::find(vals.begin(), vals.end(), v);
  return it == vals.end() ? -1 : int64_t(it - vals.begin());
}

// A permute: a `set` whose output's logical domain is a permutation of its root. A plain `set`
// is a copy the user asked for.
bool isPermute(const ir::LoadStoreOp* op) {
  const ir::TensorDomain* d = op->out()->domain();
  if (!d->hasRoot() || op->isSegmentBoundary()) return false;
  if (d->root().size() != d->logical().size()) return false;
  return std::all_of(d->logical().begin(), d->logical().end(), [&](const ir::IterDomain* id) {
    return std::find(d->root().begin(), d->root().end(), id) != d->root().end();
  });
}

// The tensor `e` reads when it is a view op (see output_views.h), else nullptr.
const ir::TensorView* viewSource(const ir::Expr* e) {
  if (const auto* op = e->dynCast<ir::LoadStoreOp>()) return isPermute(op) ? op->in() : nullptr;
  if (const auto* op = e->dynCast<ir::ReshapeOp>()) return op->in();
  if (const auto* op = e->dynCast<ir::SqueezeOp>()) return op->in();
  if (const auto* op = e->dynCast<ir::BroadcastOp>()) return op->in();
  if (const auto* op = e->dynCast<ir::SliceOp>()) return op->in();
  return nullptr;
}

// The layout as it goes through the chain: sizes and strides of the current tensor's logical
// dims, and the offset of its first element.
struct Layout {
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  int64_t offset = 0;
};

// `layout` (of e's input) carried through view op `e`, the output's sizes from `ee`; false when
// the output is not expressible over the same memory.
bool step(const ir::Expr* e, Layout& layout, eval::ExpressionEvaluator& ee) {
  const auto* out = e->output(0)->as<ir::TensorView>();
  std::vector<int64_t> sizes = ee.logicalSizes(out);
  std::vector<int64_t> strides(sizes.size(), 0);
  if (const auto* op = e->dynCast<ir::LoadStoreOp>()) {
    const ir::TensorDomain* d = op->out()->domain();
    const std::vector<ir::IterDomain*>& root = d->root();
    for (size_t i = 0; i < sizes.size(); ++i) {
      // Logical dim i is root dim `from`, which is input dim `from`.
      const auto from = size_t(std::find(root.begin(), root.end(), d->logical()[i]) - root.begin());
      strides[i] = layout.strides.at(from);
    }
  } else if (const auto* op = e->dynCast<ir::BroadcastOp>()) {
    size_t next = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (!op->isBroadcastDim()[i]) strides[i] = layout.strides.at(next++);
    }
  } else if (const auto* op = e->dynCast<ir::SqueezeOp>()) {
    size_t next = 0;
    for (size_t i = 0; i < layout.sizes.size(); ++i) {
      if (!op->isSqueezedDim()[i]) {
        strides.at(next++) = layout.strides[i];
      } else if (layout.sizes[i] != 1) {
        return false;  // the kernel's path reports it
      }
    }
  } else if (const auto* op = e->dynCast<ir::SliceOp>()) {
    const std::vector<ir::IterDomain*>& logical = op->out()->logical();
    for (size_t i = 0; i < sizes.size(); ++i) {
      strides[i] = layout.strides.at(i);
      const ir::Expr* def = logical[i]->definition();
      if (def != nullptr && def->isA<ir::Resize>() && sizes[i] > 0) {
        layout.offset -= ee.evaluateInt(def->as<ir::Resize>()->left()) * strides[i];
      }
    }
  } else {
    LOOM_ASSERT(e->isA<ir::ReshapeOp>(), "not a view op: ", e->toString());
    std::optional<std::vector<int64_t>> s = reshapeStrides(layout.sizes, layout.strides, sizes);
    if (!s.has_value()) return false;
    strides = std::move(*s);
  }
  // A dim of one element may have any stride: the one a dense layout would give it.
  for (size_t i = sizes.size(); i-- > 0;) {
    if (sizes[i] == 1) strides[i] = i + 1 < sizes.size() ? strides[i + 1] * sizes[i + 1] : 1;
  }
  layout.sizes = std::move(sizes);
  layout.strides = std::move(strides);
  return true;
}

}  // namespace

std::vector<ViewChain> viewChains(const ir::Fusion& fusion) {
  std::vector<ViewChain> chains;
  const std::vector<ir::Val*>& outputs = fusion.outputs();
  for (size_t o = 0; o < outputs.size(); ++o) {
    const auto* tv = outputs[o]->dynCast<ir::TensorView>();
    if (tv == nullptr || tv->domain()->hasAllocation()) continue;
    const bool in_place = std::any_of(fusion.aliases().begin(), fusion.aliases().end(),
                                      [&](const auto& a) { return a.first == tv; });
    if (in_place) continue;
    ViewChain chain;
    chain.output = int64_t(o);
    while (tv != nullptr && !tv->isFusionInput() && tv->definition() != nullptr) {
      chain.exprs.push_back(tv->definition());
      tv = viewSource(tv->definition());
    }
    if (tv == nullptr || !tv->isFusionInput() || chain.exprs.empty()) continue;
    chain.input = positionOf(fusion.inputs(), tv);
    const bool written = std::any_of(fusion.aliases().begin(), fusion.aliases().end(),
                                     [&](const auto& a) { return a.second == tv; });
    if (written) continue;
    std::reverse(chain.exprs.begin(), chain.exprs.end());
    chains.push_back(std::move(chain));
  }
  return chains;
}

std::optional<OutputView> viewOf(const ViewChain& chain, const Tensor& input,
                                 eval::ExpressionEvaluator& ee) {
  Layout layout{input.sizes(), input.strides(), 0};
  for (const ir::Expr* e : chain.exprs) {
    if (!step(e, layout, ee)) return std::nullopt;
  }
  return OutputView{chain.output, chain.input, std::move(layout.sizes), std::move(layout.strides),
                    layout.offset};
}

Tensor viewTensor(const OutputView& view, const Tensor& input) {
  return Tensor(input.storage(), input.dtype(), view.sizes, view.strides,
                input.offset() + view.offset);
}

std::optional<std::vector<int64_t>> reshapeStrides(std::span<const int64_t> sizes,
                                                   std::span<const int64_t> strides,
                                                   std::span<const int64_t> new_sizes) {
  std::vector<int64_t> out(new_sizes.size(), 1);
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  if (numel == 0) return out;  // no element to address
  // Dims of one element take part in no group of dims whose element counts match.
  std::vector<size_t> old_dims;
  std::vector<size_t> new_dims;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] != 1) old_dims.push_back(d);
  }
  for (size_t d = 0; d < new_sizes.size(); ++d) {
    if (new_sizes[d] != 1) new_dims.push_back(d);
  }
  size_t o = 0;
  size_t n = 0;
  while (o < old_dims.size()) {
    // The smallest run of old dims and new dims holding the same number of elements: the new
    // dims split what the old ones hold, which must be one contiguous run of memory.
    const size_t o0 = o;
    const size_t n0 = n;
    if (n >= new_dims.size()) return std::nullopt;
    int64_t old_count = sizes[old_dims[o++]];
    int64_t new_count = new_sizes[new_dims[n++]];
    while (old_count != new_count) {
      if (old_count < new_count) {
        if (o >= old_dims.size()) return std::nullopt;
        old_count *= sizes[old_dims[o++]];
      } else {
        if (n >= new_dims.size()) return std::nullopt;
        new_count *= new_sizes[new_dims[n++]];
      }
    }
    for (size_t k = o0; k + 1 < o; ++k) {
      const size_t outer = old_dims[k];
      const size_t inner = old_dims[k + 1];
      if (strides[outer] != strides[inner] * sizes[inner]) return std::nullopt;
    }
    int64_t stride = strides[old_dims[o - 1]];
    for (size_t j = n; j-- > n0;) {
      out[new_dims[j]] = stride;
      stride *= new_sizes[new_dims[j]];
    }
  }
  if (n != new_dims.size()) return std::nullopt;
  return out;
}

}  // namespace loom::exec
