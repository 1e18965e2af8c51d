// SPDX-License-Identifier: Apache-2.0
// The pre-segmentation passes: rewrites of a whole fusion for the arguments of one run, before
// the segmenter splits it. One named list like the lowering pipeline (csrc/segmenter/presegment.cpp):
//
//   concretize_reshapes   dynamic reshapes become static ones for these sizes (concretize.h)
//   propagate_shardings   meshes and DID splits spread from annotated tensors (multidevice)
//   reduction_inits       non-identity reduction inits combined once, after the reduction
//   decompose_reshardings every resharding expression becomes local compute plus one pure
//                         communication (multidevice/communication.h); others are UserErrors
//   remove_empty_work     empty outputs and reductions over empty dims need no kernel
//   translate_welford     Welford -> two passes when the persistent scheduler takes the result
//   finalize_shardings    tensors made since propagation sharded too; DID outermost; sharded
//                         allocation domains (multidevice/sharding.h)
//   localize_shards       with a device id: the program that device runs on its shards (the
//                         communications are recorded first: the shardings go)
//
// segmentFusion runs the list on a copy of the fusion; when some pass changed it, the segments
// refer to that copy (SegmentedFusion::rewritten()). After each pass the copy is verified
// (ir::verify: a pass that breaks the IR contract is an internal error naming the pass), and
// LOOM_DUMP=fusion_ir(pass) prints it after that pass when the pass changed it, fusion_ir(input)
// before the first pass; fusion_ir alone prints both.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "loom/eval/argument.h"
#include "loom/ir/fusion.h"
#include "loom/multidevice/communication.h"
#include "loom/scheduler/device_info.h"
#include "loom/support/options.h"

namespace loom::segmenter {

/// What the passes know of the run, and what they report back.
struct PresegmentContext {
  /// The run's arguments (metadata: sizes, strides, alignment; data is never read).
  std::span<const eval::Argument> args;
  scheduler::DeviceInfo device;
  /// translate_welford runs only when set (SegmenterOptions::translateWelford).
  bool translateWelford = true;
  /// The device (rank) that runs the fusion: localize_shards makes its program. Unset: a
  /// sharded fusion stays sharded (nothing can run it; tests inspect it).
  std::optional<int64_t> deviceId;
  /// Set by remove_empty_work when it removed something: the Welford translation is then not
  /// worth trying (nothing of a fusion with empty work is on a fast path).
  bool removedEmptyWork = false;
  /// translate_welford's verdict for LOOM_DUMP=segments ("translated ...", "kept (...)").
  std::string welfordNote;
  /// Set by localize_shards: the expressions that are communications, and what each moves.
  std::unordered_map<const ir::Expr*, multidevice::Communication> communications;
};

/// One pass: rewrites `fusion` in place and returns whether it changed anything.
struct PresegmentPass {
  std::string_view name;
  bool (*run)(ir::Fusion& fusion, PresegmentContext& ctx);
};

/// The passes in the order they run.
const std::vector<PresegmentPass>& presegmentPasses();

/// Runs every pass on `fusion` (see the file comment); returns whether any changed it.
bool runPresegmentPasses(ir::Fusion& fusion, PresegmentContext& ctx,
                         const DumpOptions& dump = DumpOptions::fromEnvironment());

}  // namespace loom::segmenter
