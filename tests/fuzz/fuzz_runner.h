// SPDX-License-Identifier: Apache-2.0
// The fuzzer's runner: one seed end to end (generate, run through FusionExecutorCache with
// poisoned outputs, compare every output with the reference evaluator) and the classification of
// failures, so that a batch can be summarized by class.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fusion_generator.h"
#include "loom/exec/kernel_executor.h"

namespace loom::fuzz {

enum class Verdict : uint8_t {
  Pass,
  LoomError,     ///< Loom threw (segmenting, scheduling, lowering, compiling, running)
  Mismatch,      ///< an output differs from the reference (or an input was written)
  GeneratorBug,  ///< the generator built something invalid (ops or the reference rejected it)
  Crash,         ///< the worker died on a signal (driver only)
  Timeout,       ///< the worker ran past the time limit (driver only)
};
std::string_view verdictName(Verdict v);

struct RunnerOptions {
  exec::Backend backend = exec::Backend::Host;
  GeneratorOptions generator;
  /// Besides the first run: a second run with new values (the cached path) and, for cases that
  /// ask for it, a run with other sizes for the symbolic dims.
  bool extraRuns = true;
  /// For a third of the seeds (chosen by the seed) whose fusion the automatic path runs as one
  /// kernel: that kernel's schedule edited by hand (intermediates moved to other memory types)
  /// and run through a KernelExecutor. Lowering must refuse the edit (a UserError) or run it
  /// right; a wrong number or an internal error is a failure of the seed.
  bool handSchedules = true;
  /// After the runs pass: the case's printed text mutated in its dtypes and IterTypes
  /// (text_mutations.h). The parser must reject each mismatch at its line, and a retyped cast
  /// must run and match the reference exactly.
  bool textMutations = true;
};

struct SeedResult {
  uint64_t seed = 0;
  Verdict verdict = Verdict::Pass;
  std::string failureClass;  ///< empty when the seed passed; see classifyException
  std::string error;         ///< the exception text or the mismatch messages
  std::string report;        ///< what reproduces and explains a failure (empty on pass)
  int64_t numExprs = 0;      ///< exprs of the generated fusion (to find the smallest failures)
  int64_t kernels = 0;       ///< kernels of the first run
  std::string schedulers;    ///< schedulers of the first run's segments, "pointwise+reduction"
  std::vector<std::string> features;
  double seconds = 0;
};

/// Runs one seed. Never throws for a failure of Loom or of the generator: they are verdicts.
SeedResult runSeed(uint64_t seed, const RunnerOptions& options);

/// The generated case of a seed as text (fusion, inputs, steps), without running it.
std::string dumpSeed(uint64_t seed, const RunnerOptions& options);

/// "InternalError at csrc/lower/x.cpp:12: <message start, numbers and tensor names elided>":
/// failures with the same class come from the same check.
std::string classifyException(const std::exception& e);

}  // namespace loom::fuzz
