// SPDX-License-Identifier: Apache-2.0
// Ops that add, remove, stretch or reorder dimensions: broadcast, squeeze, expand, permute, set.
// reshape lives in reshape.cpp.
#include "loom/ops/shape.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <utility>

#include "loom/ir/builder.h"
#include "loom/ir/exprs.h"
#include "loom/ir/fusion.h"
#include "loom/ops/scalar_arith.h"
#include "ops/utils.h"

namespace loom::ops {

using ir::IrBuilder;
using ir::IterDomain;
using ir::IterType;

TensorView* broadcast(TensorView* x, const std::vector<bool>& is_broadcast_dim) {
  auto in_ids = detail::dims(x);
  auto n_kept = std::count(is_broadcast_dim.begin(), is_broadcast_dim.end(), false);
  LOOM_CHECK(size_t(n_kept) == in_ids.size(), "broadcast: ", x->toString(), " has rank ",
             in_ids.size(), " but is_broadcast_dim has ", n_kept,
             " false entries (one per input dimension expected). Invalid broadcast, number of "
             "false entries in is_broadcast_dim expected to be ",
             in_ids.size(), " but is ", n_kept);
  if (size_t(n_kept) == is_broadcast_dim.size()) return x;  // nothing to insert
  std::vector<IterDomain*> out_ids;
  size_t next = 0;
  for (bool b : is_broadcast_dim) {
    if (b) {
      out_ids.push_back(IterDomain::create(IrBuilder::index(1), IterType::Broadcast));
    } else {
      out_ids.push_back(detail::freshId(in_ids[next++]));
    }
  }
  TensorView* out = detail::newTensor(std::move(out_ids), x->dtype());
  IrBuilder::create<ir::BroadcastOp>(out, x, is_broadcast_dim);
  return out;
}

namespace {

// Requires that `extent` has the size `want` when a run binds it (a UserError saying `what`
// otherwise): its value, or its equality with the Scalar asked for.
void requireSize(ir::Fusion* fusion, Scalar* extent, const Size& want, std::string what) {
  if (auto c = want.constant()) {
    fusion->addExtentRequirement({extent, *c, extent, std::move(what)});
  } else {
    Scalar* same = scalarBinary(ir::BinaryOpType::Eq, extent, want.toScalar());
    fusion->addExtentRequirement({same, 1, extent, std::move(what)});
  }
}

}  // namespace

TensorView* broadcastInDim(TensorView* x, const std::vector<int64_t>& output_shape,
                           const std::vector<int64_t>& broadcast_dims) {
  return broadcastInDim(x, SizeList(output_shape), broadcast_dims);
}

TensorView* broadcastInDim(TensorView* x, std::initializer_list<Size> output_shape,
                           const std::vector<int64_t>& broadcast_dims) {
  return broadcastInDim(x, SizeList(output_shape), broadcast_dims);
}

TensorView* broadcastInDim(TensorView* x, const SizeList& output_shape,
                           const std::vector<int64_t>& broadcast_dims) {
  auto in_ids = detail::dims(x);
  const auto out_rank = int64_t(output_shape.size());
  const std::string shape_text = output_shape.toString();
  LOOM_CHECK(size_t(out_rank) >= in_ids.size(), "broadcastInDim: the output shape ", shape_text,
             " has fewer dimensions than ", x->toString(), " of rank ", in_ids.size(),
             " (The new shape is expected to be greater-then-or-equal to the input)");
  LOOM_CHECK(broadcast_dims.size() == in_ids.size(), "broadcastInDim: ", x->toString(),
             " has rank ", in_ids.size(), " but broadcast_dims has ", broadcast_dims.size(),
             " entries (The broadcast dimensions should match the input dimensions.)");
  std::vector<bool> flags(size_t(out_rank), true);
  std::vector<std::pair<size_t, int64_t>> required;  // (x's dim, output dim) checked at binding
  int64_t prev = -1;
  for (size_t i = 0; i < broadcast_dims.size(); ++i) {
    // A negative dim counts from the end of the output, as nvFuser's tests write it ([-1]).
    int64_t d = broadcast_dims[i] < 0 && broadcast_dims[i] >= -out_rank
                    ? broadcast_dims[i] + out_rank
                    : broadcast_dims[i];
    LOOM_CHECK(d > prev && d >= 0 && d < out_rank, "broadcastInDim: broadcast_dims ",
               detail::shapeString(broadcast_dims),
               " must be increasing and below the output rank ", out_rank,
               " (negative ones count from its end; ", x->toString(), "). ",
               d <= prev && d >= 0 ? "Broadcast dimension is not greater than the previous value."
                         : "Invalid broadcast_dims value.");
    prev = d;
    flags[size_t(d)] = false;
    const Size& want = output_shape[size_t(d)];
    const std::optional<int64_t> c = want.constant();
    if (in_ids[i]->isBroadcast() || c == -1) continue;  // stretched below, or kept
    auto have = detail::constSize(in_ids[i]);
    LOOM_CHECK(!have || !c || *have == *c, "broadcastInDim: dimension ", i, " of ", x->toString(),
               " ", detail::shapeString(x), " has size ", *have, " but output dimension ", d,
               " of ", shape_text, " has size ", *c);
    // A size not known now keeps x's extent (the output dim is x's); binding checks it is the
    // size asked for (below, once the output exists), rather than the output silently having
    // another size.
    if (!have || !c) required.push_back({i, d});
  }
  TensorView* b = broadcast(x, flags);
  // Stretch broadcast dims (new or size-1 ones of x) to the requested sizes.
  std::vector<Size> sizes(size_t(out_rank), Size(-1));
  bool any = false;
  auto b_ids = detail::dims(b);
  for (int64_t d = 0; d < out_rank; ++d) {
    const Size& want = output_shape[size_t(d)];
    const std::optional<int64_t> c = want.constant();
    IterDomain* id = b_ids[size_t(d)];
    if (id->isBroadcast() && c != -1 && (!c || detail::constSize(id) != c)) {
      sizes[size_t(d)] = want;
      any = true;
    }
  }
  TensorView* out = any ? expand(b, SizeList(std::move(sizes))) : b;
  // A call that adds and stretches no dim but requires sizes still makes a tensor of its own (a
  // copy), which the requirements name, as nvFuser's broadcast_in_dim returns one.
  if (out == x && !required.empty()) out = set(x);
  // The message names the output: print(fd) tells two broadcast_in_dims of one dim apart so.
  for (const auto& [i, d] : required) {
    const Size& want = output_shape[size_t(d)];
    requireSize(x->fusion(), in_ids[i]->extent(), want,
                "broadcast_in_dim to " + out->toString() + ": dimension " + std::to_string(i) +
                    " of " + x->toString() + " must have size " + want.toString() +
                    ", as output dimension " + std::to_string(d) + " of the shape " + shape_text +
                    " says (a dim declared -1 is not a broadcast: size 1 does not stretch)");
  }
  return out;
}

TensorView* squeeze(TensorView* x, const std::vector<int64_t>& dims, bool squeeze_expanded) {
  auto in_ids = detail::dims(x);
  LOOM_CHECK(dims.size() <= in_ids.size(), "squeeze: ", dims.size(), " dims ",
             detail::shapeString(dims), " given for ", x->toString(), " ", detail::shapeString(x),
             " of rank ", in_ids.size(),
             " (The dims to squeeze must be <= the number of dims of the input tensor)");
  auto norm = detail::normalizeDims(x, dims, int64_t(in_ids.size()), "squeeze");
  std::vector<bool> flags(in_ids.size(), false);
  for (int64_t d : norm) {
    IterDomain* id = in_ids[size_t(d)];
    bool size_one = detail::constSize(id) == 1 && (id->isBroadcast() || id->isIteration());
    bool expanded = id->isBroadcast() && id->hasExpandedExtent();
    LOOM_CHECK(size_one || (expanded && squeeze_expanded), "squeeze: dimension ", d, " of ",
               x->toString(), " ", detail::shapeString(x),
               " is not a size-1 (broadcast) dimension: ", id->toString(), " has type ",
               ir::iterTypeName(id->iterType()), " and size ", id->logicalExtent()->toString(),
               expanded ? " (an expanded broadcast: squeeze_expanded removes it)" : "");
    flags[size_t(d)] = true;
  }
  if (norm.empty()) return x;
  std::vector<IterDomain*> out_ids;
  for (size_t i = 0; i < in_ids.size(); ++i) {
    if (!flags[i]) out_ids.push_back(detail::freshId(in_ids[i]));
  }
  TensorView* out = detail::newTensor(std::move(out_ids), x->dtype());
  IrBuilder::create<ir::SqueezeOp>(out, x, flags);
  return out;
}

TensorView* unsqueeze(TensorView* x, int64_t dim) {
  const int64_t out_rank = x->rank() + 1;
  int64_t d = detail::normalizeDim(x, dim, out_rank, "unsqueeze");
  std::vector<bool> flags(size_t(out_rank), false);
  flags[size_t(d)] = true;
  return broadcast(x, flags);
}

namespace {

// Dimension `dim` of `x` (not a broadcast) expanded to `want`, a size not known together with
// its own when the fusion is built: the output dim keeps x's extent, so producer and consumer
// dims are one dim to the schedulers and the kernels (an output extent of its own made the two
// differ, and the pointwise schedule then iterated the expanded operand unexpanded: wrong
// values); binding checks that the size is the one asked for, as torch refuses to expand a
// non-size-1 dim. The check is added once the output exists (requireKeptSizes): its message
// names the output, which is how print(fd) tells two expands of one dim apart.
struct KeptDim {
  size_t dim;
  IterDomain* id;
  Size want;
};

IterDomain* keptExpandedDim(std::vector<KeptDim>& kept, size_t dim, IterDomain* id,
                            const Size& want) {
  kept.push_back({dim, id, want});
  return detail::freshId(id);
}

void requireKeptSizes(TensorView* x, TensorView* out, const std::vector<KeptDim>& kept) {
  for (const KeptDim& k : kept) {
    requireSize(x->fusion(), k.id->extent(), k.want,
                "expand to " + out->toString() + ": dimension " + std::to_string(k.dim) + " of " +
                    x->toString() +
                    " is not a broadcast dimension, so it must already have the size " +
                    k.want.toString() +
                    " it is expanded to (only size-1 dimensions expand; use -1 to keep it)");
  }
}

}  // namespace

TensorView* expand(TensorView* x, const std::vector<int64_t>& sizes) {
  const int64_t rank = x->rank();
  const auto n = int64_t(sizes.size());
  LOOM_CHECK(n >= rank, "expand: ", x->toString(), " ", detail::shapeString(x), " has rank ", rank,
             " but only ", n, " sizes were given ", detail::shapeString(sizes));
  // New leading dimensions (as torch.expand allows) are broadcast first.
  if (n > rank) {
    std::vector<bool> flags(size_t(n), false);
    for (int64_t i = 0; i < n - rank; ++i) flags[size_t(i)] = true;
    x = broadcast(x, flags);
  }
  auto in_ids = detail::dims(x);
  std::vector<IterDomain*> out_ids;
  std::vector<KeptDim> kept;
  for (size_t i = 0; i < in_ids.size(); ++i) {
    IterDomain* id = in_ids[i];
    int64_t want = sizes[i];
    LOOM_CHECK(want >= -1, "expand: size ", want, " for dimension ", i, " of ", x->toString(),
               " is negative");
    if (want == -1) {
      out_ids.push_back(detail::freshId(id));
      continue;
    }
    if (id->isBroadcast()) {
      Scalar* expanded = want == 1 ? nullptr : IrBuilder::index(want);
      out_ids.push_back(IrBuilder::create<IterDomain>(id->start(), id->extent(),
                                                      IterType::Broadcast,
                                                      ir::ParallelType::Serial, expanded));
      continue;
    }
    if (id->isSymbolic()) {  // a broadcast at run time when it is 1: see the SizeList overload
      out_ids.push_back(IterDomain::create(IrBuilder::index(want), IterType::Symbolic));
      continue;
    }
    auto have = detail::constSize(id);
    LOOM_CHECK(!have || *have == want, "expand: dimension ", i, " of ", x->toString(), " ",
               detail::shapeString(x), " has size ", *have,
               " and is not a broadcast dimension; it cannot be expanded to ", want,
               " (only size-1 dimensions expand; use -1 to keep it)");
    // A size known only at run time: kept, and checked when a run binds it (keptExpandedDim).
    out_ids.push_back(have ? detail::freshId(id) : keptExpandedDim(kept, i, id, want));
  }
  TensorView* out = detail::newTensor(std::move(out_ids), x->dtype());
  IrBuilder::create<ir::ExpandOp>(out, x);
  requireKeptSizes(x, out, kept);
  return out;
}

TensorView* expand(TensorView* x, std::initializer_list<Size> sizes) {
  return expand(x, SizeList(sizes));
}

TensorView* expand(TensorView* x, const SizeList& sizes) {
  if (auto constants = sizes.constants()) return expand(x, *constants);
  const int64_t rank = x->rank();
  const auto n = int64_t(sizes.size());
  LOOM_CHECK(n >= rank, "expand: ", x->toString(), " ", detail::shapeString(x), " has rank ", rank,
             " but only ", n, " sizes were given ", sizes.toString());
  if (n > rank) {
    std::vector<bool> flags(size_t(n), false);
    for (int64_t i = 0; i < n - rank; ++i) flags[size_t(i)] = true;
    x = broadcast(x, flags);
  }
  auto in_ids = detail::dims(x);
  std::vector<IterDomain*> out_ids;
  std::vector<KeptDim> kept;
  for (size_t i = 0; i < in_ids.size(); ++i) {
    IterDomain* id = in_ids[i];
    const Size& want = sizes[i];
    auto c = want.constant();
    LOOM_CHECK(!c || *c >= -1, "expand: size ", *c, " for dimension ", i, " of ", x->toString(),
               " is negative");
    if (c == -1) {
      out_ids.push_back(detail::freshId(id));
    } else if (id->isBroadcast()) {
      Scalar* expanded = c == 1 ? nullptr : want.toScalar();
      out_ids.push_back(IrBuilder::create<IterDomain>(
          id->start(), id->extent(), IterType::Broadcast, ir::ParallelType::Serial, expanded));
    } else if (id->isSymbolic()) {
      // 1 at run time: a broadcast expanded to `want`; otherwise it must already have that size.
      out_ids.push_back(IterDomain::create(want.toScalar(), IterType::Symbolic));
    } else {
      auto have = detail::constSize(id);
      LOOM_CHECK(!have || !c || *have == *c, "expand: dimension ", i, " of ", x->toString(), " ",
                 detail::shapeString(x), " has size ", *have,
                 " and is not a broadcast dimension; it cannot be expanded to ", *c,
                 " (only size-1 dimensions expand; use -1 to keep it)");
      // Sizes not both known: kept, and checked when a run binds them (keptExpandedDim).
      out_ids.push_back(have && c ? detail::freshId(id) : keptExpandedDim(kept, i, id, want));
    }
  }
  TensorView* out = detail::newTensor(std::move(out_ids), x->dtype());
  IrBuilder::create<ir::ExpandOp>(out, x);
  requireKeptSizes(x, out, kept);
  return out;
}

TensorView* permute(TensorView* x, const std::vector<int64_t>& dims) {
  auto in_ids = detail::dims(x);
  const auto rank = int64_t(in_ids.size());
  LOOM_CHECK(int64_t(dims.size()) == rank, "permute: ", x->toString(), " has rank ", rank,
             " but the permutation ", detail::shapeString(dims), " has ", dims.size(),
             " entries (expected the dims argument to have the same length as input)");
  auto perm = detail::normalizeDims(x, dims, rank, "permute");
  std::vector<int64_t> identity(static_cast<size_t>(rank));
  std::iota(identity.begin(), identity.end(), 0);
  if (perm == identity) return set(x);
  auto root = detail::freshIds(in_ids);
  std::vector<IterDomain*> logical;
  for (int64_t p : perm) logical.push_back(root[size_t(p)]);
  auto* td = IrBuilder::create<ir::TensorDomain>(root, logical, std::vector<IterDomain*>{},
                                                 std::vector<IterDomain*>{});
  auto* out = IrBuilder::create<TensorView>(td, x->dtype());
  IrBuilder::create<ir::LoadStoreOp>(ir::LoadStoreOpType::Set, out, x);
  return out;
}

TensorView* transpose(TensorView* x, int64_t dim0, int64_t dim1) {
  const int64_t rank = x->rank();
  int64_t a = detail::normalizeDim(x, dim0, rank, "transpose");
  int64_t b = detail::normalizeDim(x, dim1, rank, "transpose");
  std::vector<int64_t> perm(static_cast<size_t>(rank));
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[size_t(a)], perm[size_t(b)]);
  return permute(x, perm);
}

