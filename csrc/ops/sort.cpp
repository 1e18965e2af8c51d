// SPDX-License-Identifier: Apache-2.0
// Sorting ops (sort.h): ArgsortOp and TopKOp.
#include "loom/ops/sort.h"

#include "loom/ir/builder.h"
#include "loom/ir/exprs.h"
#include "ops/utils.h"

namespace loom::ops {
namespace {

// The normalized dim of a sort of x, after the checks every sort makes.
int64_t sortDimOf(const TensorView* x, int64_t dim, std::string_view op) {
  LOOM_CHECK(!isComplexType(x->dtype()), op, ": ", x->toString(), " is ", x->dtype(),
             "; complex values have no order");
  const auto ids = detail::dims(x);
  LOOM_CHECK(!ids.empty(), op, ": ", x->toString(),
             " is 0-dim; there is no dimension to sort along");
  const int64_t d = detail::normalizeDim(x, dim, int64_t(ids.size()), op);
  LOOM_CHECK(!ids[size_t(d)]->hasExpandedExtent(), op, ": dimension ", dim, " of ", x->toString(),
             " ", detail::shapeString(x),
             " is an expanded broadcast (one value repeated); sorting along it is not supported "
             "(materialize it first, e.g. by adding zeros of its shape)");
  return d;
}

}  // namespace

TensorView* argsort(TensorView* x, int64_t dim, bool descending) {
  const int64_t d = sortDimOf(x, dim, "argsort");
  TensorView* out = detail::newTensor(detail::freshIds(detail::dims(x)), DataType::Int64);
  ir::IrBuilder::create<ir::ArgsortOp>(out, x, d, descending);
  return out;
}

TopKResult topk(TensorView* x, Size k, int64_t dim, bool largest) {
  const int64_t d = sortDimOf(x, dim, "topk");
  const auto ids = detail::dims(x);
  if (auto kc = k.constant()) {
    LOOM_CHECK(*kc >= 0, "topk: k = ", *kc, " is negative; k counts the elements to keep ",
               "(Unexpected size of axis: ", *kc, ")");
    auto n = detail::constSize(ids[size_t(d)]);
    LOOM_CHECK(!n || *kc <= *n, "topk: k = ", *kc, " is larger than the size ", *n,
               " of dimension ", dim, " of ", x->toString(), " ", detail::shapeString(x),
               " (selected index k out of range)");
  }
  ir::Scalar* ks = k.toScalar();
  auto make = [&](DataType dt) {
    std::vector<ir::IterDomain*> out_ids = detail::freshIds(ids);
    // Along the sort dim: k elements, a dim of its own (not a broadcast, even for k = 1).
    out_ids[size_t(d)] = ir::IterDomain::create(ks);
    return detail::newTensor(std::move(out_ids), dt);
  };
  TopKResult r{make(x->dtype()), make(DataType::Int64)};
  ir::IrBuilder::create<ir::TopKOp>(r.values, r.indices, x, ks, d, largest);
  return r;
}

}  // namespace loom::ops
