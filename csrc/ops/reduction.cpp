// SPDX-License-Identifier: Apache-2.0
// Reductions, Welford, and the statistics built on them (mean, variance, varMean).
//
// A reduction's output keeps every non-reduction logical ID of its input (cloned) and turns each
// reduced one into a Reduction ID whose extent is the input's user-visible size (an expanded
// broadcast reduces over its expanded extent). keepdim is a BroadcastOp after the reduction.
#include "loom/ops/reduction.h"

#include <algorithm>

#include "loom/ir/builder.h"
#include "loom/ir/complex_ops.h"
#include "loom/ir/exprs.h"
#include "loom/ops/arith.h"
#include "loom/ops/factory.h"
#include "loom/ops/shape.h"
#include "ops/utils.h"

namespace loom::ops {
namespace {

using ir::IrBuilder;
using ir::IterDomain;
using ir::IterType;
using ir::ReductionOpType;

// Normalized, sorted axes; an empty list means every dimension.
std::vector<int64_t> reductionAxes(const TensorView* x, const std::vector<int64_t>& axes,
                                   std::string_view op) {
  const int64_t rank = x->rank();
  LOOM_CHECK(rank > 0 || axes.empty(), op, ": cannot reduce 0-D tensor ", x->toString(),
             " over axis ", axes.empty() ? 0 : axes.front(), "; a 0-D tensor has no dimensions");
  std::vector<int64_t> out;
  if (axes.empty()) {
    for (int64_t i = 0; i < rank; ++i) out.push_back(i);
    return out;
  }
  out = detail::normalizeDims(x, axes, rank, op, detail::DimRole::kReduction);
  std::sort(out.begin(), out.end());
  return out;
}

// Fresh output IDs for reducing `x` over sorted `axes`.
std::vector<IterDomain*> reducedIds(const TensorView* x, const std::vector<int64_t>& axes) {
  auto ids = detail::dims(x);
  std::vector<IterDomain*> out;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (!std::binary_search(axes.begin(), axes.end(), int64_t(i))) {
      out.push_back(detail::freshId(ids[i]));
      continue;
    }
    out.push_back(IrBuilder::create<IterDomain>(ids[i]->start(), ids[i]->logicalExtent(),
                                                IterType::Reduction));
  }
  return out;
}

std::vector<bool> keepdimFlags(int64_t rank, const std::vector<int64_t>& axes) {
  std::vector<bool> flags(size_t(rank), false);
  for (int64_t a : axes) flags[size_t(a)] = true;
  return flags;
}

TensorView* maybeKeepdim(TensorView* out, int64_t rank, const std::vector<int64_t>& axes,
                         bool keepdim) {
  if (!keepdim || axes.empty()) return out;
  return broadcast(out, keepdimFlags(rank, axes));
}

TensorView* reduce(ReductionOpType op, TensorView* x, const std::vector<int64_t>& axes,
                   bool keepdim, DataType out_dtype) {
  auto red_axes = reductionAxes(x, axes, ir::opTypeName(op));
  LOOM_CHECK(!isComplexType(out_dtype) || ir::isComplexOp(op), ir::opTypeName(op), ": ",
             x->toString(), " is ", x->dtype(), ", and ", ir::opTypeName(op),
             " is not defined for complex values (they have no order)");
  TensorView* in = cast(x, out_dtype);
  // A 0-D tensor reduced over "every dimension" reduces nothing: the value itself.
  if (red_axes.empty()) return in == x ? set(x) : in;
  TensorView* out = detail::newTensor(reducedIds(in, red_axes), out_dtype);
  IrBuilder::create<ir::ReductionOp>(
      op, IrBuilder::constant(ir::reductionIdentity(op, out_dtype), out_dtype), out, in);
  return maybeKeepdim(out, x->rank(), red_axes, keepdim);
}

// Sum and prod accumulate bools and integers in Int64 and half types in Float32.
DataType accumulateType(DataType t) {
  if (isComplexType(t)) return t;
  if (!isFloatingType(t)) return DataType::Int64;
  if (isReducedPrecision(t)) return DataType::Float32;
  return t;
}

// The floating (or complex: mean) type statistics are computed in.
DataType statsType(DataType t) {
  if (isComplexType(t)) return t;
  return t == DataType::Float64 ? t : DataType::Float32;
}
// The type statistics are returned in: the input's floating type, Float32 for integers.
DataType statsResultType(DataType t) {
  return isFloatingType(t) || isComplexType(t) ? t : DataType::Float32;
}

// Variances and Welford statistics are real: a complex input is a UserError naming the op.
void checkNotComplex(const TensorView* x, std::string_view op) {
  LOOM_CHECK(!isComplexType(x->dtype()), op, ": ", x->toString(), " is ", x->dtype(), "; ", op,
             " is not defined for complex values (take real, imag or abs first)");
}

// max(N - correction, 0) as a Scalar of `dtype`: a constant when N is one, else scalar math.
Scalar* correctedCount(Scalar* n, double correction, DataType dtype) {
  if (auto c = n->constInt()) {
    return IrBuilder::constant(std::max(double(*c) - correction, 0.0), dtype);
  }
  Scalar* nf = IrBuilder::symbolic(dtype);
  IrBuilder::create<ir::UnaryOp>(ir::UnaryOpType::Cast, nf, n);
  Scalar* diff = IrBuilder::symbolic(dtype);
  IrBuilder::create<ir::BinaryOp>(ir::BinaryOpType::Sub, diff, nf,
                                  IrBuilder::constant(correction, dtype));
  Scalar* out = IrBuilder::symbolic(dtype);
  IrBuilder::create<ir::BinaryOp>(ir::BinaryOpType::Max, out, diff,
                                  IrBuilder::constant(0.0, dtype));
  return out;
}

// argmax (largest) / argmin along normalized `d` of x (rank >= 1).
TensorView* argExtremeAlong(TensorView* x, int64_t d, bool largest, bool keepdim) {
  Scalar* n = detail::numElements(x, {d});
  // The positions along d as a tensor that broadcasts against x.
  std::vector<bool> others(size_t(x->rank()), true);
  others[size_t(d)] = false;
  TensorView* pos = iota(n, int64_t(0), int64_t(1), DataType::Int64);
  if (x->rank() > 1) pos = broadcast(pos, others);
  // max/min propagate NaN: a row holding a NaN has m = NaN, matches no x == m, and its candidates
  // are exactly its NaNs; a row without one has its first extreme value as first candidate.
  TensorView* m = largest ? max(x, {d}, /*keepdim=*/true) : min(x, {d}, /*keepdim=*/true);
  TensorView* hit = eq(x, m);
  if (isFloatingType(x->dtype())) hit = logicalOr(hit, isNan(x));
  return min(where(hit, pos, n), {d}, keepdim);
}

TensorView* argExtreme(TensorView* x, std::optional<int64_t> dim, bool keepdim, bool largest) {
  const char* op = largest ? "argmax" : "argmin";
  LOOM_CHECK(!isBooleanType(x->dtype()), op, ": ", x->toString(),
             " is Bool; argmax and argmin take numbers (cast it first)");
  const int64_t rank = x->rank();
  if (!dim.has_value()) {
    // Flattened: the index into x's row-major order.
    TensorView* flat = reshape(x, std::vector<int64_t>{-1});
    TensorView* r = argExtremeAlong(flat, 0, largest, /*keepdim=*/false);
    if (keepdim && rank > 0) r = broadcast(r, std::vector<bool>(size_t(rank), true));
    return r;
  }
  if (rank == 0) {
    detail::normalizeDim(x, *dim, 1, op);  // a 0-D tensor takes dim 0 or -1, as in torch
    return argExtremeAlong(reshape(x, std::vector<int64_t>{1}), 0, largest, /*keepdim=*/false);
  }
  return argExtremeAlong(x, detail::normalizeDim(x, *dim, rank, op), largest, keepdim);
}

}  // namespace

