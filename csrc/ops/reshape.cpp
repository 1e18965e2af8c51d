// SPDX-License-Identifier: Apache-2.0
// reshape: a row-major reshape built as merges and splits from the output's root to its logical
// domain; with symbolic sizes a dynamic ReshapeOp that concretization makes static later.
//
// Size-1 dimensions are handled outside the ReshapeOp: size-1 input dims are squeezed first and
// size-1 output dims broadcast afterwards, so the core reshape sees only sizes > 1. The core walks
// input and output sizes left to right and cuts them into the smallest groups whose products
// match ([2,3,4] -> [6,4] gives the groups {2,3}->{6} and {4}->{4}). A group merges its input dims
// into one ID and then splits off its output dims from the inside (inner splits by the constant
// output sizes), so [2,3,4] -> [4,6] is merge(merge(2,3),4) = 24, split by 6 -> [4, 6].
// Concretization (segmenter/concretize.h) runs the same grouping on runtime sizes and splits by
// the size Scalars (reshapeGroups, reshapeByGroups).
#include <algorithm>
#include <functional>
#include <numeric>

#include "loom/ir/builder.h"
#include "loom/ir/exprs.h"
#include "loom/ir/scalar_math.h"
#include "loom/ir/transforms.h"
#include "loom/ops/shape.h"
#include "ops/utils.h"

namespace loom::ops {
namespace {

using ir::IrBuilder;
using ir::IterDomain;

int64_t product(const std::vector<int64_t>& v) {
  return std::accumulate(v.begin(), v.end(), int64_t(1), std::multiplies<>());
}

}  // namespace

std::vector<ReshapeGroup> reshapeGroups(const std::vector<int64_t>& in,
                                        const std::vector<int64_t>& out) {
  std::vector<ReshapeGroup> groups;
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
    groups.push_back({int64_t(i0), int64_t(i), int64_t(j0), int64_t(j)});
  }
  LOOM_ASSERT(i == in.size(), "reshape groups left input dimensions over");
  return groups;
}

TensorView* reshapeByGroups(TensorView* x, const std::vector<ReshapeGroup>& groups,
                            const std::vector<Scalar*>& out_sizes) {
  auto root = detail::freshIds(detail::dims(x));
  // An expanded broadcast merged or split with other dims has its expanded size in the result:
  // the root takes it as an iteration dim of that extent, so the merges and splits (and the
  // loops over them) cover every element. One kept whole stays an expanded broadcast.
  for (const ReshapeGroup& g : groups) {
    if (g.in_end - g.in_begin == 1 && g.out_end - g.out_begin == 1) continue;
    for (int64_t k = g.in_begin; k < g.in_end; ++k) {
      IterDomain* id = root[size_t(k)];
      if (id->isBroadcast() && id->hasExpandedExtent()) {
        root[size_t(k)] = IterDomain::create(id->expandedExtent(), ir::IterType::Iteration);
      }
    }
  }
  std::vector<IterDomain*> logical;
  for (const ReshapeGroup& g : groups) {
    IterDomain* merged = root[size_t(g.in_begin)];
    for (int64_t k = g.in_begin + 1; k < g.in_end; ++k) {
      merged = IterDomain::merge(merged, root[size_t(k)], true);
    }
    std::vector<IterDomain*> pieces;  // innermost first
    for (int64_t k = g.out_end - 1; k > g.out_begin; --k) {
      auto [outer, inner] = IterDomain::split(merged, out_sizes.at(size_t(k)), true, true);
      pieces.push_back(inner);
      merged = outer;
    }
    pieces.push_back(merged);
    logical.insert(logical.end(), pieces.rbegin(), pieces.rend());
  }
  LOOM_ASSERT(logical.size() == out_sizes.size(), "reshape groups do not cover the output");
  auto* td = IrBuilder::create<ir::TensorDomain>(root, logical, std::vector<IterDomain*>{},
                                                 std::vector<IterDomain*>{});
  auto* result = IrBuilder::create<TensorView>(td, x->dtype());
  IrBuilder::create<ir::ReshapeOp>(result, x);
  return result;
}

TensorView* splitDim(TensorView* x, int64_t dim, int64_t outer) {
  auto root = detail::freshIds(detail::dims(x));
  LOOM_CHECK(dim >= 0 && dim < int64_t(root.size()), "splitDim: dim ", dim, " of ", x->toString(),
             " of rank ", root.size());
  LOOM_CHECK(outer > 0, "splitDim: the outer extent must be positive, got ", outer);
  if (auto n = root[size_t(dim)]->extent()->constInt()) {
    LOOM_CHECK(*n % outer == 0, "splitDim: ", outer, " does not divide dim ", dim, " of ",
               x->toString(), " (extent ", *n, ")");
  }
  std::vector<IterDomain*> logical;
  for (size_t k = 0; k < root.size(); ++k) {
    if (int64_t(k) != dim) {
      logical.push_back(root[k]);
      continue;
    }
    // An inner split by extent / outer whose outer ID has the constant extent `outer`: the
    // factor is the block size, so a program of local extents (a device's shard of a sharded
    // dim) that replays the split gets its own blocks, and the outer extent stays a constant
    // even for a symbolic extent.
    IterDomain* in = root[k];
    LOOM_CHECK(!in->isBroadcast(), "splitDim: dim ", dim, " of ", x->toString(), " is a broadcast");
    Scalar* block = ir::scalar_math::div(in->extent(), IrBuilder::index(outer));
    Scalar* zero = IrBuilder::index(0);
    auto* o = IrBuilder::create<IterDomain>(zero, IrBuilder::index(outer), in->iterType(),
                                            ir::ParallelType::Serial, nullptr,
                                            /*rfactor_product=*/true);
    auto* i = IrBuilder::create<IterDomain>(zero, block, in->iterType(), ir::ParallelType::Serial,
                                            nullptr, /*rfactor_product=*/true);
    IrBuilder::create<ir::Split>(o, i, in, block, /*inner_split=*/true);
    logical.push_back(o);
    logical.push_back(i);
  }
  auto* td = IrBuilder::create<ir::TensorDomain>(root, logical, std::vector<IterDomain*>{},
                                                 std::vector<IterDomain*>{});
  auto* result = IrBuilder::create<TensorView>(td, x->dtype());
  IrBuilder::create<ir::ReshapeOp>(result, x);
  return result;
}

