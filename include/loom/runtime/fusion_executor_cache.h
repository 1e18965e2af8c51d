// SPDX-License-Identifier: Apache-2.0
// The automatic path: FusionKernelRuntime runs one segmentation with compiled kernels, and
// FusionExecutorCache picks (or makes) the runtime for each set of inputs.
//
//   runtime::FusionExecutorCache cache(std::move(fusion));
//   std::vector<Tensor> outs = cache.run(args);       // segment, schedule, compile on a miss
//
// Cache key (InputKey): per argument its kind; per tensor its dtype, device (type and index),
// rank, sizes, strides and data alignment (largest power of two up to 16 dividing the address);
// scalar values are not part of it, except when tensor sizes depend on scalar inputs
// (segmenter::sizesDependOnScalarInputs: a factory, reshape or pad size given as a scalar
// input), where the values of the scalar arguments are appended. The key is a flat vector of
// int64 with a word-wise FNV-1a hash;
// equality compares the whole vector, so a hash collision never picks a wrong runtime.
// On a miss the fusion is segmented for the new inputs (with heuristics), in a copy whose tensor
// inputs carry the contiguity their strides prove (exec::contiguityFromStrides; one copy per
// pattern of flags), so transposed, sliced or expanded (stride 0) inputs need no declaration and
// the kernels index contiguous dims without strides only where that is true. A fusion with
// dynamic reshapes is concretized in that copy for the inputs' sizes (one copy per pattern of
// flags and segmenter::Concretization). When an existing runtime has the same concretization and
// the same segmentation with equal HeuristicParams for every segment, its compiled kernels are
// reused for the new key; only otherwise are kernels scheduled and compiled.
//
// The cached path does no analysis: the key is computed into a reused buffer and looked up, then
// per segment the executor's launch plan for the input signature (KernelExecutor) allocates the
// outputs, patches a reused argument buffer and launches. Value slots are planned once; the
// original inputs are referenced, not copied, and intermediates are freed after their last use.
//
// Devices (a GPU, RuntimeOptions::device): with CUDA tensor arguments on it everything stays there:
// intermediates between segments and the outputs are CUDA tensors allocated and freed
// stream-ordered on RuntimeOptions::executor.stream, every launch is queued on that stream and
// run() returns without synchronizing:
//
//   runtime::RuntimeOptions opts;
//   opts.backend = exec::Backend::Cuda;
//   opts.executor.stream = stream;                  // CUstream; null: the legacy default stream
//   runtime::FusionExecutorCache cache(std::move(fusion), opts);
//   std::vector<Tensor> outs = cache.run(args);     // args and outs CUDA tensors
//
// With host tensor arguments the inputs are copied to the device once, the segments run there,
// and the outputs are copied back (synchronous). Mixed host/CUDA arguments, another GPU, or CUDA
// tensors with the host backend are UserErrors.
//
// Threads: run() may be called from several threads at once. A hit takes a shared lock for the
// key lookup only, then runs the runtime concurrently with other hits (each run works in its own
// scratch and launch plans; FusionKernelRuntime::run, KernelExecutor::runInto). Misses are
// serialized on one lock, so a key is segmented and compiled once; hits of compiled keys go on
// meanwhile. With CUDA tensors every run queues on RuntimeOptions::executor.stream: use one cache
// per stream when the threads' work should overlap on the device. lastRuntime() and lastRun()
// describe the last run; read them when no run is in flight.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "loom/eval/argument.h"
#include "loom/exec/in_place.h"
#include "loom/exec/kernel_executor.h"
#include "loom/ir/fusion.h"
#include "loom/multidevice/communicator.h"
#include "loom/runtime/communication_executor.h"
#include "loom/runtime/plan_cache.h"
#include "loom/runtime/segment_executor.h"
#include "loom/scheduler/device_info.h"
#include "loom/segmenter/concretize.h"
#include "loom/segmenter/device_program.h"
#include "loom/segmenter/segmented_fusion.h"
#include "loom/support/options.h"
#include "loom/support/pass_list.h"

namespace loom::runtime {

namespace detail {
class RankAgreement;
}

/// The part of the inputs compiled kernels depend on. See the file comment.
struct InputKey {
  std::vector<int64_t> fields;
  uint64_t hash = 0;

