// SPDX-License-Identifier: Apache-2.0
// slice, pad and cat: ops whose output root mirrors the input and whose logical IDs are Resize
// exprs of the root IDs (see SliceOp, PadOp and CatOp in exprs.h).
#include <algorithm>

#include "loom/ir/builder.h"
#include "loom/ir/exprs.h"
#include "loom/ir/scalar_math.h"
#include "loom/ops/arith.h"
#include "loom/ops/shape.h"
#include "loom/ops/type_promotion.h"
#include "ops/utils.h"

namespace loom::ops {
namespace {

using ir::IrBuilder;
using ir::IterDomain;
namespace sm = ir::scalar_math;

// A slice bound normalized as Python does: negative values add the extent, then the result is
// clamped to [0, extent]. Constants fold; a bound that is the extent Scalar itself stays it.
Scalar* normalizeBound(const Size& bound, Scalar* extent) {
  auto b = bound.constant();
  auto e = extent->constInt();
  if (b && e) {
    int64_t v = *b < 0 ? *b + *e : *b;
    return IrBuilder::index(std::clamp<int64_t>(v, 0, *e));
  }
  if (bound.scalar() == extent) return extent;
  Scalar* zero = IrBuilder::index(0);
  if (b && *b == 0) return zero;  // extents are never negative
  if (b && *b > 0) return sm::min(IrBuilder::index(*b), extent);
  if (b) return sm::max(sm::add(IrBuilder::index(*b), extent), zero);
  Scalar* s = bound.toScalar();
  Scalar* wrapped = sm::where(sm::lt(s, zero), sm::add(s, extent), s);
  return sm::min(sm::max(wrapped, zero), extent);
}

// Whether two index Scalars are known to be equal now.
bool sameValue(Scalar* a, Scalar* b) {
  if (a == b) return true;
  auto x = a->constInt();
  auto y = b->constInt();
  return x && y && *x == *y;
}

// The TensorView over `root` and `logical` (no allocation, default contiguity).
TensorView* rootedTensor(std::vector<IterDomain*> root, std::vector<IterDomain*> logical,
                         DataType dtype) {
  auto* td = IrBuilder::create<ir::TensorDomain>(
      std::move(root), std::move(logical), std::vector<IterDomain*>{}, std::vector<IterDomain*>{});
  return IrBuilder::create<TensorView>(td, dtype);
}

// One PadOp over x with (left, right) widths per dim (nullptr: that dim is not resized).
TensorView* buildPad(TensorView* x, const std::vector<std::pair<Scalar*, Scalar*>>& widths,
                     Scalar* value) {
  auto root = detail::freshIds(detail::dims(x));
  std::vector<IterDomain*> logical = root;
  for (size_t d = 0; d < root.size(); ++d) {
    if (widths[d].first == nullptr) continue;
    logical[d] = IterDomain::resize(root[d], widths[d].first, widths[d].second, true);
  }
  TensorView* out = rootedTensor(std::move(root), std::move(logical), x->dtype());
  IrBuilder::create<ir::PadOp>(out, x, value);
  return out;
}

}  // namespace

TensorView* slice(TensorView* x, const SizeList& starts, const SizeList& stops,
                  const std::vector<int64_t>& steps) {
  auto ids = detail::dims(x);
  const size_t rank = ids.size();
  LOOM_CHECK(starts.size() == rank && stops.size() == rank, "slice: ", x->toString(), " ",
             detail::shapeString(x), " has rank ", rank, " but ", starts.size(), " starts and ",
             stops.size(), " stops were given (one of each per dimension). ",
             starts.size() != rank
                 ? "Number of tensor dimensions does not match slice dimensions! Tensor-dims: " +
                       std::to_string(rank) + " Slice-dims: " + std::to_string(starts.size())
                 : "Slice indexing attribute dimensions don't match! Start Indices: " +
                       std::to_string(starts.size()) +
                       " End Indices: " + std::to_string(stops.size()));
  LOOM_CHECK(steps.empty() || steps.size() == rank, "slice: ", x->toString(), " has rank ", rank,
             " but ", steps.size(), " steps were given");
  for (size_t d = 0; d < steps.size(); ++d) {
    LOOM_CHECK(steps[d] == 1, "slice: step ", steps[d], " at dimension ", d, " of ", x->toString(),
               " ", detail::shapeString(x), " is not supported (only step 1)");
  }
  auto root = detail::freshIds(ids);
  std::vector<IterDomain*> logical = root;
  bool any = false;
  for (size_t d = 0; d < rank; ++d) {
    Scalar* extent = root[d]->logicalExtent();
    Scalar* start = normalizeBound(starts[d], extent);
    Scalar* stop = normalizeBound(stops[d], extent);
    // An empty range when stop < start (start <= extent, so a stop at the extent stays).
    if (!start->isConstInt(0) && stop != extent) stop = sm::max(stop, start);
    if (start->isConstInt(0) && sameValue(stop, extent)) continue;
    logical[d] = IterDomain::resize(root[d], sm::sub(IrBuilder::index(0), start),
                                    sm::sub(stop, extent), true);
    any = true;
  }
  if (!any) return set(x);
  TensorView* out = rootedTensor(std::move(root), std::move(logical), x->dtype());
  IrBuilder::create<ir::SliceOp>(out, x);
  return out;
}

TensorView* slice(TensorView* x, int64_t dim, Size start, Size stop, int64_t step) {
  const int64_t rank = x->rank();
  int64_t d = detail::normalizeDim(x, dim, rank, "slice");
  std::vector<Size> starts(size_t(rank), Size(0));
  std::vector<Size> stops;
  std::vector<int64_t> steps(size_t(rank), 1);
  for (IterDomain* id : detail::dims(x)) stops.emplace_back(id->logicalExtent());
  starts[size_t(d)] = start;
  stops[size_t(d)] = stop;
  steps[size_t(d)] = step;
  return slice(x, starts, stops, steps);
}

TensorView* pad(TensorView* x, const SizeList& widths, Operand value) {
  auto ids = detail::dims(x);
  const size_t rank = ids.size();
  LOOM_CHECK(widths.size() % 2 == 0, "pad: the widths ", widths.toString(), " for ", x->toString(),
             " must come in (left, right) pairs, got ", widths.size(),
             " values (Invalid number of padding widths)");
  LOOM_CHECK(widths.size() / 2 <= rank, "pad: ", widths.size() / 2, " (left, right) pairs ",
             widths.toString(), " for ", x->toString(), " ", detail::shapeString(x), " of rank ",
             rank,
             " (at most one pair per dimension: Number of pad widths must be at most "
             "twice the input dimension)");
  Scalar* fill = detail::scalarOperand(value.val(), x->dtype(), "pad", "the pad value");
  std::vector<std::pair<Scalar*, Scalar*>> per_dim(rank, {nullptr, nullptr});
  bool any = false;
  for (size_t k = 0; k < widths.size() / 2; ++k) {
    const size_t d = rank - 1 - k;
    const Size& left = widths[2 * k];
    const Size& right = widths[2 * k + 1];
    if (left.constant() == 0 && right.constant() == 0) continue;
    auto extent = ids[d]->logicalExtent()->constInt();
    if (extent && left.isConst() && right.isConst()) {
      int64_t size = *left.constant() + *extent + *right.constant();
      LOOM_CHECK(size >= 0, "pad: padding dimension ", d, " of ", x->toString(), " ",
                 detail::shapeString(x), " by (", *left.constant(), ", ", *right.constant(),
                 ") gives the negative size ", size, " (Invalid resized domain extent)");
    }
    per_dim[d] = {left.toScalar(), right.toScalar()};
    any = true;
  }
  if (!any) return set(x);
  return buildPad(x, per_dim, fill);
}

TensorView* cat(const std::vector<TensorView*>& xs, int64_t dim) {
  LOOM_CHECK(!xs.empty(),
             "cat: needs at least one tensor (Attempting to concatenate empty list "
             "of tensors)");
  for (TensorView* x : xs) LOOM_CHECK(x != nullptr, "cat: a tensor is null");
  const int64_t rank = xs[0]->rank();
  LOOM_CHECK(rank > 0, "cat: zero-dimensional tensor ", xs[0]->toString(),
             " cannot be concatenated");
  for (TensorView* x : xs) {
    LOOM_CHECK(x->rank() == rank, "cat: ", x->toString(), " ", detail::shapeString(x), " has rank ",
               x->rank(), " but ", xs[0]->toString(), " ", detail::shapeString(xs[0]), " has rank ",
               rank, " (every input must have the same rank: Unexpected number of dimensions)");
  }
  const int64_t d = detail::normalizeDim(xs[0], dim, rank, "cat");
  // Sizes other than at `dim` must be equal; symbolic ones are checked at run time.
  for (int64_t k = 0; k < rank; ++k) {
    if (k == d) continue;
    auto first = detail::constSize(detail::dims(xs[0])[size_t(k)]);
    for (TensorView* x : xs) {
      auto other = detail::constSize(detail::dims(x)[size_t(k)]);
      LOOM_CHECK(!first || !other || *first == *other, "cat: sizes of ", xs[0]->toString(), " ",
                 detail::shapeString(xs[0]), " and ", x->toString(), " ", detail::shapeString(x),
                 " do not match at dimension ", k, " (", *first, " vs ", *other,
                 "); only dimension ", d, " may differ");
    }
  }
  std::vector<Operand> operands(xs.begin(), xs.end());
  const DataType dtype = resultType(operands);
  std::vector<TensorView*> inputs;
  for (TensorView* x : xs) inputs.push_back(cast(x, dtype));
  if (inputs.size() == 1) return set(inputs[0]);

  // Input k covers [left_k, left_k + extent_k) of the output along d.
  std::vector<Scalar*> extents;
  for (TensorView* x : inputs) extents.push_back(detail::dims(x)[size_t(d)]->logicalExtent());
  std::vector<Scalar*> before(inputs.size()), after(inputs.size());
  Scalar* acc = IrBuilder::index(0);
  for (size_t k = 0; k < inputs.size(); ++k) {
    before[k] = acc;
    acc = sm::add(acc, extents[k]);
  }
  Scalar* total = acc;
  acc = IrBuilder::index(0);
  for (size_t k = inputs.size(); k-- > 0;) {
    after[k] = acc;
    acc = sm::add(acc, extents[k]);
  }
  Scalar* zero = detail::castScalar(IrBuilder::index(0), dtype);
  std::vector<TensorView*> padded;
  for (size_t k = 0; k < inputs.size(); ++k) {
    std::vector<std::pair<Scalar*, Scalar*>> widths(size_t(rank), {nullptr, nullptr});
    widths[size_t(d)] = {before[k], after[k]};
    padded.push_back(buildPad(inputs[k], widths, zero));
  }
  // Output IDs: the other dims as a pointwise op over the padded inputs would make them (sizes
  // are equal), the cat dim a fresh Iteration ID of the total extent.
  std::vector<IterDomain*> out_ids = detail::broadcastOutputIds(padded, "cat");
  out_ids[size_t(d)] = IterDomain::create(total);
  TensorView* out = detail::newTensor(std::move(out_ids), dtype);
  IrBuilder::create<ir::CatOp>(out, padded, d);
  return out;
}

}  // namespace loom::ops