TensorView* set(TensorView* x) {
  TensorView* out = detail::newTensor(detail::freshIds(detail::dims(x)), x->dtype());
  IrBuilder::create<ir::LoadStoreOp>(ir::LoadStoreOpType::Set, out, x);
  return out;
}

TensorView* segmentSet(TensorView* x) {
  TensorView* out = detail::newTensor(detail::freshIds(detail::dims(x)), x->dtype());
  IrBuilder::create<ir::LoadStoreOp>(ir::LoadStoreOpType::Set, out, x, /*segment_boundary=*/true);
  return out;
}

TensorView* strideOrder(TensorView* x, const std::vector<int64_t>& stride_order) {
  TensorView* out = set(x);
  if (stride_order.empty()) return out;
  const auto ids = detail::dims(out);
  const auto rank = int64_t(ids.size());
  LOOM_CHECK(int64_t(stride_order.size()) == rank, "stride_order: ", stride_order.size(),
             " entries for ", x->toString(), " ", detail::shapeString(x), " of rank ", rank,
             "; give one place per dimension");
  // place[d]: dim d's place from the innermost. The allocation lists the dims outermost first.
  std::vector<IterDomain*> alloc(size_t(rank), nullptr);
  for (int64_t d = 0; d < rank; ++d) {
    int64_t place = stride_order[size_t(d)];
    if (place < 0 && place >= -rank) place += rank;
    LOOM_CHECK(place >= 0 && place < rank && alloc[size_t(rank - 1 - place)] == nullptr,
               "stride_order: ", detail::shapeString(stride_order), " is not a permutation of 0..",
               rank - 1, " (entry ", d, " is ", stride_order[size_t(d)], ")");
    alloc[size_t(rank - 1 - place)] = ids[size_t(d)];
  }
  out->setAllocationDomain(std::move(alloc));
  return out;
}

}  // namespace loom::ops
