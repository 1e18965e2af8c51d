// SPDX-License-Identifier: Apache-2.0
// Sorts in the indexing pass: a sort's TensorOp becomes one SortRow call per row.
#pragma once

#include "index_compute.h"

namespace loom::lower {

/// The SortRow of an ArgsortOp's or TopKOp's TensorOp `op` (which the sorts pass took out of the
/// loop of its sort dim): every tensor's row starts where its sort-dim index is 0 and its other
/// indices are the output's (in `loops`); its stride is the parameter's runtime stride of that
/// dim. The input and outputs must be parameters (a UserError names the tensor otherwise).
kir::Stmt* lowerSortRow(kir::Kernel& kernel, LowerContext& ctx, const kir::TensorOp* op,
                        const std::vector<kir::ForLoop*>& loops);

}  // namespace loom::lower
