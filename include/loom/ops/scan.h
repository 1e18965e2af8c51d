// SPDX-License-Identifier: Apache-2.0
// Scans: inclusive prefix sums, products, maxima and minima along one dim (torch.cumsum,
// torch.cumprod, and the values of torch.cummax / torch.cummin). `dim` may be negative; a 0-D
// tensor takes dim 0 or -1 and is its own scan.
#pragma once

#include "loom/ops/operand.h"

namespace loom::ops {

/// Bool and integer inputs scan in Int64 (as torch.cumsum); other dtypes are kept (16-bit floats
/// accumulate in Float32 in kernels, every prefix rounded to the dtype).
TensorView* cumsum(TensorView* x, int64_t dim);
TensorView* cumprod(TensorView* x, int64_t dim);
/// Keep the input dtype; a NaN makes every later prefix NaN.
TensorView* cummax(TensorView* x, int64_t dim);
TensorView* cummin(TensorView* x, int64_t dim);

}  // namespace loom::ops