  static InputKey of(std::span<const eval::Argument> args);
  /// Recomputes this key for `args` in place (no allocation once `fields` has grown).
  void assign(std::span<const eval::Argument> args);
  bool operator==(const InputKey& other) const { return fields == other.fields; }
};

struct InputKeyHash {
  size_t operator()(const InputKey& k) const { return size_t(k.hash); }
};

struct RuntimeOptions {
  /// Where the kernels run (exec/compute_device.h). Null: made from `backend` and the GPU below.
  std::shared_ptr<const exec::ComputeDevice> device = nullptr;
  exec::Backend backend = exec::Backend::Auto;
  /// Passed to every segment's executor; executor.stream is the stream of the whole run.
  exec::ExecutorOptions executor = {};
  /// Tuning: heuristic fields set after the heuristics ran, for every segment whose parameters
  /// have the field (HeuristicParams::setField), e.g. {"bdimx", 16}. A name that no segment's
  /// parameters have is a user error. Part of the kernels' identity, not of the cache key: use
  /// one cache per set of overrides.
  std::vector<std::pair<std::string, int64_t>> paramOverrides = {};
  /// The device id this process runs a sharded fusion as (an id of the fusion's device meshes;
  /// under mpirun, the rank): the arguments are its local shards (multidevice::shardTensor), the
  /// outputs are its local shards, and the kernels are its local program (docs/multidevice.md).
  /// Required for a fusion with device meshes; ignored otherwise.
  std::optional<int64_t> deviceId = std::nullopt;
  /// The ranks this process runs among (multidevice/communicator.h; not owned, must outlive the
  /// cache). With one, deviceId defaults to its rank and every device of the fusion's meshes
  /// must be a rank of it.
  multidevice::Communicator* communicator = nullptr;
  /// The GPU of the cuda backend when `device` is null; unset: the communicator's local rank
  /// modulo the number of GPUs (ranks may share one), else executor.device.
  std::optional<int> gpu = std::nullopt;
  /// What the runtime's own dumps print (scheduler_params, fusion_ir_scheduled, host_program,
  /// compile_time of a cache miss); unset: LOOM_DUMP. Lets an embedding program (or a test) ask
  /// for them per cache without touching the process environment.
  std::optional<DumpOptions> dump = std::nullopt;

  /// Time every segment on its device and record kernel names and registers
  /// (SegmentRecord::deviceSeconds, kernelName, registers): marks on the stream around each
  /// segment and a wait for the last one per run. For profiles (loom.direct.PythonProfiler),
  /// not for speed.
  bool profile = false;

  /// The plan cache (runtime/plan_cache.h): a warm start reads a stored plan instead of
  /// segmenting, scheduling, lowering and generating code. Unset: LOOM_PLAN_CACHE (on unless
  /// "0"). A run served from a plan builds no FusionKernelRuntime; lastRuntime() builds it when
  /// asked (FusionExecutorCache::lastRuntime).
  std::optional<bool> planCache = std::nullopt;

  /// `dump` when set, else LOOM_DUMP.
  const DumpOptions& dumps() const { return dump ? *dump : DumpOptions::fromEnvironment(); }
};

/// Runs one segmentation: one SegmentExecutor per segment (runtime/segment_executor.h): kernels
/// scheduled and compiled once, communications set up once.
class FusionKernelRuntime {
 public:
  /// Makes every segment's executor (lowering errors surface here as UserErrors).
  FusionKernelRuntime(segmenter::SegmentedFusion segmented, const RuntimeOptions& options);

  /// Runs the segments in order on `args` (the original fusion's inputs, already validated, all
  /// host or all CUDA tensors, see the file comment) and returns the original fusion's outputs.
  /// Safe to call from several threads at once.
  /// An in-place output (segmenter::InPlaceWrite) is stored into its input's tensor by its
  /// segment, or copied into it after the last segment; either way the output returned is that
  /// tensor.
  std::vector<Tensor> run(std::span<const eval::Argument> args);
  /// run(), and the plan of this run for the plan cache (runtime/plan_cache.h) into `plan`:
  /// left unset when some segment is not a kernel whose plan can be exported, or the runtime
  /// writes in place or runs a device's part of a sharded fusion.
  std::vector<Tensor> run(std::span<const eval::Argument> args, std::optional<RuntimePlan>& plan);

