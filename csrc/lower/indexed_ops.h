// SPDX-License-Identifier: Apache-2.0
// Indexing ops in the indexing pass: checked reads at positions loaded from an index tensor.
#pragma once

#include "index_compute.h"

namespace loom::lower {

/// The value of an IndexSelectOp or GatherOp output element: its lookup read at the position
/// whose indexed dim is `index_value` (the index tensor's element, already loaded) and whose other
/// dims come from the output's indices `idx`; the read sits in the taken branch of a range check
/// that records a failure for the executor (Kernel::indexChecks), so no read leaves the tensor.
kir::Value* lowerIndexedRead(kir::Kernel& kernel, LowerContext& ctx, const ir::Expr* e,
                             const IndexMap& idx, kir::Value* index_value);

/// The statements of a ScatterOp output element: `self_value`, then every index element along
/// the scatter dim (at the element's other coordinates) that names its position contributes its
/// src element (the last one wins, or all are added in index order), then the store at `offset`.
/// A serial search, so every backend computes the same, deterministic sums. An atomic scatter_add
/// (ir::ScatterOp::atomic) stores `self_value` alone here: appendAtomicScatters adds the rest.
kir::Stmt* lowerScatter(kir::Kernel& kernel, LowerContext& ctx, const ir::ScatterOp* sc,
                        const IndexMap& idx, kir::Value* self_value, const kir::Buffer* out,
                        kir::Value* offset);

/// For every atomic scatter_add of the kernel, appends a kir::ScatterAdd (grid barrier, then one
/// atomic add per index element) to the end of the kernel's body, after the loops that copied
/// self into out, with the kernel's gridSync words and a range-check site; the kernel becomes
/// cooperative. Its out, index and src must be parameters (a UserError names the tensor).
/// Returns whether it appended anything.
///
///   before: for i0 in BIDx 0 .. 8:            after: (the same loops)
///             for i1 in 0 .. ceilDiv(..):            T3 += scatter_atomic(T1, T2, dim=0,
///               for i2 in TIDx 0 .. 256:                                  sync=gsync, check=0)
///                 T3[...] = T0[...]
bool appendAtomicScatters(kir::Kernel& kernel, LowerContext& ctx);

}  // namespace loom::lower
