// SPDX-License-Identifier: Apache-2.0
// The plan cache: a disk cache of what a FusionExecutorCache's first run of a fusion on one
// input signature planned, so that a new process (a warm start) runs it without segmenting,
// scheduling, lowering or generating code.
//
// An entry (RuntimePlan) holds the segments' value slots and each kernel's KernelPlan
// (exec/kernel_plan.h: kernel text, launch, allocations, argument words). It is keyed by the
// SHA-256 of: the format version, Loom's version and build (the file holding this code: its
// path, size, modification time and inode), the fusion's text form, the whole input key
// (runtime::InputKey: dtypes, ranks, sizes, strides, devices, alignment) with the values of every
// scalar argument, the device (backend, the GPU's properties, what the schedulers size for),
// the parameter overrides, peeled vector rows and the disabled passes. Every value a plan holds
// is therefore what a cold compile of the same key computes; nothing is extrapolated to other
// sizes. A warm start loads each kernel through the backend's own disk cache (cubins, host
// objects) by its text.
//
// Files: <dir>/<32 hex digits>.plan, dir = $LOOM_PLAN_CACHE_DIR, else <cacheRoot()>/plans, a
// private directory (0700). A file is the tag LOOMPLAN02, the SHA-256 of the rest, the full key,
// then the plan. Writes go to a temporary file renamed into place (readers see a whole file or
// none; racing writers of one key, threads or processes such as mpirun ranks, are harmless). A
// missing file is a miss; a damaged, truncated, foreign or stale one is a miss that
// LOOM_DUMP=compile_time reports ("plan cache: ignored <file>: <why>"), never an error, and the
// next store replaces it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "loom/eval/argument.h"
#include "loom/exec/compute_device.h"
#include "loom/exec/kernel_plan.h"
#include "loom/support/phase_timer.h"

namespace loom::runtime {

/// What FusionKernelRuntime::run does, with every kernel's launch plan concrete.
struct RuntimePlan {
  int64_t numInputs = 0;
  int64_t numSlots = 0;  ///< the inputs, the size slots, then every segment output
  struct SizeSlot {
    int64_t slot = 0, input = 0, dim = 0, factor = 1;
  };
  std::vector<SizeSlot> sizeSlots;
  struct Step {
    std::vector<int64_t> inputSlots, outputSlots, freeAfter;
    exec::KernelPlan kernel;
  };
  std::vector<Step> steps;
  std::vector<int64_t> outputSlots;    ///< per fusion output
  std::vector<int64_t> outputIsInput;  ///< per fusion output: 1 when it is an input (a copy)

  std::string serialize() const;
  /// nullopt when the bytes do not hold a valid plan.
  static std::optional<RuntimePlan> deserialize(std::string_view bytes);
};

/// The identity of this build of Loom for plan-cache keys (computed once per process).
const std::string& loomBuildId();

/// $LOOM_PLAN_CACHE_DIR, else <cacheRoot()>/plans.
std::filesystem::path planCacheDir();

/// Reads the entry of `key` (a hex SHA-256). nullopt: a miss; `why` is empty for a missing
/// file, else the reason the file was ignored.
std::optional<RuntimePlan> loadPlan(const std::filesystem::path& dir, const std::string& key,
                                    std::string& why);
/// Writes the entry of `key` atomically; false (quietly) when the directory is not usable.
bool storePlan(const std::filesystem::path& dir, const std::string& key, const RuntimePlan& plan);

/// A RuntimePlan with every kernel's module loaded.
class PlannedRuntime {
 public:
  PlannedRuntime(RuntimePlan plan, std::shared_ptr<const exec::ComputeDevice> device,
                 const exec::ExecutorOptions& options, PhaseTimer& timer);
  /// Runs the steps on `args` (resident arguments of the input key the plan was stored for) and
  /// returns true with the fusion's outputs in `result`; false when an intermediate's address
  /// has another alignment class than the plan was made for: nothing the caller sees was
  /// written (the plan has no in-place outputs), and the caller runs the full pipeline instead.
  bool run(std::span<const eval::Argument> args, std::vector<Tensor>& result);

  /// What one step (one kernel) did in a run: SegmentRecord's per-run fields.
  struct StepRecord {
    exec::LaunchParams launch;
    double seconds = 0;  ///< host wall time of the step
    int64_t inputBytes = 0, outputBytes = 0;
  };
  /// Per step, the last run to finish (empty before the first); read when no run is in flight.
  std::vector<StepRecord> lastRun() const;
  const RuntimePlan& plan() const { return plan_; }

 private:
  RuntimePlan plan_;
  std::shared_ptr<const exec::ComputeDevice> device_;
  CUstream stream_ = nullptr;
  std::vector<std::unique_ptr<exec::PlannedKernel>> kernels_;
  mutable std::mutex mutex_;  // guards last_
  std::vector<StepRecord> last_;
};

}  // namespace loom::runtime
