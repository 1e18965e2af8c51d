// SPDX-License-Identifier: Apache-2.0
// Comparing a kernel's output with the reference evaluator's, with tolerances that scale with
// the dtype and the reduction size.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "loom/tensor/tensor.h"

namespace loom::eval {

/// |actual - expected| <= atol + rtol * |expected|.
struct Tolerance {
  double rtol = 0.0;
  double atol = 0.0;
};

/// A tolerance for results of `dtype` produced by reductions over `reduction_size` elements
/// (1 for pointwise): zero for bool and integers; for floats both rtol and atol are
/// 8 * eps(dtype) * (1 + sqrt(reduction_size)), where 16-bit floats also allow for the Float32
/// computation they are rounded from.
Tolerance defaultTolerance(DataType dtype, int64_t reduction_size = 1);

/// nullopt when `actual` matches `expected` (same shape and dtype, every element within `tol`);
/// otherwise a message naming `what`, the first mismatching index, both values and the number of
/// mismatches. NaN matches only NaN, infinities only the same infinity, so a poisoned (NaN)
/// element where a finite value is expected always fails. Both tensors must be on the host.
[[nodiscard]] std::optional<std::string> expectClose(const Tensor& actual, const Tensor& expected,
                                                     Tolerance tol, std::string_view what);

}  // namespace loom::eval
