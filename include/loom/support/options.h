// SPDX-License-Identifier: Apache-2.0
// Typed debug options read from the environment.
//
//   LOOM_DUMP=fusion_ir,kernel_ir(syncs)          dump the fusion, and the kernel IR after one pass
//   LOOM_DEBUG=verify_kernel_ir,verify_ir         extra checks (verifiers after passes/schedulers)
//   LOOM_DUMP=help                                lists the names (to the dump sink), dumps nothing
//
// Each option may take arguments in parentheses, separated by commas. An unknown option is a
// user error that lists the valid ones. Options are plain values: a layer that needs them takes a
// DumpOptions argument (or reads DumpOptions::fromEnvironment() at its entry point), never a
// global "current lowering" object. An embedding program that wants options for one call only
// (loom.direct's execute(_enable_options=...)) adds them for that call with ScopedOptions.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace loom {

/// What LOOM_DUMP may name. Keep kDumpOptions in options.cpp in the same order.
enum class DumpOption : uint8_t {
  FusionIr,         ///< the fusion as built, in the text form
  FusionIrScheduled,///< each segment's fusion after scheduling
  SchedulerParams,  ///< heuristic parameter structs
  Segments,         ///< segmentation result
  KernelIr,         ///< kernel IR after each lowering pass that changed it; arg: pass name
  CudaKernel,       ///< generated CUDA C++
  Ptxas,            ///< register and spill counts from the CUDA compiler
  HostCompile,      ///< host backend compiler command lines
  LaunchParams,     ///< launch dimensions and shared memory of each kernel launch
  CompileTime,      ///< wall time of each step of a cache miss (segment ... module load, plan)
  Resharding,       ///< each resharding expression: why, and the communication it becomes
  HostProgram,      ///< what a runtime runs, in order: kernels and communications, per device
  SchedulerChoice,  ///< each registry proposal: the chosen scheduler and every other's reason
  kCount
};

/// The option names as written in LOOM_DUMP, indexed by DumpOption.
std::string_view dumpOptionName(DumpOption option);
/// What may go in the option's parentheses ("pass"), or empty when it takes nothing.
std::string_view dumpOptionArguments(DumpOption option);
/// One line saying what the option prints (`loom --help` and README.md list these).
std::string_view dumpOptionDescription(DumpOption option);

/// A parsed LOOM_DUMP value.
class DumpOptions {
 public:
  DumpOptions() = default;

  /// Parses "a,b(x,y),c". Throws UserError for an unknown name or unbalanced parentheses. With
  /// `help` given, the name "help" is accepted too (and enables nothing): *help says whether it
  /// was there.
  static DumpOptions parse(std::string_view spec, bool* help = nullptr);

  /// Parses the LOOM_DUMP environment variable (empty when unset). Read once per process; when
  /// it names "help", dumpOptionsHelp() goes to the dump sink then. Inside a ScopedOptions on
  /// this thread: the environment's options merged with the scope's.
  static const DumpOptions& fromEnvironment();

  bool has(DumpOption option) const { return enabled_.count(option) != 0; }

  /// The arguments given to an option; empty when it had none or is not enabled.
  const std::vector<std::string>& args(DumpOption option) const;

  /// True when the option is enabled with no arguments, or with `arg` among its arguments.
  bool hasWithArg(DumpOption option, std::string_view arg) const;

  void enable(DumpOption option, std::vector<std::string> args = {}) {
    enabled_[option] = std::move(args);
  }

  /// Adds `other`'s options. An option both enable keeps the union of their arguments, or none
  /// (everything) when either gave none.
  void merge(const DumpOptions& other);

 private:
  std::map<DumpOption, std::vector<std::string>> enabled_;
};

/// Every LOOM_DUMP name with what it prints, one per line ("  kernel_ir(pass)  the kernel IR
/// ..."): what LOOM_DUMP=help and `loom --help` show.
std::string dumpOptionsHelp();

/// What LOOM_DEBUG may name: checks that cost compile time, off by default and on in every ctest
/// test (cmake/LoomTargets.cmake sets LOOM_DEBUG=verify_kernel_ir,verify_ir). Keep
/// kDebugOptions in options.cpp in the same order.
enum class DebugOption : uint8_t {
  VerifyKernelIr,  ///< lower::verifyKernel after every lowering pass
  VerifyIr,        ///< ir::verify on every fusion a scheduler scheduled
  kCount
};

/// The option names as written in LOOM_DEBUG, indexed by DebugOption.
std::string_view debugOptionName(DebugOption option);
/// One line saying what the option checks.
std::string_view debugOptionDescription(DebugOption option);

/// A parsed LOOM_DEBUG value: a comma-separated list of names, without arguments.
class DebugOptions {
 public:
  DebugOptions() = default;

  /// Parses "a,b". Throws UserError for an unknown name (listing the valid ones) or arguments.
  /// With `help` given, "help" is accepted too, as in DumpOptions::parse.
  static DebugOptions parse(std::string_view spec, bool* help = nullptr);

  /// Parses the LOOM_DEBUG environment variable (empty when unset). Read once per process;
  /// LOOM_DEBUG=help writes debugOptionsHelp() to the dump sink. Inside a ScopedOptions: merged
  /// with the scope's.
  static const DebugOptions& fromEnvironment();

  bool has(DebugOption option) const { return (bits_ >> static_cast<unsigned>(option)) & 1u; }
  void enable(DebugOption option) { bits_ |= 1u << static_cast<unsigned>(option); }
  void merge(const DebugOptions& other) { bits_ |= other.bits_; }

 private:
  uint32_t bits_ = 0;
};

/// Every LOOM_DEBUG name with what it checks, one per line (LOOM_DEBUG=help, `loom --help`).
std::string debugOptionsHelp();

/// The value of an environment variable, or nullopt when unset.
std::optional<std::string> getEnv(const char* name);

/// The pass names in "a,b" (LOOM_DISABLE's form): optional passes of the lowering pipeline or the
/// pre-segmentation list not to run. Each list refuses names of its passes that are not
/// optional (PassList::checkDisabled); names of no list are refused by checkDisabledPassNames.
std::unordered_set<std::string> parseDisabledPasses(std::string_view spec);
/// parseDisabledPasses of LOOM_DISABLE (empty when unset). Read once per process. Inside a
/// ScopedOptions: with the scope's names added.
const std::unordered_set<std::string>& disabledPassesFromEnvironment();

/// Options for what this thread does while the scope lives, on top of the environment's, as if
/// LOOM_DUMP, LOOM_DEBUG and LOOM_DISABLE also named them: the *fromEnvironment() readers above
/// return the merged options. For an embedding program that asks for options per call (the
/// Python package's execute(_enable_options=..., _disable_options=...)); the work of a call
/// (segmenting, scheduling, lowering, compiling) runs on the calling thread. Scopes nest, and
/// other threads do not see them.
class ScopedOptions {
 public:
  ScopedOptions(const DumpOptions& dump, const DebugOptions& debug,
                const std::unordered_set<std::string>& disabled);
  ~ScopedOptions();
  ScopedOptions(const ScopedOptions&) = delete;
  ScopedOptions& operator=(const ScopedOptions&) = delete;

  struct Frame;

 private:
  std::unique_ptr<Frame> frame_;
};

}  // namespace loom
