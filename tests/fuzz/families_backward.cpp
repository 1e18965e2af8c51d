// SPDX-License-Identifier: Apache-2.0
// The backward-shaped family (issue 37): layer_norm and rms_norm backward, whose per-row
// reductions (grad input) and per-column reductions over the leading dims (grad weight, grad
// bias) read the same data: the inner-outer-persistent scheduler's fusions.
#include <algorithm>
#include <cmath>

#include "fuzz/generator_internal.h"
#include "loom/ops/ops.h"

namespace loom::fuzz::detail {

bool Generator::famNormBackward() {
  // x: at least one leading dim (the rows the per-column sums run over) and one normalized dim,
  // no broadcast dims (each normalized dim a real row dim).
  int t = pick([](const GenTensor& g) {
    return g.dims.size() >= 2 && std::all_of(g.dims.begin(), g.dims.end(), [](const GenDim& d) {
             return d.kind == DimKind::Iter;
           });
  });
  // Often a new [rows, width] input instead (pool tensors of rank 2 without broadcast dims are
  // rare): rows and widths of a few to a few hundred, so blocks walk several rows.
  if ((t < 0 || rng_.chance(0.5)) && tensor_inputs_ + 2 <= opts_.maxTensorInputs) {
    const int64_t width = rng_.range(1, 300);
    const int64_t rows = rng_.range(1, std::max<int64_t>(1, opts_.maxInputNumel / width));
    const double r = rng_.uniform();
    const DataType dt = r < 0.45 ? DataType::Float32
                                 : (r < 0.8 ? DataType::BFloat16
                                            : (r < 0.9 ? DataType::Float16 : DataType::Float64));
    t = addTensorInput({newClass(rows, false, rows + 8), newClass(width, false, width + 8)}, dt,
                       false);
  }
  if (t < 0) return false;
  t = bounded(t, 4.0, 4.0);
  if (t < 0) return false;
  const GenTensor x = ts_[size_t(t)];
  if (!isFloatingType(x.tv->dtype()) || x.num.special) return false;
  const auto rank = int64_t(x.dims.size());
  // grad: a pool tensor of x's shape and dtype, or a new input of x's classes.
  auto same_shape = [&](const GenTensor& g) {
    if (g.dims.size() != x.dims.size() || g.tv->dtype() != x.tv->dtype() || g.num.special ||
        g.num.mag > 4) {
      return false;
    }
    for (size_t i = 0; i < g.dims.size(); ++i) {
      if (g.dims[i].kind != DimKind::Iter || root(g.dims[i].cls) != root(x.dims[i].cls)) {
        return false;
      }
    }
    return true;
  };
  int g = rng_.chance(0.5) ? pick(same_shape) : -1;
  if (g < 0) {
    if (tensor_inputs_ >= opts_.maxTensorInputs) return false;
    std::vector<int> classes;
    for (const GenDim& d : x.dims) classes.push_back(d.cls);
    g = addTensorInput(classes, x.tv->dtype(), false);
    if (g < 0) return false;
  }
  const GenTensor grad = ts_[size_t(g)];
  const int64_t n = rng_.chance(0.7) ? 1 : rng_.range(1, rank - 1);
  int w = rng_.chance(0.7) ? normParam(t, n) : -1;
  const bool layer = rng_.chance(0.5);
  const bool bias = layer && rng_.chance(0.6);
  if (w < 0 && !bias) w = normParam(t, n);  // at least one per-column gradient
  if (w < 0 && !bias) return false;
  const double eps = rng_.pick(std::vector<double>{0.5, 1.0});
  const double amp = 1.0 / std::sqrt(eps);
  const double wmag = w >= 0 ? ts_[size_t(w)].num.mag : 1.0;
  double row_max = 1, col_max = 1;
  std::vector<int> red = x.red;
  for (int c : grad.red) red.push_back(c);
  for (int64_t d = 0; d < rank; ++d) {
    (d < rank - n ? col_max : row_max) *= double(maxValue(x.dims[size_t(d)]));
    red.push_back(x.dims[size_t(d)].cls);
  }
  const double in_mag = std::max(x.num.mag, grad.num.mag);
  const double tol = std::max({errScale(tensorOpnd(t)), errScale(tensorOpnd(g)),
                               std::max(1.0, std::min(in_mag, kReduceMag))}) *
                     amp * 2 * std::max(1.0, wmag);
  if (tol > kMaxTolScale) return false;
  std::vector<int64_t> axes;
  for (int64_t d = rank - n; d < rank; ++d) axes.push_back(d);
  TensorView* wtv = w >= 0 ? ts_[size_t(w)].tv : nullptr;
  ops::NormBackwardResult r;
  if (layer) {
    // mean and rstd from sums of x in the fusion (as layer_norm's forward saves them), so the
    // whole backward is sums: no Welford for a scheduler to translate.
    TensorView* xc = x.tv->dtype() == DataType::Float64 ? x.tv : ops::cast(x.tv, DataType::Float32);
    TensorView* mean = ops::mean(xc, axes, /*keepdim=*/true);
    TensorView* centered = ops::sub(xc, mean);
    TensorView* var = ops::mean(ops::mul(centered, centered), axes, /*keepdim=*/true);
    TensorView* rstd = ops::rsqrt(ops::add(var, eps));
    r = ops::layerNormBackward(grad.tv, x.tv, n, mean, rstd, wtv, bias);
  } else {
    r = ops::rmsNormBackward(grad.tv, x.tv, n, wtv, eps);
  }
  ++ts_[size_t(t)].uses;
  ++ts_[size_t(g)].uses;
  if (w >= 0) ++ts_[size_t(w)].uses;
  // x_hat is at most sqrt(row) (normalized) and 2 |x| rstd; grad input at most
  // rstd |g| (2 + x_hat^2); the per-column sums at most rows x |grad| x_hat.
  const double x_hat = std::min(std::sqrt(row_max), 2 * x.num.mag * amp);
  const double gmag = grad.num.mag * wmag;
  std::vector<GenDim> cols(x.dims.end() - n, x.dims.end());
  auto num = [&](double mag) { return Num{false, mag, false, 0.0, false}; };
  std::string outs =
      name(adopt(r.grad_input, x.dims, num(amp * gmag * (2 + x_hat * x_hat)), red, tol));
  if (r.grad_weight != nullptr) {
    outs += ", " + name(adopt(r.grad_weight, cols, num(col_max * grad.num.mag * x_hat), red, tol));
  }
  if (r.grad_bias != nullptr) {
    outs += ", " + name(adopt(r.grad_bias, cols, num(col_max * grad.num.mag), red, tol));
  }
  c_.features.insert("normalization");
  c_.features.insert("norm-backward");
  note(outs + " = " + (layer ? "layer_norm" : "rms_norm") + "_backward(" + name(g) + ", " +
       name(t) + ", " + std::to_string(n) + ", " + (w >= 0 ? name(w) : "none") +
       (layer ? std::string(", bias ") + (bias ? "yes" : "no") : std::string()) + ", eps " +
       numText(eps) + ")");
  return true;
}

}  // namespace loom::fuzz::detail