  /// Takes the per-run fields (launch, seconds, bytes) of a run these segments made without this
  /// runtime, a stored plan's (one step per segment, in order), as lastRun(): the view
  /// FusionExecutorCache::lastRuntime() builds for a planned run reports that run.
  void adoptRun(std::span<const PlannedRuntime::StepRecord> steps);

  const segmenter::SegmentedFusion& segmented() const { return segmented_; }
  /// What each segment did in the last run to finish (read it when no run is in flight).
  const std::vector<SegmentRecord>& lastRun() const { return records_; }
  /// Segments of every kind, and of each kind.
  int64_t numSegments() const { return int64_t(executors_.size()); }
  int64_t numKernels() const { return num_kernels_; }
  int64_t numMatmuls() const { return num_matmuls_; }
  int64_t numAttentions() const { return num_attentions_; }
  int64_t numCommunications() const {
    return numSegments() - num_kernels_ - num_matmuls_ - num_attentions_;
  }
  /// Segment `segment`'s executor.
  const SegmentExecutor& segmentExecutor(int64_t segment) const {
    return *executors_.at(size_t(segment));
  }
  /// The kernel executor of a kernel segment (UserError for a segment of another kind).
  const exec::KernelExecutor& executor(int64_t segment) const;
  /// The executor of a communication segment, or nullptr for a segment of another kind.
  const CommunicationExecutor* communication(int64_t segment) const {
    return dynamic_cast<const CommunicationExecutor*>(executors_.at(size_t(segment)).get());
  }
  /// What a run does, step by step (LOOM_DUMP=host_program prints it when the runtime is made):
  ///   host program of device 1: 2 steps on host
  ///     0: receive by SendRecv from mesh [0] to mesh [1] (team [0, 1]): a stand-in for T6 -> T5
  ///     1: kernel (pointwise): T5 -> T4
  std::string hostProgram() const;

 private:
  segmenter::SegmentedFusion segmented_;
  std::vector<std::unique_ptr<SegmentExecutor>> executors_;  // one per segment
  int64_t num_kernels_ = 0;
  int64_t num_matmuls_ = 0;
  int64_t num_attentions_ = 0;
  // Value slots: the original inputs first, then every segment output. Plans index them.
  int64_t num_slots_ = 0;
  std::vector<std::vector<int64_t>> input_slots_;   // per segment
  std::vector<std::vector<int64_t>> output_slots_;  // per segment
  std::vector<std::vector<int64_t>> free_after_;    // per segment: slots whose last use it is
  std::vector<int64_t> fusion_output_slots_;
  std::vector<bool> output_is_input_;
  std::vector<bool> direct_;  // per segment: its inputs are exactly the fusion's, in order
  // In-place outputs: per segment, (its output, the original input whose tensor that output is
  // stored into); and the ones computed aside, copied into their inputs after the last segment.
  std::vector<std::vector<std::pair<size_t, size_t>>> store_into_;
  std::vector<segmenter::InPlaceWrite> copied_;
  // Slots holding a size of an original input (a segment's extent math needs it; see
  // segmenter::buildSegmentFusion), filled from the arguments at the start of each run.
  struct SizeSlot {
    int64_t slot;
    size_t input;
    int64_t dim;
    int64_t factor = 1;  ///< the size times this (a local shard's whole extent)
  };
  std::vector<SizeSlot> size_slots_;
  std::shared_ptr<const exec::ComputeDevice> device_;
  CUstream stream_ = nullptr;
  std::optional<int64_t> device_id_;  ///< RuntimeOptions::deviceId (sharded fusions)
  bool profile_ = false;              ///< RuntimeOptions::profile
  // What one run works in, reused by later runs: slot -> the argument (the caller's inputs by
  // pointer, segment outputs in `owned`), the gathered arguments of non-direct segments, the
  // outputs of the segment being run, and per segment the launch, time and bytes.
  struct Scratch {
    std::vector<const eval::Argument*> slots;
    std::vector<eval::Argument> owned;  // slots past the original inputs
    std::vector<std::vector<eval::Argument>> segment_args;
    std::vector<Tensor> segment_outs;
    std::vector<Tensor> segment_into;    // the buffers of a segment's in-place outputs
    std::vector<SegmentRecord> records;  // launch, seconds and bytes only
  };
  std::unique_ptr<Scratch> newScratch() const;
  /// RuntimeOptions::profile: each segment's device time from its two marks, its kernel's name
  /// and registers, into the run's records.
  void recordProfile(Scratch& sc, const std::vector<std::unique_ptr<exec::StreamMark>>& marks);
  std::vector<Tensor> runImpl(std::span<const eval::Argument> args,
                              std::vector<std::optional<exec::KernelPlan>>* captured);
  // Guards idle_ and records_. Concurrent runs each take an idle scratch (or make one).
  std::mutex mutex_;
  std::vector<std::unique_ptr<Scratch>> idle_;
  std::vector<SegmentRecord> records_;  // the last run to finish
};

class FusionExecutorCache {
 public:
  explicit FusionExecutorCache(std::unique_ptr<ir::Fusion> fusion, RuntimeOptions options = {});
  ~FusionExecutorCache();

