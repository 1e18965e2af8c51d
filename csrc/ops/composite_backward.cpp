// SPDX-License-Identifier: Apache-2.0
// Backward and loss composites (softmax, log-softmax, layer norm, RMS norm, gelu, silu backward;
// cross entropy and its gradient) built from primitive ops, so every scheduler runs them.
#include <cmath>
#include <numbers>

#include "loom/ops/composite.h"
#include "loom/ops/factory.h"
#include "loom/ops/reduction.h"
#include "loom/ops/shape.h"
#include "ops/utils.h"

namespace loom::ops {
namespace {

TensorView* compute(TensorView* x) { return cast(x, detail::computeFloat(x->dtype())); }

// The leading dims of x that a norm's weight and bias are broadcast along.
std::vector<int64_t> leadingDims(const TensorView* x, int64_t normalized_ndims) {
  std::vector<int64_t> axes;
  for (int64_t a = 0; a < x->rank() - normalized_ndims; ++a) axes.push_back(a);
  return axes;
}

// sum over the leading dims (a parameter's gradient); the tensor itself when there are none.
TensorView* sumLeading(TensorView* t, int64_t normalized_ndims) {
  std::vector<int64_t> axes = leadingDims(t, normalized_ndims);
  return axes.empty() ? t : sum(t, axes);
}

void checkSameRank(TensorView* grad, TensorView* x, std::string_view op, const char* what) {
  LOOM_CHECK(grad->rank() == x->rank(), op, ": grad ", grad->toString(), " ",
             detail::shapeString(grad), " must have the rank of ", what, " ", x->toString(), " ",
             detail::shapeString(x));
}

// The logits and target of a cross entropy, checked; returns the one-hot mask [N, C] (Bool)
// and the valid-row mask [N] (Bool).
struct CrossEntropyParts {
  TensorView* x;       ///< logits in the compute type
  TensorView* onehot;  ///< [N, C]: column == target
  TensorView* valid;   ///< [N]: target != ignore_index
};
CrossEntropyParts crossEntropyParts(TensorView* logits, TensorView* target, int64_t ignore_index,
                                    std::string_view op) {
  LOOM_CHECK(logits->rank() == 2, op, ": logits ", logits->toString(), " ",
             detail::shapeString(logits), " must be [N, C] (rank 2)");
  LOOM_CHECK(target->rank() == 1, op, ": target ", target->toString(), " ",
             detail::shapeString(target), " must be [N] (rank 1) class indices");
  LOOM_CHECK(isIntegralType(target->dtype()) && !isBooleanType(target->dtype()), op, ": target ",
             target->toString(),
             " holds class indices and must be an integer "
             "tensor, got ",
             target->dtype());
  auto n_logits = detail::constSize(detail::dims(logits)[0]);
  auto n_target = detail::constSize(detail::dims(target)[0]);
  LOOM_CHECK(!n_logits || !n_target || *n_logits == *n_target, op, ": target ", target->toString(),
             " has ", n_target.value_or(0), " rows, logits ", logits->toString(), " has ",
             n_logits.value_or(0));
  TensorView* t = cast(target, DataType::Int64);
  TensorView* classes = broadcast(iota(detail::numElements(logits, {1})), {true, false});
  TensorView* onehot = eq(classes, broadcast(t, {false, true}));
  return {compute(logits), onehot, ne(t, ignore_index)};
}

}  // namespace

TensorView* softmaxBackward(TensorView* grad, TensorView* y, int64_t dim) {
  checkSameRank(grad, y, "softmaxBackward", "y");
  int64_t d = detail::normalizeDim(y, dim, y->rank(), "softmaxBackward");
  TensorView* g = compute(grad);
  TensorView* yc = compute(y);
  TensorView* dot = sum(mul(g, yc), {d}, /*keepdim=*/true);
  return cast(mul(yc, sub(g, dot)), detail::outputFloat(y->dtype()));
}

TensorView* logSoftmaxBackward(TensorView* grad, TensorView* y, int64_t dim) {
  checkSameRank(grad, y, "logSoftmaxBackward", "y");
  int64_t d = detail::normalizeDim(y, dim, y->rank(), "logSoftmaxBackward");
  TensorView* g = compute(grad);
  TensorView* total = sum(g, {d}, /*keepdim=*/true);
  return cast(sub(g, mul(exp(compute(y)), total)), detail::outputFloat(y->dtype()));
}

NormBackwardResult layerNormBackward(TensorView* grad, TensorView* x, int64_t normalized_ndims,
                                     TensorView* mean, TensorView* rstd, TensorView* weight,
                                     bool has_bias) {
  checkSameRank(grad, x, "layerNormBackward", "x");
  auto axes = detail::lastDims(x, normalized_ndims, "layerNormBackward");
  TensorView* go = compute(grad);
  TensorView* x_hat = mul(sub(compute(x), mean), rstd);
  TensorView* g = weight != nullptr ? mul(go, weight) : go;
  TensorView* mean_g = ops::mean(g, axes, /*keepdim=*/true);
  TensorView* mean_gx = ops::mean(mul(g, x_hat), axes, /*keepdim=*/true);
  TensorView* gi = mul(rstd, sub(sub(g, mean_g), mul(x_hat, mean_gx)));
  NormBackwardResult r{cast(gi, detail::outputFloat(x->dtype())), nullptr, nullptr};
  if (weight != nullptr) {
    r.grad_weight =
        cast(sumLeading(mul(go, x_hat), normalized_ndims), detail::outputFloat(weight->dtype()));
  }
  if (has_bias) {
    r.grad_bias = cast(sumLeading(go, normalized_ndims),
                       detail::outputFloat(weight != nullptr ? weight->dtype() : x->dtype()));
  }
  return r;
}

NormBackwardResult rmsNormBackward(TensorView* grad, TensorView* x, int64_t normalized_ndims,
                                   TensorView* weight, double eps) {
  checkSameRank(grad, x, "rmsNormBackward", "x");
  auto axes = detail::lastDims(x, normalized_ndims, "rmsNormBackward");
  TensorView* go = compute(grad);
  TensorView* xc = compute(x);
  TensorView* r = rsqrt(add(ops::mean(mul(xc, xc), axes, /*keepdim=*/true), eps));
  TensorView* g = weight != nullptr ? mul(go, weight) : go;
  TensorView* mean_gx = ops::mean(mul(g, xc), axes, /*keepdim=*/true);
  TensorView* gi = mul(r, sub(g, mul(mul(xc, mul(r, r)), mean_gx)));
  NormBackwardResult res{cast(gi, detail::outputFloat(x->dtype())), nullptr, nullptr};
  if (weight != nullptr) {
    res.grad_weight = cast(sumLeading(mul(go, mul(xc, r)), normalized_ndims),
                           detail::outputFloat(weight->dtype()));
  }
  return res;
}

TensorView* geluBackward(TensorView* grad, TensorView* x, GeluApproximation approximation) {
  TensorView* xc = compute(x);
  TensorView* d = nullptr;
  if (approximation == GeluApproximation::None) {
    // Phi(x) + x * phi(x), phi(x) = exp(-x^2 / 2) / sqrt(2 pi)
    TensorView* cdf = mul(add(erf(mul(xc, std::numbers::sqrt2 / 2.0)), 1.0), 0.5);
    TensorView* pdf = mul(exp(mul(mul(xc, xc), -0.5)), 1.0 / std::sqrt(2.0 * std::numbers::pi));
    d = add(cdf, mul(xc, pdf));
  } else {
    // u = k (x + c x^3), t = tanh(u): 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2)
    const double k = std::sqrt(2.0 / std::numbers::pi);
    const double c = 0.044715;
    TensorView* x2 = mul(xc, xc);
    TensorView* t = tanh(mul(add(xc, mul(mul(x2, xc), c)), k));
    TensorView* du = mul(add(mul(x2, 3.0 * c), 1.0), k);
    d = add(mul(add(t, 1.0), 0.5), mul(mul(mul(xc, 0.5), sub(1.0, mul(t, t))), du));
  }
  return cast(mul(compute(grad), d), detail::outputFloat(x->dtype()));
}

TensorView* siluBackward(TensorView* grad, TensorView* x) {
  TensorView* xc = compute(x);
  TensorView* s = sigmoid(xc);
  TensorView* d = mul(s, add(mul(xc, sub(1.0, s)), 1.0));
  return cast(mul(compute(grad), d), detail::outputFloat(x->dtype()));
}

TensorView* crossEntropy(TensorView* logits, TensorView* target, int64_t ignore_index,
                         LossReduction reduction) {
  CrossEntropyParts p = crossEntropyParts(logits, target, ignore_index, "crossEntropy");
  // logsumexp, shifted by the row max so exp never overflows.
  TensorView* m = max(p.x, {1}, /*keepdim=*/true);
  TensorView* lse = add(squeeze(m, {1}), log(sum(exp(sub(p.x, m)), {1})));
  TensorView* picked = sum(where(p.onehot, p.x, 0.0), {1});
  TensorView* loss = where(p.valid, sub(lse, picked), 0.0);
  const DataType out = detail::outputFloat(logits->dtype());
  switch (reduction) {
    case LossReduction::None: return cast(loss, out);
    case LossReduction::Sum: return cast(sum(loss, {0}), out);
    case LossReduction::Mean:
      return cast(div(sum(loss, {0}), sum(cast(p.valid, p.x->dtype()), {0})), out);
  }
  LOOM_UNREACHABLE();
}

TensorView* crossEntropyBackward(TensorView* grad, TensorView* logits, TensorView* target,
                                 int64_t ignore_index, LossReduction reduction) {
  CrossEntropyParts p = crossEntropyParts(logits, target, ignore_index, "crossEntropyBackward");
  const int64_t want_rank = reduction == LossReduction::None ? 1 : 0;
  LOOM_CHECK(grad->rank() == want_rank, "crossEntropyBackward: grad ", grad->toString(), " ",
             detail::shapeString(grad), " must have rank ", want_rank, " (the loss's shape for ",
             reduction == LossReduction::None ? "reduction none" : "a reduced loss", ")");
  TensorView* g = compute(grad);
  // The gradient of each row's loss: softmax - onehot, zero where the row is ignored.
  TensorView* m = max(p.x, {1}, /*keepdim=*/true);
  TensorView* e = exp(sub(p.x, m));
  TensorView* softmax = div(e, sum(e, {1}, /*keepdim=*/true));
  TensorView* row = sub(softmax, cast(p.onehot, p.x->dtype()));
  TensorView* valid = broadcast(p.valid, {false, true});
  row = where(valid, row, 0.0);
  TensorView* scale = g;
  if (reduction == LossReduction::None) {
    scale = broadcast(g, {false, true});
  } else if (reduction == LossReduction::Mean) {
    scale = div(g, sum(cast(p.valid, p.x->dtype()), {0}));
  }
  return cast(mul(row, scale), detail::outputFloat(logits->dtype()));
}

}  // namespace loom::ops
