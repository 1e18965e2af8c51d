// SPDX-License-Identifier: Apache-2.0
// Reductions and Welford. Axes may be negative and must be distinct and in range (UserError
// naming the tensor otherwise); an empty axis list reduces every dimension. keepdim re-inserts
// the reduced dimensions as size-1 (Broadcast) dimensions.
#pragma once

#include <optional>
#include <vector>

#include "loom/ops/operand.h"

namespace loom::ops {

/// Bool and integer inputs sum in Int64; Float16/BFloat16 in Float32 (the result type).
TensorView* sum(TensorView* x, const std::vector<int64_t>& axes, bool keepdim = false);
TensorView* prod(TensorView* x, const std::vector<int64_t>& axes, bool keepdim = false);
/// Keep the input dtype; NaN propagates.
TensorView* max(TensorView* x, const std::vector<int64_t>& axes, bool keepdim = false);
TensorView* min(TensorView* x, const std::vector<int64_t>& axes, bool keepdim = false);

/// torch.argmax / torch.argmin: the first index (Int64) of the largest / smallest value along
/// `dim`, NaN counting as larger (argmax) and smaller (argmin) than any number, so the first NaN
/// wins. dim = nullopt flattens x (keepdim then keeps x's rank with every size 1). Built from
/// primitives (no gather): m = max(x, dim); the candidates are the positions where x == m or x
/// is NaN, and the result is min(where(candidate, iota, N), dim). Bool inputs are a UserError
/// (as in torch).
TensorView* argmax(TensorView* x, std::optional<int64_t> dim, bool keepdim = false);
TensorView* argmin(TensorView* x, std::optional<int64_t> dim, bool keepdim = false);

/// Outputs of one WelfordOp: running mean, sum of squared deviations (m2) and count.
/// avg and m2 are Float32 (Float64 for Float64 inputs), n is Int64. Never keepdim.
struct WelfordResult {
  TensorView* avg;
  TensorView* m2;
  TensorView* n;
};
WelfordResult welford(TensorView* x, const std::vector<int64_t>& axes);
/// Combines partial Welford results over `axes`: avg, m2 and n (alike in shape, as one
/// welford() made them) become the statistics of all their elements together, exactly (the
/// pairwise update of means and m2). One WelfordOp whose inputs are the three tensors.
WelfordResult welfordCombine(TensorView* avg, TensorView* m2, TensorView* n,
                             const std::vector<int64_t>& axes);

/// mean = sum / N, computed in Float32 (Float64 for Float64), returned in the input's floating
/// type (integers: Float32).
TensorView* mean(TensorView* x, const std::vector<int64_t>& axes, bool keepdim = false);
/// Two-pass variance: sum((x - mean)^2) / max(N - correction, 0).
TensorView* variance(TensorView* x, const std::vector<int64_t>& axes, double correction = 1.0,
                     bool keepdim = false);

struct VarMeanResult {
  TensorView* var;
  TensorView* mean;
};
/// Welford-based var and mean, divided by max(N - correction, 0); returned in the input's
/// floating type.
VarMeanResult varMean(TensorView* x, const std::vector<int64_t>& axes, double correction = 1.0,
                      bool keepdim = false);

}  // namespace loom::ops
