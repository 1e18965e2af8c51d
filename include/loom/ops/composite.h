// SPDX-License-Identifier: Apache-2.0
// Composite ops built from primitives. They compute in Float32 (Float64 for Float64 inputs) and
// return their main output in the input's dtype, as PyTorch does; statistics stay in the compute
// type.
#pragma once

#include <vector>

#include "loom/ops/arith.h"

namespace loom::ops {

/// exp(x - max) / sum(exp(x - max)) along `dim`.
TensorView* softmax(TensorView* x, int64_t dim);
TensorView* logSoftmax(TensorView* x, int64_t dim);

struct LayerNormResult {
  TensorView* y;     ///< normalized output, input dtype
  TensorView* mean;  ///< compute type, keepdim shape
  TensorView* rstd;  ///< 1 / sqrt(var + eps), compute type, keepdim shape
};
/// Normalizes over the last `normalized_ndims` dimensions (biased variance, as torch).
/// weight and bias (may be nullptr) have the shape of those dimensions.
LayerNormResult layerNorm(TensorView* x, int64_t normalized_ndims, TensorView* weight,
                          TensorView* bias, double eps = 1e-5);

/// x * rsqrt(mean(x^2) + eps) * weight over the last `normalized_ndims` dimensions.
TensorView* rmsNorm(TensorView* x, int64_t normalized_ndims, TensorView* weight,
                    double eps = 1e-6);

/// gelu(x + bias) with bias broadcast along the leading dimensions.
TensorView* biasGelu(TensorView* x, TensorView* bias,
                     GeluApproximation approximation = GeluApproximation::Tanh);

// ---- Backward and loss composites (issue 30). Gradients compute in Float32 (Float64 for Float64
// inputs) and are returned in the dtype of the forward input they belong to.

/// d(loss)/dx of softmax(x, dim) given y = softmax(x, dim): y * (grad - sum(grad * y, dim)).
TensorView* softmaxBackward(TensorView* grad, TensorView* y, int64_t dim);
/// d(loss)/dx of logSoftmax(x, dim) given y = logSoftmax(x, dim):
/// grad - exp(y) * sum(grad, dim).
TensorView* logSoftmaxBackward(TensorView* grad, TensorView* y, int64_t dim);

struct NormBackwardResult {
  TensorView* grad_input;
  TensorView* grad_weight;  ///< nullptr without weight
  TensorView* grad_bias;    ///< nullptr without bias (layerNormBackward only)
};
/// The gradients of layerNorm(x, normalized_ndims, weight, bias) given its mean and rstd
/// (keepdim shape, as layerNorm returns them). With x_hat = (x - mean) * rstd and g = grad *
/// weight: grad_input = rstd * (g - mean(g) - x_hat * mean(g * x_hat)) over the normalized dims;
/// grad_weight = sum(grad * x_hat) and grad_bias = sum(grad) over the leading dims.
NormBackwardResult layerNormBackward(TensorView* grad, TensorView* x, int64_t normalized_ndims,
                                     TensorView* mean, TensorView* rstd, TensorView* weight,
                                     bool has_bias);
/// The gradients of rmsNorm(x, normalized_ndims, weight, eps) (rstd recomputed from x): with
/// r = rsqrt(mean(x^2) + eps) and g = grad * weight, grad_input = r * (g - x * r^2 * mean(g * x));
/// grad_weight = sum(grad * x * r) over the leading dims.
NormBackwardResult rmsNormBackward(TensorView* grad, TensorView* x, int64_t normalized_ndims,
                                   TensorView* weight, double eps = 1e-6);

/// grad * d/dx gelu(x): erf form Phi(x) + x * phi(x); tanh form the derivative of
/// 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))).
TensorView* geluBackward(TensorView* grad, TensorView* x,
                         GeluApproximation approximation = GeluApproximation::None);
/// grad * d/dx (x * sigmoid(x)) = grad * s * (1 + x * (1 - s)), s = sigmoid(x).
TensorView* siluBackward(TensorView* grad, TensorView* x);

/// torch.nn.functional.cross_entropy's reductions.
enum class LossReduction : uint8_t { None, Mean, Sum };
/// Cross entropy of logits [N, C] against class indices target [N] (integer): per row
/// logsumexp(logits) - logits[target], taken with a one-hot mask (iota == target), so no gather
/// is needed. Rows whose target is ignore_index count 0 and are left out of the mean's count
/// (a mean over no rows is NaN, as torch). Mean and Sum give a 0-D tensor, None a [N] one; the
/// dtype is the logits' floating type. A target outside [0, C) other than ignore_index picks no
/// logit (its loss is the logsumexp): a checked gather is not needed, but such a target is the
/// caller's error, as in torch.
TensorView* crossEntropy(TensorView* logits, TensorView* target, int64_t ignore_index = -100,
                         LossReduction reduction = LossReduction::Mean);
/// d(loss)/d(logits) of crossEntropy: (softmax(logits) - onehot(target)) * grad, zero on ignored
/// rows, divided by the count of the other rows for Mean. grad is 0-D for Mean and Sum, [N] for
/// None.
TensorView* crossEntropyBackward(TensorView* grad, TensorView* logits, TensorView* target,
                                 int64_t ignore_index = -100,
                                 LossReduction reduction = LossReduction::Mean);

}  // namespace loom::ops
