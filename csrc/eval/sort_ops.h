// SPDX-License-Identifier: Apache-2.0
// The reference evaluator's sorting ops (argsort, topk) on dense row-major buffers of doubles.
#pragma once

#include <cstdint>
#include <vector>

namespace loom::eval::detail {

/// The first `k` elements of each row along `dim` of a stable sort (ascending, or descending),
/// in torch's order: NaN above every number, NaNs and -0.0 / 0.0 equal (ties keep input order).
/// `shape` and the result's shapes are row-major; the result's `dim` has extent k.
struct SortedRows {
  std::vector<int64_t> shape;
  std::vector<double> values;
  std::vector<double> indices;
};
SortedRows sortRows(const std::vector<int64_t>& shape, const std::vector<double>& data, int64_t dim,
                    bool descending, int64_t k);

}  // namespace loom::eval::detail