TensorView* argmax(TensorView* x, std::optional<int64_t> dim, bool keepdim) {
  return argExtreme(x, dim, keepdim, /*largest=*/true);
}
TensorView* argmin(TensorView* x, std::optional<int64_t> dim, bool keepdim) {
  return argExtreme(x, dim, keepdim, /*largest=*/false);
}

TensorView* sum(TensorView* x, const std::vector<int64_t>& axes, bool keepdim) {
  return reduce(ReductionOpType::Sum, x, axes, keepdim, accumulateType(x->dtype()));
}
TensorView* prod(TensorView* x, const std::vector<int64_t>& axes, bool keepdim) {
  return reduce(ReductionOpType::Prod, x, axes, keepdim, accumulateType(x->dtype()));
}
TensorView* max(TensorView* x, const std::vector<int64_t>& axes, bool keepdim) {
  return reduce(ReductionOpType::Max, x, axes, keepdim, x->dtype());
}
TensorView* min(TensorView* x, const std::vector<int64_t>& axes, bool keepdim) {
  return reduce(ReductionOpType::Min, x, axes, keepdim, x->dtype());
}

WelfordResult welford(TensorView* x, const std::vector<int64_t>& axes) {
  checkNotComplex(x, "welford");
  auto red_axes = reductionAxes(x, axes, "welford");
  DataType ct = statsType(x->dtype());
  TensorView* xc = cast(x, ct);
  // Siblings share one shape but never an IterDomain object.
  auto avg = detail::newTensor(reducedIds(xc, red_axes), ct);
  auto m2 = detail::newTensor(reducedIds(xc, red_axes), ct);
  auto n = detail::newTensor(reducedIds(xc, red_axes), DataType::Int64);
  IrBuilder::create<ir::WelfordOp>(
      avg, m2, n, xc, IrBuilder::constant(0.0, ct), IrBuilder::constant(int64_t(1)),
      IrBuilder::constant(0.0, ct), IrBuilder::constant(0.0, ct), IrBuilder::constant(int64_t(0)));
  return {avg, m2, n};
}

