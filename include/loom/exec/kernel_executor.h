// SPDX-License-Identifier: Apache-2.0
// KernelExecutor: compiles a manually scheduled fusion to one kernel and runs it.
//
//   exec::KernelExecutor ke;
//   ke.compile(fusion);                                  // lower, codegen, compile (host or cuda)
//   std::vector<Tensor> outs = ke.run({Tensor(x), Tensor(bias)});
//
// Devices (compute_device.h): the host backend runs the kernel text on the CPU (fibers); a GPU
// compiles it with NVRTC and launches it there. Backend::Auto picks LOOM_BACKEND=host|cuda when
// set, else cuda when a GPU is present, else host.
//
// Where tensors live (a GPU): when the tensor inputs are CUDA tensors on that GPU, nothing is
// copied: outputs are allocated on the device (cuda::defaultAllocator(), stream-ordered on
// ExecutorOptions::stream), the launch is queued on that stream and run() returns the CUDA outputs
// without synchronizing. When they are host tensors, run() copies them in, launches, copies the
// outputs back and returns host tensors (synchronous; for convenience and tests). Mixing host and
// CUDA tensors, CUDA tensors on another GPU, or CUDA tensors with the host backend are UserErrors
// naming the input.
//
// Launch plans: run() keeps a LaunchPlan for each of the last kMaxPlans input signatures (every
// tensor's device, dtype, sizes and strides, data-pointer address mod 16 when the kernel has
// vectorized parameters, and every scalar input's value). The first run of a signature validates
// the inputs (clear errors naming tensor, dimension and expected value), evaluates launch extents
// and output sizes with an ExpressionEvaluator and picks the index type; later runs with the same
// signature compare the signature (no heap allocation), allocate outputs, patch data pointers into
// a reused argument buffer and launch. The cached path does not print, read the environment or
// build strings.
//
// Concurrency: runs may come from several threads at once (see runInto); all of them go on the
// executor's one stream, so the grid-reduction scratch a plan keeps is never used by two launches
// at once. A compiled executor is immutable while runs are in flight: compile() builds the new
// kernel aside, then waits until no run is in flight and swaps it in; runs that start while it
// waits wait for the new kernel. (Before, a compile() during another thread's run unloaded the
// kernel mid-launch.) A compile() that throws leaves the executor as it was.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "loom/backend/cuda/driver.h"
#include "loom/codegen/kernel_codegen.h"
#include "loom/eval/argument.h"
#include "loom/exec/compute_device.h"
#include "loom/exec/in_place.h"
#include "loom/ir/fusion.h"
#include "loom/lower/kernel_ir.h"
#include "loom/lower/lower.h"

namespace loom::exec {

struct KernelPlan;  // exec/kernel_plan.h

struct ExecutorOptions {
  /// Fill outputs with NaN (floats) before the launch, so unwritten elements show up in checks.
  bool poisonOutputs = false;
  /// The stream every allocation, memset, copy and launch of run() goes on (cuda backend; the
  /// host backend ignores it). Null: the legacy default stream. Fixed at compile().
  CUstream stream = nullptr;
  /// The GPU compile(fusion, Backend, options) picks for the cuda backend (its index among the
  /// driver's devices). compile(fusion, device, options) takes the device itself.
  int device = 0;
  /// What lowering is asked beyond the fusion: peeled vector rows where the scheduler's
  /// parameters ask for them (HeuristicParams::peelVectorRows; the runtime sets it).
  lower::LowerOptions lowering = {};
  /// The index type asked for (nvFuser's CompileParams index_type): Int64 always; Int32 where the
  /// bound sizes allow it, a UserError naming the tensor otherwise. Unset: chosen per run
  /// (32-bit where every tensor's offsets fit, lower::selectIndexType).
  std::optional<DataType> indexType = std::nullopt;
  /// At most this many registers per thread (codegen::CodegenOptions::maxRegisters); 0: none.
  int64_t maxRegisters = 0;
};

class KernelExecutor {
 public:
  KernelExecutor();
  ~KernelExecutor();
  KernelExecutor(const KernelExecutor&) = delete;
  KernelExecutor& operator=(const KernelExecutor&) = delete;

  /// Lowers and compiles `scheduled` (cloned: later changes to it do not matter) for `device`.
  /// Safe to call while other threads run this executor: it waits for their runs to finish
  /// before the new kernel replaces the old one (see the header comment).
  void compile(const ir::Fusion& scheduled, std::shared_ptr<const ComputeDevice> device,
               ExecutorOptions options = {});
  /// compile() for makeComputeDevice(backend, options.device).
  void compile(const ir::Fusion& scheduled, Backend backend = Backend::Auto,
               ExecutorOptions options = {});
  /// Validates and binds `inputs` (on a plan miss), allocates outputs from their allocation
  /// domains, launches, and returns the outputs: CUDA tensors (not synchronized) for CUDA inputs,
  /// host tensors otherwise. An output that is also an input is returned as a copy of it.
  /// An in-place output of the fusion (ir::Fusion::aliasOutputToInput) is computed aside and
  /// copied into its input after the launch (a hand schedule is not analysed for in-place
  /// safety); the returned output is that input's tensor (exec/in_place.h checks the layout).
  std::vector<Tensor> run(std::span<const eval::Argument> inputs);
  /// run() writing the outputs into `outputs` (cleared first), so that a caller running the same
  /// executor again and again reuses one vector instead of allocating one per run. Returns this
  /// run's launch parameters.
  ///
  /// run() and runInto() may be called from several threads at once: plans are looked up and
  /// made under a lock (a module is built once), and each launch uses a plan no other launch
  /// holds (see runResident). The accessors below describe the last run to finish; read them
  /// when no run is in flight. `plan_seconds`, when given, receives the wall time this run spent
  /// making its launch plan (building or loading the module: the compile the first run of a
  /// signature pays), 0 when a plan was reused.
  ///
  /// `into` (empty, or one entry per fusion output): a defined tensor is the buffer that output
  /// is written into instead of a fresh allocation (the runtime's in-place outputs). It must
  /// have the dtype and sizes of the output (UserError naming the output otherwise) and elements
  /// at distinct addresses; the kernel stores into it when it has the strides the output would
  /// be allocated with and an address aligned for the kernel's vector stores, and otherwise into
  /// a fresh buffer copied into it through its strides after the launch. It is not poisoned
  /// (ExecutorOptions::poisonOutputs). The returned output is that tensor.
  LaunchParams runInto(std::span<const eval::Argument> inputs, std::vector<Tensor>& outputs,
                       double* plan_seconds = nullptr, std::span<const Tensor> into = {});

