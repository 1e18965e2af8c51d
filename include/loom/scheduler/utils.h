// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the schedulers: finding reductions and references, sizes, vectorization.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loom/ir/fusion.h"
#include "loom/ir/tensor_view.h"
#include "loom/scheduler/heuristic.h"
#include "loom/transform/id_graph.h"

namespace loom::scheduler::utils {

/// Exprs of the fusion that reduce (ReductionOp, WelfordOp), in topological order.
std::vector<ir::Expr*> reductionExprs(const ir::Fusion& fusion);
/// Exprs of the fusion that scan (ScanOp), in topological order.
std::vector<ir::Expr*> scanExprs(const ir::Fusion& fusion);
/// False, with the reason in *why, when the fusion has a scan: only the scan scheduler runs one.
bool hasNoScan(const ir::Fusion& fusion, std::string* why);
/// Exprs of the fusion that sort (ArgsortOp, TopKOp), in topological order.
std::vector<ir::Expr*> sortExprs(const ir::Fusion& fusion);
/// False, with the reason in *why, when the fusion has an argsort or topk: only the sort
/// scheduler runs one.
bool hasNoSort(const ir::Fusion& fusion, std::string* why);
/// True when the fusion has no scatter_add (the scatter scheduler's alone); else the reason.
bool hasNoScatterAdd(const ir::Fusion& fusion, std::string* why);
/// The first output TensorView of each reduction expr (a Welford's avg).
std::vector<ir::TensorView*> reductionTvs(const ir::Fusion& fusion);

/// Rejects what no single kernel can hold (every scheduler applies it): outputs in groups that
/// share no tensor (separate kernels), a slice or pad of a tensor computed in the fusion (it reads
/// its input from global memory), a cat whose pads are not in the fusion, a segment_set of a
/// computed tensor (the segmenter cuts there), a sort of a computed tensor or one whose results
/// are read in the fusion (a sort reads and writes whole rows in global memory). Returns false
/// and writes *why otherwise.
bool fitsOneKernel(const ir::Fusion& fusion, std::string* why);

/// Rejects what no scheduler here handles (fitsOneKernel included): no TensorView output, a DID-parallel or
/// already-parallelized loop ID, a tensor with a non-trivial loop domain, Scalar outputs.
/// Returns false and writes *why otherwise.
bool isPlainUnscheduledFusion(const ir::Fusion& fusion, std::string* why);

/// The pointwise-family schedulers' first test (pointwise, transpose): a plain unscheduled
/// fusion with no scan, sort or reduction. Returns false and writes *why otherwise.
bool isPlainPointwiseFusion(const ir::Fusion& fusion, std::string* why);

/// True when `tv` is read where no loop of a cache's schedule covers it, so that it is read from
/// global memory, not cached: by a slice or pad (at positions shifted by its start or padding),
/// or by a squeeze of a dim that is not a broadcast (of symbolic extent, 1 at run time: a cache
/// would hold it in a loop of that extent outside the consumer's loops).
bool readFromGlobal(const ir::TensorView* tv);

/// Gives every computed fusion output that is also read in the fusion (other than the outputs
/// of `keep`'s definition) a forked copy as the output (transform::cacheFork) and keeps the
/// original in registers for its readers: a kernel never reads back global memory it writes.
/// Returns the forks.
std::vector<ir::TensorView*> forkOutputsReadInFusion(ir::Fusion& fusion,
                                                     const ir::TensorView* keep = nullptr);

/// The output with the most logical dims that are not plain broadcasts (expanded ones count:
/// the output is written over them), first one on ties, preferring outputs
/// that are not also fusion inputs; nullptr when no output is a TensorView.
ir::TensorView* largestOutput(const ir::Fusion& fusion);

/// Product of the sizes of `ids` as `tv` shows them.
int64_t product(SchedulerRuntimeInfo& info, const ir::TensorView* tv,
                const std::vector<ir::IterDomain*>& ids);

/// The largest power of two <= x (1 for x <= 1).
int64_t floorPow2(int64_t x);
/// ceil(a / b) for b > 0.
inline int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Fusion inputs and outputs (TensorViews) holding the innermost non-broadcast ID of
/// `inner_ids` (logical IDs of `ref`, outermost first; exact ID graph) anywhere in their
/// allocation domain: the tensors whose accesses a schedule vectorizing the flattened `inner_ids`
/// would vectorize, so each of them constrains the width (maxVectorWidth; a permuted or
/// non-contiguous one forces 1). Tensors without that ID (broadcast along it) are left out and
/// read by scalar accesses. Compile-time only.
std::vector<ir::TensorView*> innerAlignedTensors(const ir::Fusion& fusion,
                                                 const ir::TensorView* ref,
                                                 const std::vector<ir::IterDomain*>& inner_ids);
/// Same, with an exact IdGraph of `fusion` built by the caller: a caller asking several questions
/// of one unchanged fusion builds the graph once.
std::vector<ir::TensorView*> innerAlignedTensors(const ir::Fusion& fusion,
                                                 const transform::IdGraph& exact,
                                                 const ir::TensorView* ref,
                                                 const std::vector<ir::IterDomain*>& inner_ids);

/// The vectorization rule (docs/schedulers.md): the largest power of two v such that for every
/// tensor in `tvs` v * itemsize <= 16 bytes, v divides the tensor's dense inner extent (the
/// product of the sizes of the trailing `inner_ids` it holds in the same order, contiguity flag
/// true and runtime strides dense), v divides each of its other strides (unknown: v = 1), and
/// its data address is aligned to v * itemsize. 1 when `tvs` is empty or any size is 0.
int64_t maxVectorWidth(const ir::Fusion& fusion, SchedulerRuntimeInfo& info,
                       const ir::TensorView* ref, const std::vector<ir::IterDomain*>& inner_ids,
                       const std::vector<ir::TensorView*>& tvs);
/// Same, with a caller-built exact IdGraph of `fusion` (see innerAlignedTensors).
int64_t maxVectorWidth(const transform::IdGraph& exact, SchedulerRuntimeInfo& info,
                       const ir::TensorView* ref, const std::vector<ir::IterDomain*>& inner_ids,
                       const std::vector<ir::TensorView*>& tvs);

/// The vector width of a peeled row (lower::LowerOptions::peelVectorRows: vectors along rows
/// that may start at any address): the largest power of two v with v * itemsize <= 16 bytes for
/// every tensor in `tvs`, when `inner_ids` holds one non-broadcast ID and every tensor holds it
/// innermost in its allocation, contiguous, with runtime stride 1; 1 otherwise (or when a size
/// is 0). Extents, other strides and data addresses do not matter: the peel handles them.
int64_t maxPeeledVectorWidth(const transform::IdGraph& exact, SchedulerRuntimeInfo& info,
                             const std::vector<ir::IterDomain*>& inner_ids,
                             const std::vector<ir::TensorView*>& tvs);
/// Rows whose vectors cannot all be aligned are peeled (at the 16-byte width) only when a row
/// holds at least this many vectors: a row then costs its shift and at most two vectors element
/// by element (the head up to the first aligned vector, a partial tail) against a body of aligned
/// vector accesses, instead of a scalar access per element. Run 35 (H100), width 50257 with
/// scalar loads: layer_norm, rms_norm and var_mean fp32 at 0.58x, 0.79x and 0.87x of
/// torch.compile, softmax bf16 at 0.86x.
inline constexpr int64_t kMinPeeledVectors = 16;
/// Whether a schedule of `ref` may peel its vectorized row: ref reduces exactly one logical ID
/// (the vector is split from it alone), and no op of the fusion reads positions that a peeled
/// lowering does not rotate (pad, cat, slice, reshape, scans, gather, index_select, scatter).
/// `why` names what stands in the way.
bool peelableRow(const ir::Fusion& fusion, const ir::TensorView* ref, std::string* why);

/// The persistent schedulers' inlining: `inlined` as far as each goes, the row buffers `buffers`
/// at most at `row_pos` (their loops stay around the row's element loop, which both the
/// reduction and the consumers after it read), then recomputation across threads. One graph of
/// the final loops serves it all, since inlining only sets compute-at positions.
void inlinePersistentRows(ir::Fusion& fusion, const std::vector<ir::TensorView*>& inlined,
                          const std::vector<ir::TensorView*>& buffers, int64_t row_pos);

}  // namespace loom::scheduler::utils
