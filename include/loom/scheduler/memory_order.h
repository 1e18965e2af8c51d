// SPDX-License-Identifier: Apache-2.0
// The memory order of a scheduler's reference tensor: its logical IDs ordered as the fusion input
// it reads most of lays them out (that input's allocation domain, i.e. its stride_order), mapped
// back through permutes, broadcasts and the splits and merges of reshapes. The reduction
// scheduler decides inner against outer, the vectorized dim and the TIDx dim from this order,
// not from the reference's logical order. See docs/schedulers.md ("Memory order").
#pragma once

#include <vector>

#include "loom/ir/fusion.h"
#include "loom/ir/tensor_view.h"
#include "loom/transform/id_graph.h"

namespace loom::scheduler::utils {

/// The fusion input whose allocation domain orders `ref` (memoryOrder): the tensor input to
/// which most of ref's non-broadcast logical IDs map (exact graph, through the splits and merges
/// of reshapes), the first such input on ties; nullptr when no input has every one of them.
const ir::TensorView* memoryOrderInput(const ir::Fusion& fusion, const transform::IdGraph& exact,
                                       const ir::TensorView* ref);

/// ref's logical IDs (reductions and broadcasts included), outermost in memory first: the
/// non-broadcast IDs sorted by where memoryOrderInput holds them in its allocation domain (a
/// split's outer piece before its inner piece, a merge where its inner input is), stably; the
/// broadcast IDs keep their logical positions. ref's logical order when no input orders it.
/// Compile-time: decided by the IR (allocation domains), not by run-time strides.
std::vector<ir::IterDomain*> memoryOrder(const ir::Fusion& fusion,
                                         const transform::IdGraph& exact,
                                         const ir::TensorView* ref);
/// Same, building the exact graph of `fusion`.
std::vector<ir::IterDomain*> memoryOrder(const ir::Fusion& fusion, const ir::TensorView* ref);

/// True when the innermost non-broadcast ID of `red` in memory order (memoryOrder) is a
/// reduction: an inner reduction. A reduction over every dim counts as inner.
bool isInnerInMemory(const ir::Fusion& fusion, const transform::IdGraph& exact,
                     const ir::TensorView* red);
bool isInnerInMemory(const ir::Fusion& fusion, const ir::TensorView* red);

/// True when no kept ID of `order` (a reduction tensor's IDs, outermost first) that is not a
/// broadcast comes after one of its reduction IDs: the reduced dims are a trailing run.
bool reducesTrailingRun(const std::vector<ir::IterDomain*>& order);

/// Splits `order` into its reduction IDs and its other IDs (broadcasts included), each list
/// keeping the order.
void partitionIds(const std::vector<ir::IterDomain*>& order, std::vector<ir::IterDomain*>& reduced,
                  std::vector<ir::IterDomain*>& kept);

}  // namespace loom::scheduler::utils
