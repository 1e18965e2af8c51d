// SPDX-License-Identifier: Apache-2.0
// Arithmetic on Scalars (extents, split factors) that folds constants, so static shapes stay
// constants: ceilDiv(12, 4) is the constant 3, ceilDiv(s0, 4) a BinaryOp. Index type Int64.
#pragma once

#include "loom/ir/scalar.h"

namespace loom::ir::scalar_math {

Scalar* add(Scalar* a, Scalar* b);
Scalar* sub(Scalar* a, Scalar* b);
Scalar* mul(Scalar* a, Scalar* b);
Scalar* div(Scalar* a, Scalar* b);
Scalar* mod(Scalar* a, Scalar* b);
Scalar* ceilDiv(Scalar* a, Scalar* b);
/// The larger / smaller of two index Scalars (a itself when a and b are one node).
Scalar* max(Scalar* a, Scalar* b);
Scalar* min(Scalar* a, Scalar* b);
/// a < b as a Bool Scalar.
Scalar* lt(Scalar* a, Scalar* b);
/// cond ? a : b for a Bool `cond` and index Scalars a, b.
Scalar* where(Scalar* cond, Scalar* a, Scalar* b);

/// The symbol s when `extent` is div(s, c) of a symbol s (no definition) and a constant c > 0,
/// with c in *factor; nullptr otherwise. A local shard's extent has this form
/// (multidevice::localizeShardings), and a size bound to it gives s = size * c.
const Scalar* dividedSymbol(const Scalar* extent, int64_t* factor);

}  // namespace loom::ir::scalar_math
