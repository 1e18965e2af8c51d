// SPDX-License-Identifier: Apache-2.0
// Composite ops (softmax, layer norm, RMS norm, bias + GELU) built from primitive ops. They compute
// in Float32 (Float64 for Float64 inputs) and cast their main output back to the input's dtype.
#include "loom/ops/composite.h"

#include "loom/ops/reduction.h"
#include "ops/utils.h"

namespace loom::ops {
namespace {

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
  TensorView* xc = cast(x, detail::computeFloat(x->dtype()));
  TensorView* e = exp(sub(xc, max(xc, {d}, /*keepdim=*/true)));
  TensorView* y = div(e, sum(e, {d}, /*keepdim=*/true));
  return cast(y, detail::outputFloat(x->dtype()));
}

TensorView* logSoftmax(TensorView* x, int64_t dim) {
  int64_t d = detail::normalizeDim(x, dim, x->rank(), "logSoftmax");
  TensorView* xc = cast(x, detail::computeFloat(x->dtype()));
  TensorView* shifted = sub(xc, max(xc, {d}, /*keepdim=*/true));
  TensorView* y = sub(shifted, log(sum(exp(shifted), {d}, /*keepdim=*/true)));
  return cast(y, detail::outputFloat(x->dtype()));
}

LayerNormResult layerNorm(TensorView* x, int64_t normalized_ndims, TensorView* weight,
                          TensorView* bias, double eps) {
  auto axes = detail::lastDims(x, normalized_ndims, "layerNorm");
  checkAffine(x, normalized_ndims, weight, "weight", "layerNorm");
  checkAffine(x, normalized_ndims, bias, "bias", "layerNorm");
  TensorView* xc = cast(x, detail::computeFloat(x->dtype()));
  // Biased variance (correction 0) from one Welford pass, as torch.layer_norm.
  VarMeanResult vm = varMean(xc, axes, /*correction=*/0.0, /*keepdim=*/true);
  TensorView* rstd = rsqrt(add(vm.var, eps));
  TensorView* y = mul(sub(xc, vm.mean), rstd);
  if (weight != nullptr) y = mul(y, weight);
  if (bias != nullptr) y = add(y, bias);
  return {cast(y, detail::outputFloat(x->dtype())), vm.mean, rstd};
}

TensorView* rmsNorm(TensorView* x, int64_t normalized_ndims, TensorView* weight, double eps) {
  auto axes = detail::lastDims(x, normalized_ndims, "rmsNorm");
  checkAffine(x, normalized_ndims, weight, "weight", "rmsNorm");
  TensorView* xc = cast(x, detail::computeFloat(x->dtype()));
  TensorView* ms = mean(mul(xc, xc), axes, /*keepdim=*/true);
  TensorView* y = mul(xc, rsqrt(add(ms, eps)));
  if (weight != nullptr) y = mul(y, weight);
  return cast(y, detail::outputFloat(x->dtype()));
}

TensorView* biasGelu(TensorView* x, TensorView* bias, GeluApproximation approximation) {
  LOOM_CHECK(bias != nullptr, "biasGelu: bias of ", x->toString(), " is nullptr");
  LOOM_CHECK(bias->rank() <= x->rank(), "biasGelu: bias ", bias->toString(), " ",
             detail::shapeString(bias), " has a higher rank than ", x->toString(), " ",
             detail::shapeString(x));
  TensorView* y = gelu(add(cast(x, detail::computeFloat(x->dtype())), bias), approximation);
  return cast(y, detail::outputFloat(x->dtype()));
}

}  // namespace loom::ops