  /// Validates `args` (as KernelExecutor does: count, kind, rank, dtype, sizes, device) on a
  /// miss, and returns the outputs of the fusion: CUDA tensors, not synchronized, for CUDA
  /// arguments; host tensors for host arguments. A sharded fusion whose tensors live on meshes
  /// this device is not in (segmenter/device_program.h): its arguments for inputs it does not
  /// hold are not read (pass undefined tensors), and its outputs it does not hold are undefined
  /// tensors (Tensor::defined() is false). With a communicator of several ranks, the first run
  /// of each signature (the sizes of the inputs every rank holds) is collective: the ranks check
  /// that they run the same fusion and plan on consistent shards, and a disagreement is the same
  /// UserError on every rank, naming the rank and what differs (docs/multidevice.md, "When a
  /// rank fails"); later runs of the signature communicate nothing more.
  std::vector<Tensor> run(std::span<const eval::Argument> args);

  const ir::Fusion& fusion() const { return *fusion_; }
  /// The runtime the last run to start used; null before the first run. When that run was
  /// served by a stored plan (the plan cache: no runtime was built for it), the runtime is built
  /// now, as a cold miss of the run's input key builds it (segment, schedule, lower, codegen;
  /// the kernels come from the backend's disk cache), its lastRun() reports the planned run,
  /// and later runs of the key use it. Never on the run path: only asking builds it. Call it
  /// when no run is in flight.
  const FusionKernelRuntime* lastRuntime();
  /// Distinct runtimes (compiled kernel sets) and the keys seen. A key served by a stored plan
  /// is a key without a runtime until lastRuntime() builds one for it.
  int64_t numRuntimes() const {
    std::lock_guard<std::mutex> lock(compile_mutex_);
    return int64_t(runtimes_.size());
  }
  int64_t numKeys() const {
    std::shared_lock<std::shared_mutex> lock(keys_mutex_);
    return int64_t(by_key_.size());
  }
  int64_t hits() const { return hits_.load(std::memory_order_relaxed); }
  int64_t misses() const { return misses_.load(std::memory_order_relaxed); }
  /// Plan cache (RuntimeOptions::planCache): misses served from a stored plan (no segmentation,
  /// scheduling, lowering or codegen ran for them), plans stored, and entries found but ignored
  /// (damaged, foreign or stale files). Read them when no run is in flight.
  int64_t planHits() const { return plan_hits_.load(std::memory_order_relaxed); }
  int64_t planStores() const { return plan_stores_.load(std::memory_order_relaxed); }
  int64_t planIgnored() const { return plan_ignored_.load(std::memory_order_relaxed); }
  /// The pre-segmentation passes construction ran to shard a multidevice fusion
  /// (segmenter::shardedCopy, once; empty for a fusion without meshes).
  const PassReport& shardingPasses() const { return sharding_passes_; }

