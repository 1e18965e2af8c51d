// SPDX-License-Identifier: Apache-2.0
// loom_bench's command line: options, their parsing and the usage text (no GPU needed).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "benchmarks/bench_sweep.h"

namespace loom::bench {

/// A bad command line; what() says which argument and what was expected.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The protocol's floor on timed repetitions (shared/docs/performance.md).
inline constexpr int64_t kMinReps = 20;
/// The floor on timed calls for the host-overhead median.
inline constexpr int64_t kMinHostCalls = 1000;

struct Options {
  std::string jsonPath;             ///< --json FILE; empty: no JSON written
  std::vector<std::string> cases;   ///< --cases; empty: every case
  std::vector<std::string> dtypes;  ///< --dtypes; empty: fp32 and bf16
  int64_t reps = 100;               ///< --reps, timed repetitions per case (>= kMinReps)
  int64_t warmup = 10;              ///< --warmup, untimed runs after the compiling first run
  int64_t hostCalls = 5000;         ///< --host-calls, timed calls of the host-overhead case
  bool skipHost = false;            ///< --skip-host
  bool skipCompile = false;         ///< --skip-compile
  /// --compile-case: the fusion (in fp32) whose cold and warm compile time is measured.
  std::string compileCase = "layer_norm_16384x4096";
  /// --params name=value,...: heuristic fields set on every case's kernels for tuning
  /// (runtime::RuntimeOptions::paramOverrides).
  std::vector<std::pair<std::string, int64_t>> params;
  /// --sweep: time the shape sweep (bench_sweep.h) instead of the cases; reps default to 30 and
  /// warm-up runs to 5, host overhead and compile time are not measured.
  bool sweep = false;
  /// --sweep-families, --sweep-widths, --sweep-regimes, --sweep-rows: a part of the sweep.
  SweepSpec sweepSpec;
  /// --list-sweep FILE: write the sweep's shapes as JSON and exit (no GPU needed); torch_sweep.py
  /// reads it, so both sides time the same shapes.
  std::string listSweepPath;
  /// --backend host: run each sweep shape once on the host backend and check it, no timing (the
  /// smoke run of the sweep; needs --sweep). Default cuda.
  bool hostBackend = false;
  bool help = false;  ///< --help / -h
  /// Hidden: run the compile-time probe once in this process and print one result line. The
  /// parent re-executes itself with it (a warm start must be a new process).
  bool compileProbe = false;
};

/// Parses argv[1..]. Accepts "--opt VALUE" and "--opt=VALUE". Case and dtype names are checked
/// against the case table and {fp32, bf16}. Throws UsageError.
Options parseArgs(const std::vector<std::string>& args);

/// The --help text.
std::string usage();

/// Parses `args` (argv[1..]) with `app` (CLI11), its help flag turned off: the programs handle
/// --help themselves. A CLI11 error becomes a UsageError: an unknown argument, an option without
/// its value, a value given to a flag.
void parseCommandLine(CLI::App& app, const std::vector<std::string>& args);

/// Splits "a,b,,c" into {"a", "b", "c"}.
std::vector<std::string> splitList(const std::string& text);
/// `text` as a whole number of at least `minimum`; UsageError naming `option` otherwise.
int64_t parseCount(const std::string& option, const std::string& text, int64_t minimum);

}  // namespace loom::bench