  /// Plans kept (least recently used goes first).
  static constexpr size_t kMaxPlans = 8;
  /// Plan cache statistics: hits and misses of run() so far, plans kept now.
  int64_t planHits() const { return plan_hits_; }
  int64_t planMisses() const { return plan_misses_; }
  int64_t numPlans() const { return int64_t(plans_.size()); }

  bool isCompiled() const { return kernel_ != nullptr; }
  Backend backend() const { return device_->backend(); }
  const ComputeDevice& device() const { return *device_; }
  /// The kernel of the last run (its index type), or of compile() before any run.
  const codegen::GeneratedKernel& generated() const {
    return last_generated_ != nullptr ? *last_generated_ : generated_;
  }
  const kir::Kernel& kernel() const { return *kernel_; }
  /// Launch parameters of the last run.
  const LaunchParams& lastLaunch() const { return last_launch_; }
  /// Registers per thread of the last run's kernel (the driver's count; 0 on the host backend
  /// or before a run). Asks the driver: for profiles, not the launch path.
  int64_t lastRegistersPerThread() const;
  const ExecutorOptions& options() const { return options_; }
  /// The launch plan a run on `inputs` (as they are now: same sizes, strides, alignment and
  /// scalar values) made, with every value concrete, for the plan cache (runtime/plan_cache.h);
  /// nullopt when no idle plan has that signature, or when the kernel's runs need more than a
  /// KernelPlan holds (checked index reads, a cooperative launch, in-place outputs).
  std::optional<KernelPlan> exportPlan(std::span<const eval::Argument> inputs);

 private:
  struct Compiled;
  struct LaunchPlan;
  class RunGate;
  /// The module for `index_type` (generated and built on first use); sets generated_.
  Compiled& moduleFor(DataType index_type);
  /// Writes the signature of `inputs` into signature_ (reused storage).
  void computeSignature(std::span<const eval::Argument> inputs);
  /// The full path: validates, evaluates, builds the module and returns a new plan.
  std::unique_ptr<LaunchPlan> makePlan(std::span<const eval::Argument> inputs);
  /// Allocates outputs (into `outputs`; runInto's `into` where given), fills the plan's
  /// argument buffer and launches.
  void launchPlan(LaunchPlan& plan, std::span<const eval::Argument> inputs,
                  std::vector<Tensor>& outputs, std::span<const Tensor> into);
  /// The fusion's own in-place outputs (a hand-scheduled fusion's aliases): copied into their
  /// inputs after the launch.
  void writeAliases(std::span<const eval::Argument> inputs, std::vector<Tensor>& outputs,
                    CUstream stream) const;
  /// After a launch of a kernel with checked index reads: the UserError of a failed one.
  void checkIndexError(LaunchPlan& plan, CUstream stream);
  LaunchParams runResident(std::span<const eval::Argument> inputs, std::vector<Tensor>& outputs,
                           double* plan_seconds, std::span<const Tensor> into);
  std::unique_ptr<ir::Fusion> fusion_;
  std::unique_ptr<kir::Kernel> kernel_;
  codegen::GeneratedKernel generated_;
  codegen::CodegenOptions codegen_options_;  ///< set by compile(), for every index type
  std::shared_ptr<const ComputeDevice> device_;
  ExecutorOptions options_;
  std::unique_ptr<Compiled> compiled_;
  const codegen::GeneratedKernel* last_generated_ = nullptr;
  const LoadedKernel* last_loaded_ = nullptr;
  LaunchParams last_launch_;
  // Filled at compile(): what run() needs without looking at the fusion again.
  bool has_vectorized_ = false;
  std::vector<InPlaceOutput> aliases_;  ///< the fusion's in-place outputs
  // Guards what runs share: the plan list and statistics, signature_, module building (makePlan,
  // moduleFor, generated_), last_launch_, last_generated_ and last_loaded_.
  mutable std::mutex mutex_;
  // Idle plans, most recently used first (a running plan is out of the list); signature_ is the
  // scratch a run's signature goes in, under mutex_.
  std::vector<std::unique_ptr<LaunchPlan>> plans_;
  std::vector<int64_t> signature_;
  int64_t plan_hits_ = 0;
  int64_t plan_misses_ = 0;
  // compile() against runs in flight: runs_ counts runs (RunGate), compiling_ holds new runs back
  // while a compile() waits for runs_ to reach 0 and swaps its kernel in. Never held during a
  // launch or a compile's lowering.
  std::mutex gate_mutex_;
  std::condition_variable gate_cv_;
  int64_t runs_ = 0;
  bool compiling_ = false;
};

}  // namespace loom::exec