 private:
  std::vector<Tensor> runResident(std::span<const eval::Argument> args);
  /// runResident on the arguments of what this device runs (program_'s inputs when it has one).
  std::vector<Tensor> runProgram(std::span<const eval::Argument> args);
  /// What this device segments and runs: program_'s fusion, else the whole fusion.
  const ir::Fusion& programFusion() const { return program_ ? *program_->fusion : *fusion_; }
  /// The runtime compiled for `key`, or nullptr (takes keys_mutex_ shared).
  FusionKernelRuntime* findRuntime(const InputKey& key) const;
  /// The plan-cache key of `key` (a hex SHA-256), or empty when this fusion, these options or
  /// the dumps asked for keep the plan cache out (see runProgram).
  std::string planKey(const InputKey& key, std::span<const eval::Argument> args);
  /// The runtime of `args` (the miss path, compile_mutex_ held): segmented and built, or an
  /// existing one with the same segments and heuristics.
  FusionKernelRuntime* runtimeFor(std::span<const eval::Argument> args, PhaseTimer& timer);
  /// The stored plan of `plan_key` loaded and run: true with the outputs in `outs`.
  bool runStoredPlan(const InputKey& key, const std::string& plan_key,
                     std::span<const eval::Argument> args, std::vector<Tensor>& outs);
  /// A copy of the fusion that the runtimes of some keys segment: with the input contiguity
  /// their strides prove. Keyed by the concretization too (segmenter/concretize.h; the
  /// segmenter's pre-segmentation passes apply it), which runtimes are reused by.
  struct Variant {
    std::vector<int64_t> pattern;              ///< contiguity flags of the tensor inputs
    segmenter::Concretization concretization;  ///< empty without dynamic reshapes
    std::unique_ptr<ir::Fusion> fusion;
  };
  /// The variant for `args` (made on first use).
  const Variant& contiguityVariant(std::span<const eval::Argument> args);
  // Set at construction, read-only after.
  PassReport sharding_passes_;
  std::unique_ptr<ir::Fusion> fusion_;
  /// This device's part, when it does not hold every tensor of a sharded fusion.
  std::optional<segmenter::DeviceProgram> program_;
  std::vector<eval::Argument> stand_ins_;  ///< program_'s stand-in arguments, made once
  std::vector<exec::InPlaceOutput> aliases_;  ///< the fusion's in-place outputs
  bool dynamic_ = false;       ///< the fusion has dynamic reshapes
  bool scalar_sizes_ = false;  ///< tensor sizes depend on scalar inputs: their values are keyed
  RuntimeOptions options_;     // device (and backend) resolved at construction
  /// What the schedulers size launches for: the real GPU's properties on the cuda backend with a
  /// driver, the H200 defaults otherwise.
  scheduler::DeviceInfo device_info_;

  // Guarded by compile_mutex_ (misses run one at a time, holding it).
  mutable std::mutex compile_mutex_;
  /// Set once a segment's schedule failed to compile: segmentation verifies every proposal.
  bool verify_schedules_ = false;
  /// A sharded fusion between several ranks: their check that they agree, on the first run of
  /// each signature (runtime/rank_agreement.h).
  std::unique_ptr<detail::RankAgreement> agreement_;
  std::vector<Variant> variants_;
  std::vector<std::unique_ptr<FusionKernelRuntime>> runtimes_;
  /// Per runtime, the concretization it was compiled for: a key reuses a runtime only when its
  /// concretization is equal (and its segmentation the same).
  std::vector<segmenter::Concretization> runtime_concretizations_;

  // Guarded by keys_mutex_: shared for lookups, exclusive to insert (with compile_mutex_ held).
  mutable std::shared_mutex keys_mutex_;
  std::unordered_map<InputKey, FusionKernelRuntime*, InputKeyHash> by_key_;

  /// A key served by a stored plan: its runtime, and what lastRuntime() builds the key's
  /// FusionKernelRuntime from (the arguments' metadata: stand-in tensors of the same sizes,
  /// strides, dtype, device and alignment class, never read; the scalar values).
  struct Planned {
    InputKey key;
    std::unique_ptr<PlannedRuntime> runtime;
    std::vector<eval::Argument> metadata;
  };
  /// Keys served by stored plans (guarded by keys_mutex_ as by_key_ is).
  std::unordered_map<InputKey, std::unique_ptr<Planned>, InputKeyHash> planned_;
  /// The last run's, when a stored plan served it (else null and last_ says).
  std::atomic<Planned*> last_planned_{nullptr};
  std::string fusion_text_hash_;  ///< of programFusion()'s text, made on the first plan key

  std::atomic<FusionKernelRuntime*> last_{nullptr};
  std::atomic<int64_t> plan_hits_{0};
  std::atomic<int64_t> plan_stores_{0};
  std::atomic<int64_t> plan_ignored_{0};
  std::atomic<int64_t> hits_{0};
  std::atomic<int64_t> misses_{0};
};

}  // namespace loom::runtime
