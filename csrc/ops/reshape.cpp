// SPDX-License-Identifier: Apache-2.0
// reshape: a row-major reshape built as merges and splits from the output's root to its logical
// domain.
//
// Size-1 dimensions are handled outside the ReshapeOp: size-1 input dims are squeezed first and
// size-1 output dims broadcast afterwards, so the core reshape sees only sizes > 1. The core walks
// input and output sizes left to right and cuts them into the smallest groups whose products
// match ([2,3,4] -> [6,4] gives the groups {2,3}->{6} and {4}->{4}). A group merges its input dims
// into one ID and then splits off its output dims from the inside (inner splits by the constant
// output sizes), so [2,3,4] -> [4,6] is merge(merge(2,3),4) = 24, split by 6 -> [4, 6].
#include <functional>
#include <numeric>

#include "loom/ir/builder.h"
#include "loom/ir/exprs.h"
#include "loom/ops/shape.h"
#include "ops/utils.h"

namespace loom::ops {
namespace {

using ir::IrBuilder;
using ir::IterDomain;

int64_t product(const std::vector<int64_t>& v) {
  return std::accumulate(v.begin(), v.end(), int64_t(1), std::multiplies<>());
}

// Reshapes x (all sizes > 1, equal products) with one ReshapeOp.
TensorView* reshapeCore(TensorView* x, const std::vector<int64_t>& in,
                        const std::vector<int64_t>& out) {
  auto root = detail::freshIds(detail::dims(x));
  LOOM_ASSERT(root.size() == in.size());
  std::vector<IterDomain*> logical;
  size_t i = 0;
  size_t j = 0;
  while (j < out.size()) {
    const size_t i0 = i;
    const size_t j0 = j;
    LOOM_ASSERT(i < in.size(), "reshape groups ran out of input dimensions");
    int64_t pin = in[i++];
    int64_t pout = out[j++];
    while (pin != pout) {
      if (pin < pout) {
        LOOM_ASSERT(i < in.size(), "reshape groups ran out of input dimensions");
        pin *= in[i++];
      } else {
        LOOM_ASSERT(j < out.size(), "reshape groups ran out of output dimensions");
        pout *= out[j++];
      }
    }
    IterDomain* merged = root[i0];
    for (size_t k = i0 + 1; k < i; ++k) merged = IterDomain::merge(merged, root[k], true);
    std::vector<IterDomain*> pieces;  // innermost first
    for (size_t k = j - 1; k > j0; --k) {
      auto [outer, inner] = IterDomain::split(merged, IrBuilder::index(out[k]), true, true);
      pieces.push_back(inner);
      merged = outer;
    }
    pieces.push_back(merged);
    logical.insert(logical.end(), pieces.rbegin(), pieces.rend());
  }
  LOOM_ASSERT(i == in.size(), "reshape groups left input dimensions over");
  auto* td = IrBuilder::create<ir::TensorDomain>(root, logical, std::vector<IterDomain*>{},
                                                 std::vector<IterDomain*>{});
  auto* result = IrBuilder::create<TensorView>(td, x->dtype());
  IrBuilder::create<ir::ReshapeOp>(result, x);
  return result;
}

}  // namespace

TensorView* reshape(TensorView* x, const std::vector<int64_t>& new_sizes) {
  auto in_ids = detail::dims(x);
  std::vector<int64_t> in_sizes;
  for (size_t i = 0; i < in_ids.size(); ++i) {
    auto s = detail::constSize(in_ids[i]);
    LOOM_CHECK(s.has_value(), "reshape: ", x->toString(), " ", detail::shapeString(x),
               " has the symbolic extent ", in_ids[i]->logicalExtent()->toString(),
               " at dimension ", i, "; reshape needs constant input extents");
    in_sizes.push_back(*s);
  }
  const int64_t numel = product(in_sizes);

  std::vector<int64_t> out_sizes = new_sizes;
  int64_t inferred = -1;
  int64_t known = 1;
  for (size_t i = 0; i < out_sizes.size(); ++i) {
    int64_t s = out_sizes[i];
    if (s == -1) {
      LOOM_CHECK(inferred < 0, "reshape: only one size may be -1 in ",
                 detail::shapeString(new_sizes), " (reshaping ", x->toString(), ")");
      inferred = int64_t(i);
      continue;
    }
    LOOM_CHECK(s >= 0, "reshape: invalid size ", s, " at dimension ", i, " of ",
               detail::shapeString(new_sizes), " (reshaping ", x->toString(), ")");
    known *= s;
  }
  if (inferred >= 0) {
    LOOM_CHECK(known != 0 && numel % known == 0, "reshape: cannot infer the -1 in ",
               detail::shapeString(new_sizes), " for ", x->toString(), " ",
               detail::shapeString(in_sizes), " with ", numel, " elements");
    out_sizes[size_t(inferred)] = numel / known;
  }
  LOOM_CHECK(product(out_sizes) == numel, "reshape: cannot reshape ", x->toString(), " of shape ",
             detail::shapeString(in_sizes), " (", numel, " elements) to shape ",
             detail::shapeString(out_sizes), " (", product(out_sizes), " elements)");
  LOOM_CHECK(numel != 0, "reshape: tensors with zero elements are not supported (",
             x->toString(), " ", detail::shapeString(in_sizes), ")");
  if (in_sizes == out_sizes) return set(x);

  std::vector<int64_t> ones;
  std::vector<int64_t> core_in;
  for (size_t i = 0; i < in_sizes.size(); ++i) {
    if (in_sizes[i] == 1) {
      ones.push_back(int64_t(i));
    } else {
      core_in.push_back(in_sizes[i]);
    }
  }
  TensorView* core = squeeze(x, ones);
  std::vector<int64_t> core_out;
  std::vector<bool> out_ones;
  for (int64_t s : out_sizes) {
    out_ones.push_back(s == 1);
    if (s != 1) core_out.push_back(s);
  }
  if (core_in != core_out) core = reshapeCore(core, core_in, core_out);
  return broadcast(core, out_ones);
}

}  // namespace loom::ops
