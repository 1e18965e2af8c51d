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

}  // namespace loom::ops
