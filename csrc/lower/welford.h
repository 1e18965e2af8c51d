// SPDX-License-Identifier: Apache-2.0
// Welford pieces shared by the reductions and indexing passes (see csrc/lower/welford.cpp).
#pragma once

#include <vector>

#include "loom/lower/lower.h"

namespace loom::lower {

/// The Welford accumulation statement of an indexed Welford TensorOp (role Accumulate):
/// welford_update(in[0]) for a raw input, welford_combine(in[0], in[1], in[2]) for partials.
kir::Stmt* lowerWelfordAccumulate(kir::Kernel& kernel, const kir::TensorOp* op,
                                  const std::vector<kir::Value*>& ins);

/// Bytes of loom::Welford<T, N> (avg, m2: T; n: N; natural alignment).
int64_t welfordBytes(DataType avg, DataType n);

/// The C name of a scalar element type of a grid work buffer ("float", "long long").
std::string scratchCType(DataType dtype);

/// The type a reduction of `dtype` accumulates in: Float32 for Float16/BFloat16, Int32 for Bool
/// (so block and grid scratch hold plain numbers), else itself.
DataType accumulatorType(DataType dtype);

}  // namespace loom::lower
