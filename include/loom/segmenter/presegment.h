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
#include <unordered_set>
#include <vector>

#include "loom/eval/argument.h"
#include "loom/ir/fusion.h"
#include "loom/multidevice/communication.h"
#include "loom/scheduler/device_info.h"
#include "loom/support/options.h"
#include "loom/support/pass_list.h"

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
  /// No run's arguments (shardedCopy): the passes that need them (concretize_reshapes,
  /// remove_empty_work, translate_welford) leave the fusion as it is.
  bool withoutArguments = false;
};

/// One pass: rewrites `fusion` in place and returns whether it changed anything.
using PresegmentPass = PassOf<ir::Fusion, PresegmentContext>;
using PresegmentPasses = PassList<ir::Fusion, PresegmentContext>;

/// The passes in the order they run. Optional (LOOM_DISABLE): translate_welford.
const PresegmentPasses& presegmentPasses();

/// UserError for a name that is a pass of neither the pre-segmentation list nor the lowering
/// pipeline (LOOM_DISABLE; each list refuses its own passes that are not optional).
void checkDisabledPassNames(const std::unordered_set<std::string>& names);

/// Runs every pass on `fusion` (see the file comment); returns whether any changed it.
bool runPresegmentPasses(ir::Fusion& fusion, PresegmentContext& ctx,
                         const DumpOptions& dump = DumpOptions::fromEnvironment());

/// `fusion` sharded as its outputs and communications will be: a copy through the passes up to
/// finalize_shardings that need no arguments (propagate_shardings, reduction_inits,
/// decompose_reshardings, finalize_shardings), so every device makes the same one. The runtime
/// cuts device programs (device_program.h) and checks rank agreement from it, and tools cut the
/// global reference into shards with it. `report` (optional) gets the passes that ran.
std::unique_ptr<ir::Fusion> shardedCopy(const ir::Fusion& fusion, PassReport* report = nullptr);

}  // namespace loom::segmenter
