// SPDX-License-Identifier: Apache-2.0
// Sorting ops of the reference evaluator (sort_ops.h).
#include "eval/sort_ops.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "loom/support/error.h"

namespace loom::eval::detail {

SortedRows sortRows(const std::vector<int64_t>& shape, const std::vector<double>& data, int64_t dim,
                    bool descending, int64_t k) {
  LOOM_ASSERT(dim >= 0 && size_t(dim) < shape.size(), "sort dim ", dim, " of a rank ", shape.size(),
              " buffer");
  const auto d = size_t(dim);
  const int64_t len = shape[d];
  LOOM_ASSERT(k >= 0 && k <= len, "sort keeps ", k, " of ", len, " elements");
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < d; ++i) outer *= shape[i];
  for (size_t i = d + 1; i < shape.size(); ++i) inner *= shape[i];
  SortedRows r;
  r.shape = shape;
  r.shape[d] = k;
  r.values.resize(size_t(outer * k * inner));
  r.indices.resize(r.values.size());
  // `a` comes before `b`: smaller (larger) and NaN largest; std::stable_sort keeps ties in order.
  auto before = [descending](double a, double b) {
    if (descending) return !std::isnan(b) && (std::isnan(a) || a > b);
    return !std::isnan(a) && (std::isnan(b) || a < b);
  };
  std::vector<int64_t> order(static_cast<size_t>(len));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t j) { return data[size_t((o * len + j) * inner + i)]; };
      std::iota(order.begin(), order.end(), int64_t(0));
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t a, int64_t b) { return before(at(a), at(b)); });
      for (int64_t j = 0; j < k; ++j) {
        const auto to = size_t((o * k + j) * inner + i);
        r.values[to] = at(order[size_t(j)]);
        r.indices[to] = double(order[size_t(j)]);
      }
    }
  }
  return r;
}

}  // namespace loom::eval::detail
