// SPDX-License-Identifier: Apache-2.0
// The reference evaluator's indexing ops (index_select, gather / take_along_axis, scatter) on
// dense row-major buffers; an index out of range is a UserError (index_check.h's text).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace loom::eval::detail {

/// A dense row-major tensor of doubles and the name the fusion prints for it.
struct DenseRef {
  const std::vector<int64_t>& shape;
  const std::vector<double>& data;
  std::string name;
};

/// out[a..., k..., b...] = lookup[a..., index[k...], b...]; `out_shape` as the op says, index
/// of the output's rank with size 1 off the selected span (ir::IndexSelectOp).
std::vector<double> indexSelect(const DenseRef& lookup, const DenseRef& index, int64_t dim,
                                const std::vector<int64_t>& out_shape, const std::string& op);
/// out[i] = lookup[i with dim replaced by index[i]]; out has index's shape.
std::vector<double> gather(const DenseRef& lookup, const DenseRef& index, int64_t dim,
                           const std::string& op);
/// self with src scattered at index along dim (`accumulate`: summed in index order).
std::vector<double> scatter(const DenseRef& self, const DenseRef& index, const DenseRef& src,
                            int64_t dim, bool accumulate, const std::string& op);

}  // namespace loom::eval::detail
