// SPDX-License-Identifier: Apache-2.0
// Heuristic parameters (what a scheduler decided for one fusion and one set of sizes) and the
// runtime information heuristics are computed from.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "loom/eval/argument.h"
#include "loom/eval/expression_evaluator.h"
#include "loom/ir/fusion.h"
#include "loom/ir/tensor_view.h"
#include "loom/scheduler/device_info.h"

namespace loom::scheduler {

/// Every scheduler kind, in no particular order (the registry defines the priority).
enum class SchedulerType : uint8_t {
  Pointwise,
  Reduction,
  InnerPersistent,
  Scan,
  Sort,
  Transpose,
  InnerOuterPersistent,
  OuterPersistent,
  Scatter
};
/// "pointwise", "reduction", "inner_persistent", "scan", "sort", "transpose",
/// "inner_outer_persistent", "outer_persistent", "scatter".
std::string_view schedulerTypeName(SchedulerType type);

/// The parameters one scheduler chose. Two parameter structs that compare equal make the same
/// schedule of the same fusion, so a kernel cache may key compiled kernels on (fusion, params).
class HeuristicParams {
 public:
  explicit HeuristicParams(SchedulerType type) : type_(type) {}
  virtual ~HeuristicParams() = default;

  SchedulerType type() const { return type_; }
  /// One line per field, "Pointwise: vectorize=4 ..." first; printed by LOOM_DUMP=scheduler_params.
  virtual std::string toString() const = 0;
  /// Hash of the type and every field that changes the schedule.
  virtual size_t hash() const = 0;
  /// Same type and equal fields.
  virtual bool sameAs(const HeuristicParams& other) const = 0;
  virtual std::unique_ptr<HeuristicParams> clone() const = 0;
  /// Sets the schedule field `name` (spelled as toString prints it) to `value`, for tuning
  /// (RuntimeOptions::paramOverrides, `loom_bench --params`); false when there is no such field.
  /// Booleans take 0 or 1. The scheduler checks the resulting combination when it schedules.
  virtual bool setField(std::string_view name, int64_t value) = 0;
  /// The fields setField takes, in the order toString prints them, with their values.
  virtual std::vector<std::pair<std::string_view, int64_t>> scheduleFields() const = 0;
  /// True when the schedule vectorizes rows that may start at any address: the kernel is to be
  /// lowered with peeled vector rows (lower::LowerOptions::peelVectorRows; the runtime and the
  /// segmenter pass it on). Whoever lowers a fusion these parameters scheduled must ask for it.
  virtual bool peelVectorRows() const { return false; }

  bool operator==(const HeuristicParams& other) const { return sameAs(other); }
  bool operator!=(const HeuristicParams& other) const { return !sameAs(other); }

 protected:
  HeuristicParams(const HeuristicParams&) = default;
  HeuristicParams& operator=(const HeuristicParams&) = default;

 private:
  SchedulerType type_;
};

/// What the run-time checks and heuristics see: bound sizes, the strides and data alignment of
/// the tensor inputs, and the device.
class SchedulerRuntimeInfo {
 public:
  /// Binds `args` to the fusion inputs (ExpressionEvaluator::bindInputs, so mismatching arguments
  /// are a UserError) and records their strides and data addresses.
  SchedulerRuntimeInfo(const ir::Fusion& fusion, std::span<const eval::Argument> args,
                       DeviceInfo device = {});
  /// Sizes only (already bound in `sizes`): each tensor input is taken to be laid out as its
  /// allocation domain and contiguity flags say, with a 16-byte aligned data address.
  SchedulerRuntimeInfo(const ir::Fusion& fusion, eval::ExpressionEvaluator sizes,
                       DeviceInfo device = {});

  eval::ExpressionEvaluator& evaluator() { return ee_; }
  const DeviceInfo& device() const { return device_; }

  /// Size of `id` as `tv` shows it; UserError when it is not bound.
  int64_t extent(const ir::IterDomain* id, const ir::TensorView* tv) {
    return ee_.extentOf(id, tv);
  }
  /// Strides in elements, one per logical dim without reductions: a tensor input's argument
  /// strides; otherwise dense in allocation order, where a dim whose contiguity flag is false
  /// (and every dim outside it) has the unknown stride -1.
  std::vector<int64_t> strides(const ir::TensorView* tv);
  /// Largest power of two, at most 16, dividing the tensor's data address in bytes (16 for
  /// tensors that are not fusion inputs: the executor allocates them aligned).
  int64_t alignmentBytes(const ir::TensorView* tv) const;

 private:
  const ir::Fusion* fusion_;
  eval::ExpressionEvaluator ee_;
  DeviceInfo device_;
  std::unordered_map<const ir::TensorView*, std::vector<int64_t>> input_strides_;
  std::unordered_map<const ir::TensorView*, int64_t> input_alignment_;
};

}  // namespace loom::scheduler