TensorView* reshape(TensorView* x, const std::vector<int64_t>& new_sizes) {
  auto in_ids = detail::dims(x);
  std::vector<int64_t> in_sizes;
  for (size_t i = 0; i < in_ids.size(); ++i) {
    auto s = detail::constSize(in_ids[i]);
    if (!s.has_value()) return reshape(x, SizeList(new_sizes));  // a dynamic reshape
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
  LOOM_CHECK(numel != 0, "reshape: tensors with zero elements are not supported (", x->toString(),
             " ", detail::shapeString(in_sizes), ")");
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
  if (core_in != core_out) {
    std::vector<Scalar*> factors;
    for (int64_t size : core_out) factors.push_back(IrBuilder::index(size));
    core = reshapeByGroups(core, reshapeGroups(core_in, core_out), factors);
  }
  return broadcast(core, out_ones);
}

TensorView* reshape(TensorView* x, std::initializer_list<Size> new_sizes) {
  return reshape(x, SizeList(new_sizes));
}

TensorView* reshape(TensorView* x, const SizeList& new_sizes) {
  auto in_ids = detail::dims(x);
  bool static_input = std::all_of(in_ids.begin(), in_ids.end(), [](const IterDomain* id) {
    return detail::constSize(id).has_value();
  });
  auto constants = new_sizes.constants();
  if (static_input && constants) return reshape(x, *constants);

  // A dynamic reshape: the output's logical IDs carry the sizes and are derived from nothing.
  int64_t inferred = -1;
  for (size_t i = 0; i < new_sizes.size(); ++i) {
    auto c = new_sizes[i].constant();
    if (!c) continue;
    if (*c == -1) {
      LOOM_CHECK(inferred < 0, "reshape: only one size may be -1 in ", new_sizes.toString(),
                 " (reshaping ", x->toString(),
                 "): A maximum of one value of -1 can be provided to reshape");
      inferred = int64_t(i);
      continue;
    }
    LOOM_CHECK(*c >= 0, "reshape: invalid size ", *c, " at dimension ", i, " of ",
               new_sizes.toString(), " (reshaping ", x->toString(), ")");
  }
  std::vector<Scalar*> sizes;
  for (const Size& s : new_sizes) sizes.push_back(s.toScalar());
  if (inferred >= 0) {
    Scalar* known = IrBuilder::index(1);
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (int64_t(i) != inferred) known = ir::scalar_math::mul(known, sizes[i]);
    }
    LOOM_CHECK(!known->isConstInt(0), "reshape: cannot infer the -1 in ", new_sizes.toString(),
               " for ", x->toString(), " ", detail::shapeString(x),
               ": the other sizes have zero elements, so any size fits");
    Scalar* numel = IrBuilder::index(1);
    for (IterDomain* id : in_ids) numel = ir::scalar_math::mul(numel, id->logicalExtent());
    auto n = numel->constInt();
    auto k = known->constInt();
    LOOM_CHECK(!n || !k || *n % *k == 0, "reshape: cannot infer the -1 in ", new_sizes.toString(),
               " for ", x->toString(), " ", detail::shapeString(x), " with ", *n, " elements");
    // max(known, 1): a product that is 0 at run time is reported as an element-count mismatch
    // (by the evaluator or concretization), not as a division by zero.
    sizes[size_t(inferred)] =
        ir::scalar_math::div(numel, ir::scalar_math::max(known, IrBuilder::index(1)));
  }
  // Requesting the input's own extents is a copy.
  if (sizes.size() == in_ids.size()) {
    bool same = true;
    for (size_t i = 0; same && i < sizes.size(); ++i) {
      Scalar* e = in_ids[i]->logicalExtent();
      same = sizes[i] == e || (sizes[i]->constInt() && sizes[i]->constInt() == e->constInt());
    }
    if (same) return set(x);
  }
  std::vector<IterDomain*> logical;
  for (Scalar* size : sizes) {
    if (size->isConstInt(1)) {
      logical.push_back(IterDomain::create(IrBuilder::index(1), ir::IterType::Broadcast));
    } else {
      logical.push_back(IterDomain::create(
          size, size->isConst() ? ir::IterType::Iteration : ir::IterType::Symbolic));
    }
  }
  auto* td = IrBuilder::create<ir::TensorDomain>(
      detail::freshIds(in_ids), logical, std::vector<IterDomain*>{}, std::vector<IterDomain*>{});
  auto* result = IrBuilder::create<TensorView>(td, x->dtype());
  IrBuilder::create<ir::ReshapeOp>(result, x);
  return result;
}

}  // namespace loom::ops