WelfordResult welfordCombine(TensorView* avg, TensorView* m2, TensorView* n,
                             const std::vector<int64_t>& axes) {
  auto red_axes = reductionAxes(avg, axes, "welfordCombine");
  LOOM_CHECK(m2->dtype() == avg->dtype() && n->dtype() == DataType::Int64,
             "welfordCombine: expected avg and m2 of one floating type and an Int64 n, got ",
             avg->dtype(), ", ", m2->dtype(), ", ", n->dtype());
  const DataType ct = avg->dtype();
  auto out_avg = detail::newTensor(reducedIds(avg, red_axes), ct);
  auto out_m2 = detail::newTensor(reducedIds(avg, red_axes), ct);
  auto out_n = detail::newTensor(reducedIds(avg, red_axes), DataType::Int64);
  IrBuilder::create<ir::WelfordOp>(out_avg, out_m2, out_n, avg, m2, n,
                                   IrBuilder::constant(0.0, ct), IrBuilder::constant(0.0, ct),
                                   IrBuilder::constant(int64_t(0)));
  return {out_avg, out_m2, out_n};
}

TensorView* mean(TensorView* x, const std::vector<int64_t>& axes, bool keepdim) {
  auto red_axes = reductionAxes(x, axes, "mean");
  TensorView* xc = cast(x, statsType(x->dtype()));
  TensorView* s = sum(xc, red_axes, keepdim);
  TensorView* m = div(s, detail::numElements(x, red_axes));
  return cast(m, statsResultType(x->dtype()));
}

TensorView* variance(TensorView* x, const std::vector<int64_t>& axes, double correction,
                     bool keepdim) {
  checkNotComplex(x, "variance");
  auto red_axes = reductionAxes(x, axes, "variance");
  DataType ct = statsType(x->dtype());
  TensorView* xc = cast(x, ct);
  Scalar* n = detail::numElements(x, red_axes);
  TensorView* m = div(sum(xc, red_axes, /*keepdim=*/true), n);
  TensorView* d = sub(xc, m);
  TensorView* ss = sum(mul(d, d), red_axes, keepdim);
  TensorView* var = div(ss, correctedCount(n, correction, ct));
  return cast(var, statsResultType(x->dtype()));
}

VarMeanResult varMean(TensorView* x, const std::vector<int64_t>& axes, double correction,
                      bool keepdim) {
  checkNotComplex(x, "varMean");
  auto red_axes = reductionAxes(x, axes, "varMean");
  DataType ct = statsType(x->dtype());
  WelfordResult w = welford(x, red_axes);
  Scalar* n = detail::numElements(x, red_axes);
  TensorView* var = div(w.m2, correctedCount(n, correction, ct));
  TensorView* avg = w.avg;
  var = maybeKeepdim(var, x->rank(), red_axes, keepdim);
  avg = maybeKeepdim(avg, x->rank(), red_axes, keepdim);
  DataType rt = statsResultType(x->dtype());
  return {cast(var, rt), cast(avg, rt)};
}

}  // namespace loom::ops
