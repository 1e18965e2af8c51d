// SPDX-License-Identifier: Apache-2.0
// KernelPlan: one kernel's launch plan for one input signature with every value concrete, so a
// new process can launch the kernel without the fusion, its kernel IR or an evaluator.
//
//   std::optional<exec::KernelPlan> plan = executor.exportPlan(args);  // after a run on args
//   exec::PlannedKernel kernel(*plan, device, options, timer);          // loads the module
//   bool ran = kernel.run(args, outputs);  // false: args are not what the plan was made for
//
// What it holds is exactly what KernelExecutor's launch plan computed for those arguments: the
// kernel text the module is built from (the disk caches find the cubin or object by it), the
// launch dimensions, per tensor parameter either the input it reads or the allocation of what it
// writes (sizes, strides, dtype, vector alignment), the argument words (sizes and strides), the
// scalar inputs the kernel takes (packed per run from the arguments), the grid-reduction scratch
// sizes, each checked index read's message parts (the offending value is read back after the
// launch, as KernelExecutor does), and which parameter or input each output is. A cooperative
// launch is part of `launch`; its residency is checked again when the plan is loaded. Kernels
// with in-place outputs are not exported (their layout check needs the fusion).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "loom/codegen/kernel_codegen.h"
#include "loom/eval/argument.h"
#include "loom/exec/compute_device.h"
#include "loom/exec/kernel_executor.h"
#include "loom/support/phase_timer.h"

namespace loom::exec {

struct KernelPlan {
  codegen::GeneratedKernel generated;  ///< name and source (the stored form omits kernelText)
  LaunchParams launch;
  struct Param {
    int64_t input = -1;  ///< the segment input it reads; -1: allocated per run
    /// An input: the alignment class (dataAlignment) its address had; the kernel's vector
    /// accesses were checked for it, so a run with another class does not use the plan.
    int64_t inputAlignment = 0;
    DataType dtype = DataType::Float32;
    std::vector<int64_t> allocSizes, sizes, strides;  ///< allocated: as KernelExecutor's plan
    bool view = false;
    int64_t vectorBytes = 0;
    int64_t pointerWord = 0;  ///< where its data pointer goes in `blob`
  };
  std::vector<Param> params;
  /// Per kernel output: a parameter index (>= 0) or -(input position + 1) for a copied input.
  std::vector<int64_t> outputs;
  std::vector<int64_t> blob;  ///< the argument words; data pointers are patched per run
  struct Scalar {
    int64_t input = 0;
    DataType dtype = DataType::Float32;
    std::string name;
  };
  std::vector<Scalar> scalars;
  std::vector<int64_t> scratchWords;  ///< per grid-reduction buffer: int64 words, zeroed per run
  /// Per checked index read (kir::Kernel::indexChecks, in site order): the message's parts, the
  /// indexed dim's extent evaluated for this plan's sizes.
  struct IndexCheck {
    std::string op, index, indexed;
    int64_t dim = 0;
    int64_t extent = 0;
  };
  std::vector<IndexCheck> indexChecks;
  std::string emptyDim;               ///< non-empty: nothing is launched (see KernelExecutor)

  /// Appends the plan to `out` (plan_cache.h's binary form).
  void write(std::string& out) const;
  /// Reads a plan written by write() from the front of `in` (advanced past it); nullopt when the
  /// bytes do not hold one.
  static std::optional<KernelPlan> read(std::string_view& in);
};

/// A KernelPlan with its module loaded: launches it for the arguments it was made for.
class PlannedKernel {
 public:
  /// Loads the module through the device's disk cache (`timer` marks it). A cooperative plan
  /// whose grid the device cannot hold resident at once is a UserError, as at its first launch.
  PlannedKernel(KernelPlan plan, std::shared_ptr<const ComputeDevice> device,
                const ExecutorOptions& options, PhaseTimer& timer);
  /// Allocates the outputs, launches and returns true; returns false without doing anything
  /// when an input's address has another alignment class than the plan was made for. Runs are
  /// serialized (the argument words are patched in place). A failed index check is the op's
  /// UserError (eval::indexOutOfRangeMessage), thrown after the launch.
  bool run(std::span<const eval::Argument> inputs, std::vector<Tensor>& outputs);
  const KernelPlan& plan() const { return plan_; }

 private:
  void checkIndexError();

  KernelPlan plan_;
  std::shared_ptr<const ComputeDevice> device_;
  ExecutorOptions options_;
  std::unique_ptr<LoadedKernel> loaded_;
  std::mutex mutex_;
  std::vector<Tensor> live_;  ///< per run: the allocated parameters, emptied after launch
  Tensor index_error_;        ///< plans with index checks: the two error words, zero between runs
  void* index_error_pointer_ = nullptr;
};

}  // namespace loom::exec
