// SPDX-License-Identifier: Apache-2.0
// Checked parallelization and whole-fusion schedule validation.
#pragma once

#include <cstdint>

#include "loom/ir/fusion.h"
#include "loom/ir/iter_domain.h"
#include "loom/ir/tensor_view.h"

namespace loom::transform {

/// tv->axis(axis)->parallelize(type) with the rules that span a whole loop domain: a parallel
/// type other than Serial at most once per tensor, Vectorize only on the
/// innermost loop ID, DID types only on tensors with a device mesh and not inside the inlined
/// position. UserError naming the tensor and axis otherwise.
void parallelize(ir::TensorView* tv, int64_t axis, ir::ParallelType type);

/// Checks every expr's own rules (ir::exprProblem: dtypes and output IterTypes, which a fusion
/// built in C++ reaches lowering with unverified) and every tensor of the fusion: each parallel
/// type at most once per loop domain, Vectorize
/// only on the innermost loop ID with a constant power-of-two extent, no Vectorize or Reduction
/// inside the compute-at position, DID extents equal to the mesh size when both are known.
/// Throws UserError naming the first violation.
void validateSchedule(const ir::Fusion& fusion);

}  // namespace loom::transform
