// SPDX-License-Identifier: Apache-2.0
// SegmentExecutor: what the runtime holds for each segment of a segmentation, whatever the
// segment's kind of work (segmenter::SegmentWork): a kernel (KernelSegmentExecutor: scheduled,
// lowered and compiled once), a communication (CommunicationExecutor) or a matmul
// (MatmulSegmentExecutor: a GEMM library call). FusionKernelRuntime
// keeps one vector of them and runs each the same way; makeSegmentExecutor is the one place
// that looks at the kind.
//
// Adding a kind of segment (a library call such as a cuBLASLt matmul, an attention kernel, a
// host program): an alternative of segmenter::SegmentWork, a SegmentExecutor subclass, and its
// case in makeSegmentExecutor (docs/design.md, "Segments").
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "loom/eval/argument.h"
#include "loom/exec/compute_device.h"
#include "loom/exec/kernel_executor.h"
#include "loom/exec/kernel_plan.h"
#include "loom/exec/output_views.h"
#include "loom/multidevice/communicator.h"
#include "loom/segmenter/segmented_fusion.h"
#include "loom/support/options.h"

namespace loom::runtime {

/// What one segment of a run did.
struct SegmentRecord {
  int64_t segment = 0;
  /// segmenter::workKindName: "kernel", "communication" or "matmul".
  std::string kind;
  /// The kernel's scheduler ("pointwise", ...), the communication's type ("Allgather", ...) or
  /// a matmul segment's op ("matmul", "linear"): segmenter::Segment::what().
  std::string scheduler;
  /// HeuristicParams::toString() or Communication::toString(): Segment::parameters().
  std::string params;
  /// A kernel's launch (grid, block, shared memory); empty for other kinds.
  exec::LaunchParams launch;
  /// Host wall time of the segment's run. On the device-resident path this is the host cost of
  /// queueing the launch (allocation, arguments, cuLaunchKernel), not kernel time; time kernels
  /// with CUDA events. With host tensors on cuda it includes the copies.
  double seconds = 0;
  /// The part of `seconds` spent building or loading a kernel's module (its launch plan): the
  /// compile a first run pays (KernelExecutor::runInto); 0 when it was reused.
  double compileSeconds = 0;
  int64_t bytes = 0;  ///< bytes of the segment's input and output tensors
  int64_t inputBytes = 0;   ///< the part of `bytes` read
  int64_t outputBytes = 0;  ///< the part of `bytes` written
  exec::Backend backend = exec::Backend::Host;
  // Filled only when the runtime profiles (RuntimeOptions::profile):
  /// The segment's time on its device: CUDA events around its work on the stream, the host
  /// clock on the host backend, less `compileSeconds` (a first run's build happens between the
  /// marks). -1 when not profiled.
  double deviceSeconds = -1;
  /// A kernel segment's kernel name and registers per thread (0 on the host backend).
  std::string kernelName;
  int64_t registers = 0;

  bool isKernel() const { return kind == "kernel"; }
};

/// What every segment executor is made with (FusionKernelRuntime's options, in the runtime's
/// own terms).
struct SegmentContext {
  std::shared_ptr<const exec::ComputeDevice> device;
  exec::ExecutorOptions executor = {};
  /// Not owned; may be null (a communication then says the fusion needs one).
  multidevice::Communicator* communicator = nullptr;
  int64_t deviceId = 0;
  const DumpOptions* dump = nullptr;  ///< scheduler_params, fusion_ir_scheduled, compile_time
};

class SegmentExecutor {
 public:
  virtual ~SegmentExecutor() = default;
  /// Runs the segment on `args` (its fusion's inputs, in order); `outputs` (empty) receives its
  /// fusion's outputs; `record` gets the launch and the compile time a first run paid. `into`
  /// (empty, or one per output; only kernels take it): a defined tensor is the memory that
  /// output is stored into (an in-place output, KernelExecutor::runInto).
  virtual void runInto(std::span<const eval::Argument> args, std::vector<Tensor>& outputs,
                       SegmentRecord& record, std::span<const Tensor> into) = 0;
  /// One step of the host program (FusionKernelRuntime::hostProgram), e.g.
  /// "kernel (pointwise): T0 -> T1".
  virtual std::string step(const segmenter::Segment& segment) const = 0;
  /// True when runInto writes SegmentRecord::params (what it ran, which may differ per run).
  virtual bool saysWhatRan() const { return false; }
  /// The concrete launch plan of the run just made on `args` (exec/kernel_plan.h), for the plan
  /// cache; nullopt for work that has none (every segment but a kernel's).
  virtual std::optional<exec::KernelPlan> exportPlan(std::span<const eval::Argument> args) {
    (void)args;
    return std::nullopt;
  }
};

/// A kernel segment: a copy of the segment's fusion scheduled with its parameters, compiled once
/// (lowering errors surface here as UserErrors). An output that is a view of an input
/// (exec/output_views.h) is returned as that view, over the input's memory, when the input's
/// strides express it; when every output is, nothing is launched. Not for a segment reading an
/// input the fusion writes in place, and only a row-major view for an output another segment
/// reads.
class KernelSegmentExecutor final : public SegmentExecutor {
 public:
  KernelSegmentExecutor(const segmenter::Segment& segment, const SegmentContext& context);
  void runInto(std::span<const eval::Argument> args, std::vector<Tensor>& outputs,
               SegmentRecord& record, std::span<const Tensor> into) override;
  std::string step(const segmenter::Segment& segment) const override;
  /// The kernel's plan, unless an output may be a view of an input: a plan replays the kernel
  /// alone, which would return a copy where this executor returns the view.
  std::optional<exec::KernelPlan> exportPlan(std::span<const eval::Argument> args) override {
    if (!view_chains_.empty()) return std::nullopt;
    return executor_.exportPlan(args);
  }
  const exec::KernelExecutor& executor() const { return executor_; }
  /// The kernel without the outputs that may be views of inputs, which a run launches instead of
  /// executor() when each of them is a view (their bytes are then neither computed nor written);
  /// nullptr when there are none, every output may be one, or the segment's scheduler does not
  /// take the fusion without them.
  const exec::KernelExecutor* executorWithoutViews() const { return without_views_.get(); }

 private:
  void compileWithoutViews(const segmenter::Segment& segment, const SegmentContext& context,
                           const exec::ExecutorOptions& options);

  exec::KernelExecutor executor_;
  /// executorWithoutViews(), and the segment output each of its outputs is.
  std::unique_ptr<exec::KernelExecutor> without_views_;
  std::vector<int64_t> lean_outputs_;
  /// Outputs that may be views (chains into view_fusion_, a copy of the unscheduled segment
  /// fusion), and for each whether only a row-major view will do.
  std::unique_ptr<ir::Fusion> view_fusion_;
  std::vector<exec::ViewChain> view_chains_;
  std::vector<bool> view_dense_only_;
};

/// The executor of `segment`'s work.
std::unique_ptr<SegmentExecutor> makeSegmentExecutor(const segmenter::Segment& segment,
                                                     const SegmentContext& context);

/// "T0, T1" (or "nothing"): the values a step reads or writes, for host-program lines.
std::string valueNames(const std::vector<ir::Val*>& values);

}  // namespace loom::runtime
