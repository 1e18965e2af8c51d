// SPDX-License-Identifier: Apache-2.0
// Composite ops (softmax, layer norm, RMS norm, bias + GELU) built from primitive ops. They compute
// in Float32 (Float64 for Float64 inputs) and cast their main output back to the input's dtype.
#include "loom/ops/composite.h"

#include "loom/ops/reduction.h"
#include "ops/utils.h"

namespace loom::ops {
namespace {

DataType computeFloat(DataType t) { return t == DataType::Float64 ? t : DataType::Float32; }
// The main output's dtype: the input's floating type, Float32 for integer and bool inputs.
DataType outputFloat(DataType t) { return isFloatingType(t) ? t : DataType::Float32; }

// The last `n` dims of x, normalized; n must be in [1, rank].
std::vector<int64_t> lastDims(TensorView* x, int64_t n, std::string_view op) {
  const int64_t rank = x->rank();
  LOOM_CHECK(n >= 1 && n <= rank, op, ": normalized_ndims ", n, " must be between 1 and the rank ",
             rank, " of ", x->toString(), " ", detail::shapeString(x));
  std::vector<int64_t> axes;
  for (int64_t a = rank - n; a < rank; ++a) axes.push_back(a);
  return axes;
}

// weight / bias must have exactly the normalized dims of x.
void checkAffine(TensorView* x, int64_t n, TensorView* param, const char* what,
                 std::string_view op) {
  if (param == nullptr) return;
  LOOM_CHECK(param->rank() == n, op, ": ", what, " ", param->toString(), " ",
             detail::shapeString(param), " must have rank ", n,
             " (the normalized dimensions of ", x->toString(), " ", detail::shapeString(x), ")");
  auto xi = detail::dims(x);
  auto pi = detail::dims(param);
  for (int64_t i = 0; i < n; ++i) {
    auto a = detail::constSize(xi[size_t(x->rank() - n + i)]);
    auto b = detail::constSize(pi[size_t(i)]);
    LOOM_CHECK(!a || !b || *a == *b, op, ": ", what, " ", param->toString(), " ",
               detail::shapeString(param), " does not match the normalized dimensions of ",
               x->toString(), " ", detail::shapeString(x), ": dimension ", i, " has size ", *b,
               ", expected ", *a);
  }
}

}  // namespace

TensorView* softmax(TensorView* x, int64_t dim) {
  int64_t d = detail::normalizeDim(x, dim, x->rank(), "softmax");
  TensorView* xc = cast(x, computeFloat(x->dtype()));
  TensorView* e = exp(sub(xc, max(xc, {d}, /*keepdim=*/true)));
  TensorView* y = div(e, sum(e, {d}, /*keepdim=*/true));
  return cast(y, outputFloat(x->dtype()));
}

TensorView* logSoftmax(TensorView* x, int64_t dim) {
  int64_t d = detail::normalizeDim(x, dim, x->rank(), "logSoftmax");
  TensorView* xc = cast(x, computeFloat(x->dtype()));
  TensorView* shifted = sub(xc, max(xc, {d}, /*keepdim=*/true));
  TensorView* y = sub(shifted, log(sum(exp(shifted), {d}, /*keepdim=*/true)));
  return cast(y, outputFloat(x->dtype()));
}

LayerNormResult layerNorm(TensorView* x, int64_t normalized_ndims, TensorView* weight,
                          TensorView* bias, double eps) {
  auto axes = lastDims(x, normalized_ndims, "layerNorm");
  checkAffine(x, normalized_ndims, weight, "weight", "layerNorm");
  checkAffine(x, normalized_ndims, bias, "bias", "layerNorm");
  TensorView* xc = cast(x, computeFloat(x->dtype()));
  // Biased variance (correction 0) from one Welford pass, as torch.layer_norm.
  VarMeanResult vm = varMean(xc, axes, /*correction=*/0.0, /*keepdim=*/true);
  TensorView* rstd = rsqrt(add(vm.var, eps));
  TensorView* y = mul(sub(xc, vm.mean), rstd);
  if (weight != nullptr) y = mul(y, weight);
  if (bias != nullptr) y = add(y, bias);
  return {cast(y, outputFloat(x->dtype())), vm.mean, rstd};
}

TensorView* rmsNorm(TensorView* x, int64_t normalized_ndims, TensorView* weight, double eps) {
  auto axes = lastDims(x, normalized_ndims, "rmsNorm");
  checkAffine(x, normalized_ndims, weight, "weight", "rmsNorm");
  TensorView* xc = cast(x, computeFloat(x->dtype()));
  TensorView* ms = mean(mul(xc, xc), axes, /*keepdim=*/true);
  TensorView* y = mul(xc, rsqrt(add(ms, eps)));
  if (weight != nullptr) y = mul(y, weight);
  return cast(y, outputFloat(x->dtype()));
}

TensorView* biasGelu(TensorView* x, TensorView* bias, GeluApproximation approximation) {
  LOOM_CHECK(bias != nullptr, "biasGelu: bias of ", x->toString(), " is nullptr");
  LOOM_CHECK(bias->rank() <= x->rank(), "biasGelu: bias ", bias->toString(), " ",
             detail::shapeString(bias), " has a higher rank than ", x->toString(), " ",
             detail::shapeString(x));
  TensorView* y = gelu(add(cast(x, computeFloat(x->dtype())), bias), approximation);
  return cast(y, outputFloat(x->dtype()));
}

}  // namespace loom::ops
