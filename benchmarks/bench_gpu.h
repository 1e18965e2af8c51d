// SPDX-License-Identifier: Apache-2.0
// The measurements loom_bench makes on the GPU: kernel times per case, the host overhead of a
// cached launch and the compile time cold and warm. Only built with the CUDA backend.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "benchmarks/bench_cases.h"
#include "benchmarks/bench_cli.h"
#include "benchmarks/bench_report.h"

namespace loom::bench {

/// Times `c` in `dtype` per the protocol: random device inputs, a poisoned checking run, then
/// options.warmup untimed runs and options.reps repetitions, each after an L2 flush, between CUDA
/// events on one stream. Errors are caught into CaseResult::error.
CaseResult runCase(const Case& c, DataType dtype, const Options& options);

/// Host time of cached launches.
struct HostOverhead {
  std::string case_;  ///< "pointwise3_1024"
  Summary us;         ///< per cache.run() call, host wall time
  double loopUsPerCall = 0;  ///< whole loop / calls, output frees and periodic syncs included
  int64_t calls = 0;
  int64_t kernels = 0;
  std::string check;  ///< "PASS" or the failure
  Summary launchUs;   ///< an empty kernel through cuda::Function::launch (cuLaunchKernel)
  std::string error;
};
HostOverhead measureHostOverhead(const Options& options);

/// Compile time of one case's fp32 fusion (layer_norm by default), each from a new process.
struct CompileTimes {
  std::string case_;
  double coldMs = 0;        ///< empty LOOM_CACHE_DIR: schedule + lower + codegen + NVRTC + load
  double warmMs = 0;        ///< same directory, a new process: the cubin comes from disk
  double cachedRunMs = 0;   ///< a second run in the warm process (launch + kernel + sync)
  int64_t coldCubins = 0;   ///< cubin files after the cold probe
  int64_t warmNewCubins = 0;  ///< files the warm probe added (0: nothing was recompiled)
  int64_t kernels = 0;
  std::string error;
};
/// Runs `exe --compile-probe --compile-case NAME` twice with a fresh LOOM_CACHE_DIR (removed
/// afterwards).
CompileTimes measureCompileTimes(const std::string& exe, const std::string& caseName);

/// The child side: one timed first run of the case's fp32 fusion in this process; prints the
/// line measureCompileTimes reads.
int runCompileProbe(const std::string& caseName);

/// Name of GPU 0.
std::string gpuName();

}  // namespace loom::bench
