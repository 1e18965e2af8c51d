// SPDX-License-Identifier: Apache-2.0
// The segmenter: splits a fusion that no single scheduler takes into segments that one
// scheduler each takes.
//
//   segmenter::SegmentedFusion sf = segmenter::segmentFusion(fusion, args);
//   for (const segmenter::Segment& s : sf.segments()) ...     // run order
//
// Welford translation: when the fusion has a Welford with a raw input and the inner-persistent
// scheduler accepts the two-pass translation of the whole fusion at these sizes, a translated copy
// is segmented instead (SegmentedFusion::rewritten(); LOOM_DUMP=segments says which happened).
//
// Algorithm. First the whole fusion is offered to the registry (proposeScheduler with the real
// sizes); when a scheduler accepts, there is one segment. Otherwise every math expr producing a
// tensor starts as its own group (scalar math is copied into the groups that read it). Then,
// repeatedly and in topological order, a group is merged with one of its consumer groups when
// (a) no other path leads from the group to that consumer, so the group graph stays acyclic,
// and (b) some scheduler accepts the union at these sizes; this runs until no merge succeeds.
// Pairs that were rejected once are not tried again. A single expr no scheduler takes is a
// UserError naming the expr and every scheduler's reason.
//
// Verification (SegmenterOptions::verifySchedules). A proposal is a promise that the schedule
// compiles, which schedulers do not always keep. With verification the whole fusion's, and each
// final group's, proposal is kept only after scheduling a copy and lowering it (as long as
// scheduling the segment again: a few milliseconds for a normalization). A group whose schedule
// the scheduler or lowering refuses (registers another thread would read, loops that cannot be
// ordered, ...) goes back to its starting groups, and from then on every merge is verified the
// same way, so the fusion runs in more kernels instead of failing. FusionExecutorCache segments
// without it and again with it when a segment's schedule fails to compile.
// LOOM_DUMP=segments prints each refusal.
#pragma once

#include <optional>
#include <span>

#include "loom/eval/argument.h"
#include "loom/ir/fusion.h"
#include "loom/scheduler/device_info.h"
#include "loom/segmenter/segmented_fusion.h"

namespace loom::segmenter {

struct SegmenterOptions {
  /// Skip the whole-fusion attempt and always segment (tests of the merging itself).
  bool forceSegmentation = false;
  /// Translate Welfords to two passes first when the inner-persistent scheduler then takes the
  /// whole fusion at these sizes (translateApplicableWelford); the segments then refer to the
  /// translated copy, which the SegmentedFusion owns.
  bool translateWelford = true;
  /// Schedule and lower every proposal before keeping it (see "Verification" above).
  bool verifySchedules = false;
  /// Join the pointwise consumers a matmul's GEMM can apply (bias, relu, gelu_tanh, a cast;
  /// segmenter/matmul_epilogue.h) to its segment. Off: each stays a Loom kernel.
  bool matmulEpilogues = true;
  scheduler::DeviceInfo device = {};
  /// The device (rank) of the device meshes that runs a sharded fusion: the segments are then
  /// its local program (pre-segmentation pass localize_shards).
  std::optional<int64_t> deviceId;
  /// The order communications run in, by the names of their outputs (ir::Val::name), when the
  /// fusion is one device's part of a larger one (DeviceProgram::communicationOrder): each
  /// communication runs after the previous one in this list, so devices that share several
  /// issue them alike. Empty: the fusion's own order (exprs()), which is the whole fusion's
  /// when the device runs all of it.
  std::vector<int64_t> communicationOrder;
};

/// Segments `fusion` for the sizes, strides and alignment of `args` (validated against the
/// fusion's inputs like ExpressionEvaluator::bindInputs). Each segment gets its scheduler and
/// heuristic parameters. LOOM_DUMP=segments prints the result. A fusion without tensor math (its
/// outputs are inputs) has no segments.
SegmentedFusion segmentFusion(const ir::Fusion& fusion, std::span<const eval::Argument> args,
                              const SegmenterOptions& options = {});

}  // namespace loom::segmenter
