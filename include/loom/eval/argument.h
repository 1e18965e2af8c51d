// SPDX-License-Identifier: Apache-2.0
// Argument: one runtime input of a fusion, a tensor or a scalar.
#pragma once

#include <cstdint>
#include <string>
#include <variant>

#include "loom/tensor/tensor.h"

namespace loom::eval {

/// A fusion input at run time. Tensors match TensorView inputs; double, int64_t and bool match
/// Scalar inputs (write `int64_t{3}`, not `3`, for an integer).
using Argument = std::variant<Tensor, double, int64_t, bool>;

/// "tensor [2, 3] f32", "double 1.5", "int64 3", "bool true": for messages.
std::string describeArgument(const Argument& arg);

}  // namespace loom::eval
