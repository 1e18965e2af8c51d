// SPDX-License-Identifier: Apache-2.0
// The layer_norm / rms_norm backward benchmark cases (issue 37's inner-outer-persistent
// scheduler): grad input, grad weight (and grad bias) of [R, H] rows, their fusions
// (ops::layerNormBackward / rmsNormBackward) and a double-precision check of a few rows and
// columns.
#include <cmath>
#include <string>

#include "benchmarks/bench_cases.h"
#include "loom/ops/arith.h"
#include "loom/ops/composite.h"
#include "loom/ops/shape.h"

namespace loom::bench {

bool isNormBackward(Op op) { return op == Op::LayerNormBwd || op == Op::RmsNormBwd; }

std::vector<std::vector<int64_t>> normBackwardInputShapes(Op op, const std::vector<int64_t>& rh) {
  const std::vector<int64_t> rows = {rh[0], 1}, cols = {rh[1]};
  if (op == Op::LayerNormBwd) return {rh, rh, rows, rows, cols};  // dy, x, mean, rstd, weight
  return {rh, rh, cols};                                          // dy, x, weight
}

std::vector<std::vector<int64_t>> normBackwardOutputShapes(Op op, const std::vector<int64_t>& rh) {
  const std::vector<int64_t> cols = {rh[1]};
  if (op == Op::LayerNormBwd) return {rh, cols, cols};  // dx, grad weight, grad bias
  return {rh, cols};                                    // dx, grad weight
}

void buildNormBackward(Op op, DataType dtype, ir::Fusion& fusion,
                       const std::vector<ir::TensorView*>& in) {
  ops::NormBackwardResult r =
      op == Op::LayerNormBwd
          ? ops::layerNormBackward(in[0], in[1], 1, ops::cast(in[2], DataType::Float32),
                                   ops::cast(in[3], DataType::Float32), in[4], /*has_bias=*/true)
          : ops::rmsNormBackward(in[0], in[1], 1, in[2], kNormEps);
  fusion.addOutput(ops::cast(r.grad_input, dtype));
  fusion.addOutput(ops::cast(r.grad_weight, dtype));
  if (r.grad_bias != nullptr) fusion.addOutput(ops::cast(r.grad_bias, dtype));
}

CheckResult checkNormBackward(Op op, DataType dtype, const std::vector<Tensor>& inputs,
                              const std::vector<Tensor>& outs) {
  const Tensor& dy = inputs.at(0);
  const Tensor& x = inputs.at(1);
  const int64_t R = x.size(0), H = x.size(1);
  const bool layer = op == Op::LayerNormBwd;
  const Tensor& w = inputs.at(layer ? 4 : 2);
  const double tol = dtype == DataType::BFloat16 ? 2e-2 : 2e-4;
  // x_hat and rstd of row r in double: layer_norm's from the given mean and rstd (as the
  // fusion reads them, rounded to the dtype), rms_norm's recomputed from x.
  auto rowRstd = [&](int64_t r) {
    if (layer) return inputs[3].getDoubleLinear(r);
    double ss = 0;
    for (int64_t j = 0; j < H; ++j) ss += x.getDoubleLinear(r * H + j) * x.getDoubleLinear(r * H + j);
    return 1.0 / std::sqrt(ss / double(H) + kNormEps);
  };
  auto xhat = [&](int64_t r, int64_t j, double rstd) {
    const double mean = layer ? inputs[2].getDoubleLinear(r) : 0.0;
    return (x.getDoubleLinear(r * H + j) - mean) * rstd;
  };
  std::string failure;
  int64_t compared = 0;
  auto near = [&](const std::string& what, double got, double want, double scale) {
    ++compared;
    if (failure.empty() && !(std::abs(got - want) <= tol * scale)) {
      failure = what + ": got " + std::to_string(got) + ", expected " + std::to_string(want);
    }
  };
  for (int64_t r : {int64_t(0), R / 2, R - 1}) {
    const double rstd = rowRstd(r);
    double mg = 0, mgx = 0, scale = 0;
    for (int64_t j = 0; j < H; ++j) {
      const double g = dy.getDoubleLinear(r * H + j) * w.getDoubleLinear(j);
      mg += g;
      mgx += g * xhat(r, j, rstd);
      scale += std::abs(g);
    }
    mg /= double(H);
    mgx /= double(H);
    for (int64_t j = 0; j < H; ++j) {
      const double g = dy.getDoubleLinear(r * H + j) * w.getDoubleLinear(j);
      const double want = rstd * (g - (layer ? mg : 0.0) - xhat(r, j, rstd) * mgx);
      near("dx row " + std::to_string(r) + " col " + std::to_string(j),
           outs[0].getDoubleLinear(r * H + j), want,
           std::abs(rstd) * (std::abs(g) + scale / double(H) * 4) + 1e-6);
    }
  }
  std::vector<double> rstds(size_t(R), 0.0);
  for (int64_t r = 0; r < R; ++r) rstds[size_t(r)] = rowRstd(r);
  for (int64_t j : {int64_t(0), H / 2, H - 1}) {
    double dw = 0, db = 0, sw = 0, sb = 0;
    for (int64_t r = 0; r < R; ++r) {
      const double d = dy.getDoubleLinear(r * H + j);
      const double t = d * xhat(r, j, rstds[size_t(r)]);
      dw += t;
      db += d;
      sw += std::abs(t);
      sb += std::abs(d);
    }
    const std::string col = "col " + std::to_string(j);
    near("grad weight " + col, outs[1].getDoubleLinear(j), dw, sw + 1e-6);
    if (layer) near("grad bias " + col, outs[2].getDoubleLinear(j), db, sb + 1e-6);
  }
  if (!failure.empty()) return {false, failure};
  return {true, "rows 0, R/2, R-1 of dx and columns 0, H/2, H-1 of the weight (and bias) grads "
                "match a double-precision computation (" + std::to_string(compared) +
                    " values compared)"};
}

}  // namespace loom::bench
