// SPDX-License-Identifier: Apache-2.0
// Scans (ScanOp): cumsum, cumprod, cummax, cummin.
#include "loom/ops/scan.h"

#include "loom/ir/builder.h"
#include "loom/ir/exprs.h"
#include "loom/ops/arith.h"
#include "loom/ops/shape.h"
#include "ops/utils.h"

namespace loom::ops {
namespace {

using ir::IterDomain;

TensorView* scan(ir::ReductionOpType op, TensorView* x, int64_t dim, std::string_view name) {
  const bool accumulates = op == ir::ReductionOpType::Sum || op == ir::ReductionOpType::Prod;
  const DataType dt = accumulates && !isFloatingType(x->dtype()) ? DataType::Int64 : x->dtype();
  TensorView* in = cast(x, dt);
  const int64_t rank = x->rank();
  if (rank == 0) {
    detail::normalizeDim(x, dim, 1, name);  // dim 0 or -1, as torch
    return in == x ? set(x) : in;
  }
  const int64_t d = detail::normalizeDim(x, dim, rank, name);
  std::vector<IterDomain*> ids = detail::dims(in);
  const IterDomain* id = ids[size_t(d)];
  LOOM_CHECK(!id->hasExpandedExtent(), name, ": dimension ", dim, " of ", x->toString(), " ",
             detail::shapeString(x),
             " is an expanded broadcast; scanning it is not supported "
             "(materialize it first, e.g. by adding zeros of its shape)");
  // A scan along a size-1 dim is the element itself.
  if (id->isBroadcast()) return in == x ? set(x) : in;
  TensorView* out = detail::newTensor(detail::freshIds(ids), dt);
  ir::IrBuilder::create<ir::ScanOp>(op, out, in, d);
  return out;
}

}  // namespace

TensorView* cumsum(TensorView* x, int64_t dim) {
  return scan(ir::ReductionOpType::Sum, x, dim, "cumsum");
}
TensorView* cumprod(TensorView* x, int64_t dim) {
  return scan(ir::ReductionOpType::Prod, x, dim, "cumprod");
}
TensorView* cummax(TensorView* x, int64_t dim) {
  return scan(ir::ReductionOpType::Max, x, dim, "cummax");
}
TensorView* cummin(TensorView* x, int64_t dim) {
  return scan(ir::ReductionOpType::Min, x, dim, "cummin");
}

}  // namespace loom::ops
