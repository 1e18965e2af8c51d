// SPDX-License-Identifier: Apache-2.0
// `loom run` of a sharded fusion under mpirun (sharded_run.cpp).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "loom/eval/argument.h"
#include "loom/ir/fusion.h"
#include "loom/runtime/fusion_executor_cache.h"
#include "tools/loom/progress.h"

namespace loom::tools {

/// Runs `fusion` (which has device meshes) as this process's rank on its shards of `global`
/// (the global random inputs, the same on every rank), checks against its shards of the
/// reference, and prints every rank's result on rank 0, after `backend_line` (what
/// narration.h's backendLine says). Rank 0 prints progress lines for steps longer than
/// `progress_after` to stderr. Without `check` the reference is not computed and the outputs
/// are only reported. Returns the exit status (1 when any rank failed).
int runSharded(std::unique_ptr<ir::Fusion> fusion, const std::vector<eval::Argument>& global,
               runtime::RuntimeOptions options, bool bench, bool check,
               const std::string& backend_line, Progress::Duration progress_after);

}  // namespace loom::tools
