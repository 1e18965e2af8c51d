// SPDX-License-Identifier: Apache-2.0
// grouped_mm as a composition (grouped_mm.h): the group of each index along the grouped extent is
// the number of offsets at or below it; a one-hot mask of it selects each row's (column's) own
// group's product, or zeroes the other groups' part of k.
#include "loom/ops/grouped_mm.h"

#include "loom/ops/arith.h"
#include "loom/ops/factory.h"
#include "loom/ops/matmul.h"
#include "loom/ops/reduction.h"
#include "loom/ops/shape.h"
#include "ops/utils.h"

namespace loom::ops {
namespace {

// [g, len] Bool: element (i, j) is true when index j of an extent of `len` is in group i, the
// group of j being the number of offsets <= j (so indices past the last offset are in none).
TensorView* groupMask(TensorView* offsets, ir::IterDomain* along) {
  ir::IterDomain* groups = detail::dims(offsets)[0];
  TensorView* idx = iota(Size(along->extent()));                // [len]
  TensorView* ends = cast(offsets, DataType::Int64);            // [g]
  TensorView* at_or_below = le(broadcast(ends, {false, true}),  // [g, len]
                               broadcast(idx, {true, false}));
  TensorView* group = sum(at_or_below, {0});       // [len] Int64
  TensorView* ids = iota(Size(groups->extent()));  // [g]
  return eq(broadcast(ids, {false, true}), broadcast(group, {true, false}));
}

// sum over dim 0 of `p` where `mask` (broadcast to p), else 0, in p's dtype: exactly one term
// (or none) is kept per element, so the f32 sum only carries the chosen product.
TensorView* selectGroup(TensorView* p, TensorView* mask) {
  return cast(sum(where(mask, p, 0.0), {0}), p->dtype());
}

}  // namespace

TensorView* groupedMm(TensorView* mat1, TensorView* mat2, TensorView* offsets) {
  const int64_t r1 = int64_t(detail::dims(mat1).size());
  const int64_t r2 = int64_t(detail::dims(mat2).size());
  for (auto [tv, r, name] : {std::tuple{mat1, r1, "mat1"}, std::tuple{mat2, r2, "mat2"}}) {
    LOOM_CHECK(r == 2 || r == 3, "grouped_mm: ", name, " ", tv->toString(), " ",
               detail::shapeString(tv), " has rank ", r, "; it takes 2-D or 3-D operands");
  }
  const bool batched = r1 == 3 && r2 == 3;
  LOOM_CHECK(batched || offsets != nullptr, "grouped_mm: ", mat1->toString(), " (rank ", r1,
             ") and ", mat2->toString(), " (rank ", r2, ") need offsets, the end of each group");
  LOOM_CHECK(!batched || offsets == nullptr, "grouped_mm: ", mat1->toString(), " and ",
             mat2->toString(), " are both 3-D (one product per group); offsets ",
             offsets == nullptr ? "" : offsets->toString(), " are only for a 2-D operand");
  if (batched) {
    LOOM_CHECK(detail::constSize(detail::dims(mat1)[0]) == detail::constSize(detail::dims(mat2)[0]),
               "grouped_mm: the group counts of ", mat1->toString(), " ", detail::shapeString(mat1),
               " and ", mat2->toString(), " ", detail::shapeString(mat2), " differ");
    return matmul(mat1, mat2);
  }
  LOOM_CHECK(int64_t(detail::dims(offsets).size()) == 1 && isIntegralType(offsets->dtype()),
             "grouped_mm: offsets ", offsets->toString(), " ", detail::shapeString(offsets), " ",
             offsets->dtype(), " must be a 1-D Int32 or Int64 tensor (each group's end)");
  if (r1 == 2 && r2 == 3) {
    // Every group's product [g, m, n]; row i keeps its group's.
    TensorView* p = matmul(mat1, mat2);
    TensorView* mask = groupMask(offsets, detail::dims(mat1)[0]);  // [g, m]
    return selectGroup(p, broadcast(mask, {false, false, true}));
  }
  if (r1 == 3 && r2 == 2) {
    // [g, m, n]; column j keeps its group's.
    TensorView* p = matmul(mat1, mat2);
    TensorView* mask = groupMask(offsets, detail::dims(mat2)[1]);  // [g, n]
    return selectGroup(p, broadcast(mask, {false, true, false}));
  }
  // 2-D x 2-D: group i multiplies its part of k. The other parts are zeroed in both operands,
  // so a product outside the group is 0 * 0: an inf or NaN there (which torch, slicing k per
  // group, never reads) stays out of the group's result instead of turning into a NaN.
  TensorView* mask = groupMask(offsets, detail::dims(mat1)[1]);  // [g, k]
  TensorView* parts1 = where(broadcast(mask, {false, true, false}),
                             broadcast(mat1, {true, false, false}), 0.0);  // [g, m, k]
  TensorView* parts2 = where(broadcast(mask, {false, false, true}),
                             broadcast(mat2, {true, false, false}), 0.0);  // [g, k, n]
  return matmul(cast(parts1, mat1->dtype()), cast(parts2, mat2->dtype()));
}

}  // namespace loom::ops
