// SPDX-License-Identifier: Apache-2.0
// Peeled vector rows (LowerOptions::peelVectorRows): the rotated row index the indexing pass
// gives parameter accesses, shared with the vectorize pass's peeled copies.
#pragma once

#include <vector>

#include "index_compute.h"

namespace loom::lower {

/// `idx` (indices of `tv` in the row's slot space, from consumerIndices) with the index of tv's
/// logical ID along the peeled row replaced by the row element that slot holds: (q - s) mod row
/// for slot q and the row's shift s (the misalignment of the anchor's row start, 0 when the row
/// is shorter than it). `idx` itself when tv has no ID along the row. `loops` are the loops
/// around tv's op: they (or the thread and block indices) give the row the anchor's start is
/// read at. Local buffers stay indexed by slot; only parameters and the ops that read logical
/// positions (iota, random numbers) take these indices.
IndexMap peeledIndices(kir::Kernel& kernel, LowerContext& ctx, const ir::TensorView* tv,
                       const IndexMap& idx, const std::vector<kir::ForLoop*>& loops);

}  // namespace loom::lower
