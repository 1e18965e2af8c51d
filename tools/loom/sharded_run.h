// SPDX-License-Identifier: Apache-2.0
// `loom run` of a sharded fusion under mpirun (sharded_run.cpp).
#pragma once

#include <memory>
#include <vector>

#include "loom/eval/argument.h"
#include "loom/ir/fusion.h"
#include "loom/runtime/fusion_executor_cache.h"

namespace loom::tools {

/// Runs `fusion` (which has device meshes) as this process's rank on its shards of `global`
/// (the global random inputs, the same on every rank), checks against its shards of the
/// reference, and prints every rank's result on rank 0. Returns the exit status (1 when any
/// rank failed).
int runSharded(std::unique_ptr<ir::Fusion> fusion, const std::vector<eval::Argument>& global,
               runtime::RuntimeOptions options, bool bench);

}  // namespace loom::tools
