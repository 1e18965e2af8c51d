// SPDX-License-Identifier: Apache-2.0
// Cache tensors: copies inserted before or after a tensor to stage it in another memory type.
// Each new tensor gets the schedule of the tensor it caches (loop, allocation, DID types).
//
//   cacheBefore(T1):  T0 -op-> T1         becomes  T0 -op-> C -set-> T1      (returns C)
//   cacheAfter(T0):   T0 -> uses          becomes  T0 -set-> C -> uses       (returns C)
//   cacheFork(T1):    output T1 with uses becomes  T1 -> uses, T1 -set-> O (new output, returned)
//   cacheAfterEachUse(T0): T0 -> use_i       becomes  T0 -set-> C_i -> use_i  (one cache per use)
#pragma once

#include <vector>

#include "loom/ir/op_types.h"
#include "loom/ir/tensor_view.h"

namespace loom::transform {

using ir::MemoryType;
using ir::TensorView;

/// The cache C takes over tv's definition (with tv's schedule, reductions included); tv becomes
/// a copy of C without reduction IDs, made by `op` (TmaCopy: a bulk copy out of shared memory).
/// UserError for fusion inputs.
TensorView* cacheBefore(TensorView* tv, MemoryType memory = MemoryType::Local,
                        ir::LoadStoreOpType op = ir::LoadStoreOpType::Set);
/// Every use of tv reads the cache instead, a copy of tv made by `op` (TmaCopy: a bulk copy into
/// shared memory). UserError when tv has no uses.
TensorView* cacheAfter(TensorView* tv, MemoryType memory = MemoryType::Local,
                       ir::LoadStoreOpType op = ir::LoadStoreOpType::Set);
/// One cache per use of tv (each use reads its own copy, loaded in that use's loops): a row read
/// again by several passes instead of held. UserError when tv has no uses.
std::vector<TensorView*> cacheAfterEachUse(TensorView* tv, MemoryType memory = MemoryType::Local);
/// tv stays an intermediate for its uses; a new Global output copies it. UserError unless tv is a
/// fusion output with uses.
TensorView* cacheFork(TensorView* tv);

}  // namespace loom::transform
