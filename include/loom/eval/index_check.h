// SPDX-License-Identifier: Apache-2.0
// The out-of-range index error of the indexing ops, one text for the reference evaluator and for
// the kernels' checked loads (the executor reads the offending value back after a launch).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace loom::eval {

/// "gather: index value 7 in T1 is out of range for dimension 0 of T0 (size 5); indices must lie
/// in [0, 5) (negative ones are not wrapped)". `op` is the op's name, `index` and `indexed` the
/// tensors as the fusion prints them.
std::string indexOutOfRangeMessage(std::string_view op, std::string_view index, int64_t value,
                                   std::string_view indexed, int64_t dim, int64_t size);

}  // namespace loom::eval
