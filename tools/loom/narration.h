// SPDX-License-Identifier: Apache-2.0
// The lines `loom run` tells its user what happened with: which backend and why, what the inputs
// are, what each output is.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loom/eval/argument.h"
#include "loom/exec/compute_device.h"
#include "loom/ir/fusion.h"

namespace loom::tools {

/// "backend: host (no GPU found: no CUDA driver (libcuda.so.1) found)"; `from_flag` says the
/// backend was given with --backend (then the reason is that flag).
std::string backendLine(const exec::BackendChoice& choice, bool from_flag);

/// "inputs: T0 [1, 64, 256] f32, random from seed 0" (scalars with their values).
std::string inputsLine(const ir::Fusion& fusion, const std::vector<eval::Argument>& inputs,
                       uint64_t seed);

/// What computes `out`, readable without the .fus file: "T4 = div(T2, 255.0), where T2 is the
/// m2 (sum of squared deviations) of welford(T0)", "T1 = the average of welford(T0)", "T0, a
/// fusion input returned as is".
std::string describeOutput(const ir::Val* out);

}  // namespace loom::tools
