// SPDX-License-Identifier: Apache-2.0
// Running the shape sweep (bench_sweep.h): each shape through a runner (timed on the GPU, or
// checked once on the host backend), then the JSON that benchmarks/sweep_report.py reads and a
// text table.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "benchmarks/bench_cases.h"
#include "benchmarks/bench_cli.h"
#include "benchmarks/bench_sweep.h"
#include "loom/runtime/fusion_executor_cache.h"

namespace loom::bench {

/// Runs one case in one dtype (bench_gpu.h's runCase, or checkOnHost).
using CaseRunner = std::function<CaseResult(const Case&, DataType)>;

/// The kernels, schedulers and parameters of the cache's last run, into `r`.
void recordRun(runtime::FusionExecutorCache& cache, CaseResult& r);

/// One poisoned run of `c` on the host backend with `options.params` applied, checked as
/// runCase checks (no timing).
CaseResult checkOnHost(const Case& c, DataType dtype, const Options& options);

/// Every shape of `options.sweepSpec` in every dtype through `run`, with a progress line each;
/// writes the JSON (schema loom-bench-sweep/1) when options.jsonPath is set and prints a table.
/// `device` names where it ran ("host backend" or the GPU). Exit status 0, or 1 when a shape
/// failed its check or raised.
int runSweep(const Options& options, const std::string& device, const CaseRunner& run);

/// The sweep's shapes as JSON (schema loom-bench-sweep-shapes/1), for torch_sweep.py.
void writeSweepShapes(const Options& options, const std::string& path);

}  // namespace loom::bench
