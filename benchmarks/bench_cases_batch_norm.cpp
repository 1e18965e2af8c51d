// SPDX-License-Identifier: Apache-2.0
// The batch-norm benchmark cases (issue 37's outer-persistent scheduler): forward (training
// statistics, then the normalization) and backward (the per-channel sums of dy and dy * xhat,
// then dx) of [N, C, H, W] in both memory formats, their fusions and a double-precision check of
// a few channels.
#include <cmath>
#include <string>

#include "benchmarks/bench_cases.h"
#include "loom/ops/arith.h"
#include "loom/ops/reduction.h"
#include "loom/ops/shape.h"
#include "loom/ops/tensor_builder.h"

namespace loom::bench {

namespace {

bool channelsLast(Op op) { return op == Op::BatchNormFwdNhwc || op == Op::BatchNormBwdNhwc; }
bool forward(Op op) { return op == Op::BatchNormFwdNchw || op == Op::BatchNormFwdNhwc; }

// The data tensor's shape for case shape [N, C, H, W]: [N, H, W, C] when channels last.
std::vector<int64_t> dataShape(Op op, const std::vector<int64_t>& nchw) {
  if (!channelsLast(op)) return nchw;
  return {nchw[0], nchw[2], nchw[3], nchw[1]};
}

int64_t channelDim(Op op) { return channelsLast(op) ? 3 : 1; }

std::vector<int64_t> reducedDims(Op op) {
  return channelsLast(op) ? std::vector<int64_t>{0, 1, 2} : std::vector<int64_t>{0, 2, 3};
}

// Element (n, c, h, w) of a data tensor, contiguous in its own layout.
int64_t offset(Op op, const std::vector<int64_t>& s, int64_t n, int64_t c, int64_t h, int64_t w) {
  const int64_t C = s[1], H = s[2], W = s[3];
  return channelsLast(op) ? ((n * H + h) * W + w) * C + c : ((n * C + c) * H + h) * W + w;
}

}  // namespace

bool isBatchNorm(Op op) {
  return op == Op::BatchNormFwdNchw || op == Op::BatchNormFwdNhwc || op == Op::BatchNormBwdNchw ||
         op == Op::BatchNormBwdNhwc;
}

std::vector<std::vector<int64_t>> batchNormInputShapes(Op op, const std::vector<int64_t>& nchw) {
  const std::vector<int64_t> data = dataShape(op, nchw), c = {nchw[1]};
  if (forward(op)) return {data, c, c};  // x, weight, bias
  return {data, data, c, c, c};          // dy, x, saved mean, saved rstd, weight
}

std::vector<std::vector<int64_t>> batchNormOutputShapes(Op op, const std::vector<int64_t>& nchw) {
  const std::vector<int64_t> data = dataShape(op, nchw), c = {nchw[1]};
  if (forward(op)) return {data};  // y
  return {data, c, c};             // dx, grad weight (sum dy * xhat), grad bias (sum dy)
}

void buildBatchNorm(Op op, DataType dtype, ir::Fusion& fusion,
                    const std::vector<ir::TensorView*>& in) {
  const std::vector<int64_t> reduced = reducedDims(op);
  std::vector<bool> cmask(4, true), rmask(4, false);
  cmask[size_t(channelDim(op))] = false;
  for (int64_t d : reduced) rmask[size_t(d)] = true;
  auto f32 = [](ir::TensorView* t) { return ops::cast(t, DataType::Float32); };
  auto perChannel = [&](ir::TensorView* t) { return ops::broadcast(f32(t), cmask); };
  if (forward(op)) {
    // torch's training batch_norm: biased variance, eps 1e-5.
    auto* x = f32(in[0]);
    auto* xc = ops::sub(x, ops::broadcast(ops::mean(x, reduced), rmask));
    auto* rstd = ops::rsqrt(ops::add(ops::mean(ops::mul(xc, xc), reduced), kNormEps));
    auto* y = ops::add(ops::mul(ops::mul(xc, ops::broadcast(rstd, rmask)), perChannel(in[1])),
                       perChannel(in[2]));
    fusion.addOutput(ops::cast(y, dtype));
    return;
  }
  // aten's native_batch_norm_backward (train): dx = w * rstd * (dy - mean(dy) - xhat *
  // mean(dy * xhat)), grad weight = sum(dy * xhat), grad bias = sum(dy).
  auto* dy = f32(in[0]);
  auto* rstd = perChannel(in[3]);
  auto* xhat = ops::mul(ops::sub(f32(in[1]), perChannel(in[2])), rstd);
  auto* dyx = ops::mul(dy, xhat);
  auto* sum_dy = ops::sum(dy, reduced);
  auto* sum_dyx = ops::sum(dyx, reduced);
  auto* mdy = ops::broadcast(ops::mean(dy, reduced), rmask);
  auto* mdyx = ops::broadcast(ops::mean(dyx, reduced), rmask);
  auto* dx = ops::mul(ops::mul(perChannel(in[4]), rstd),
                      ops::sub(ops::sub(dy, mdy), ops::mul(xhat, mdyx)));
  fusion.addOutput(ops::cast(dx, dtype));
  fusion.addOutput(ops::cast(sum_dyx, dtype));
  fusion.addOutput(ops::cast(sum_dy, dtype));
}

CheckResult checkBatchNorm(Op op, DataType dtype, const std::vector<Tensor>& inputs,
                           const std::vector<Tensor>& outs) {
  const Tensor& data = inputs.at(0);
  const std::vector<int64_t> s = channelsLast(op) ? std::vector<int64_t>{data.size(0), data.size(3),
                                                                         data.size(1), data.size(2)}
                                                  : data.sizes();
  const int64_t N = s[0], C = s[1], H = s[2], W = s[3];
  const double count = double(N * H * W);
  const bool bf16 = dtype == DataType::BFloat16;
  // Values near 1 in magnitude; per-channel sums of count values in [-1, 1) grow with sqrt(count).
  const double tol = bf16 ? 2e-2 : 2e-4;
  const double sum_tol = bf16 ? 5e-2 : 1e-3;
  std::string failure;
  int64_t compared = 0;
  auto near = [&](const std::string& what, double got, double want, double t) {
    ++compared;
    if (failure.empty() && !(std::abs(got - want) <= t * (1 + std::abs(want)))) {
      failure = what + ": got " + std::to_string(got) + ", expected " + std::to_string(want);
    }
  };
  for (int64_t c : {int64_t(0), C / 2, C - 1}) {
    // Positions checked: the first and last element of the channel and a middle one.
    const int64_t pos[3][3] = {{0, 0, 0}, {N / 2, H / 2, W / 2}, {N - 1, H - 1, W - 1}};
    const std::string ch = "channel " + std::to_string(c);
    if (forward(op)) {
      double sum = 0, m2 = 0;
      for (int64_t n = 0; n < N; ++n)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t w = 0; w < W; ++w) sum += data.getDoubleLinear(offset(op, s, n, c, h, w));
      const double mean = sum / count;
      for (int64_t n = 0; n < N; ++n)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t w = 0; w < W; ++w) {
            const double d = data.getDoubleLinear(offset(op, s, n, c, h, w)) - mean;
            m2 += d * d;
          }
      const double rstd = 1.0 / std::sqrt(m2 / count + kNormEps);
      for (const auto& p : pos) {
        const int64_t at = offset(op, s, p[0], c, p[1], p[2]);
        const double want =
            (data.getDoubleLinear(at) - mean) * rstd * inputs[1].getDoubleLinear(c) +
            inputs[2].getDoubleLinear(c);
        near("y " + ch + " element " + std::to_string(at), outs[0].getDoubleLinear(at), want, tol);
      }
      continue;
    }
    const Tensor& x = inputs.at(1);
    const double mean = inputs[2].getDoubleLinear(c), rstd = inputs[3].getDoubleLinear(c);
    double sum_dy = 0, sum_dyx = 0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w) {
          const int64_t at = offset(op, s, n, c, h, w);
          const double dy = data.getDoubleLinear(at);
          sum_dy += dy;
          sum_dyx += dy * (x.getDoubleLinear(at) - mean) * rstd;
        }
    near("grad bias " + ch, outs[2].getDoubleLinear(c), sum_dy, sum_tol * std::sqrt(count));
    near("grad weight " + ch, outs[1].getDoubleLinear(c), sum_dyx, sum_tol * std::sqrt(count));
    for (const auto& p : pos) {
      const int64_t at = offset(op, s, p[0], c, p[1], p[2]);
      const double xhat = (x.getDoubleLinear(at) - mean) * rstd;
      const double want = inputs[4].getDoubleLinear(c) * rstd *
                          (data.getDoubleLinear(at) - sum_dy / count - xhat * sum_dyx / count);
      near("dx " + ch + " element " + std::to_string(at), outs[0].getDoubleLinear(at), want, tol);
    }
  }
  if (!failure.empty()) return {false, failure};
  return {true, "channels 0, C/2, C-1 match a double-precision computation (" +
                    std::to_string(compared) + " values compared)"};
}

}  // namespace loom::bench
