// SPDX-License-Identifier: Apache-2.0
// AttentionSegmentExecutor: the SegmentExecutor of a segment that is one sdpfa_fwd or sdpfa_bwd
// node (segmenter::AttentionWork). Each run reads the node's Scalars (dropout_p, is_causal,
// scale, seed, offset) and hands the operands to runtime::AttentionRunner, which runs Loom's
// fused kernel where it takes them (on a GPU or the host backend) and the composite otherwise,
// and says which ran: each run's SegmentRecord::params, LOOM_DUMP=scheduler_choice (one line per
// run), and the counts below; step() (LOOM_DUMP=host_program) names the segment.
#pragma once

#include <atomic>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "loom/runtime/attention_runner.h"
#include "loom/runtime/segment_executor.h"

namespace loom::runtime {

class AttentionSegmentExecutor final : public SegmentExecutor {
 public:
  /// `segment` must be an attention segment (its fusion holds one SdpaFwdOp or SdpaBwdOp).
  AttentionSegmentExecutor(const segmenter::Segment& segment, const SegmentContext& context);
  ~AttentionSegmentExecutor() override;

  /// UserError naming the operand for a tensor of another dtype or rank than the fusion
  /// declares; the runner's UserErrors otherwise. A result whose tensor has an allocation domain
  /// (sdpfa's outputs follow the query's, key's or value's dim order) is copied into that order.
  void runInto(std::span<const eval::Argument> args, std::vector<Tensor>& outputs,
               SegmentRecord& record, std::span<const Tensor> into) override;
  /// "sdpfa_fwd (fused kernel where it applies, else its composite) on host: T0, T1, T2 -> T3, T4".
  std::string step(const segmenter::Segment& segment) const override;
  bool saysWhatRan() const override { return true; }

  /// How many runs took the fused kernel, and how many the composite (a test's view).
  int64_t fusedRuns() const { return fused_runs_.load(); }
  int64_t compositeRuns() const { return composite_runs_.load(); }

 private:
  const segmenter::Segment* segment_ = nullptr;
  const ir::Expr* expr_ = nullptr;  ///< the segment fusion's one node (owned by the segment)
  std::vector<size_t> arg_of_;      ///< per tensor operand of expr_: its argument position
  std::vector<size_t> result_of_;   ///< per segment output: which of expr_'s results it is
  /// per segment output: its allocation's order of its dims (allocationPermutation), empty
  /// for the row-major ones
  std::vector<std::vector<int64_t>> result_order_;
  std::shared_ptr<const exec::ComputeDevice> device_;
  CUstream stream_ = nullptr;  ///< the executor's stream (the copies into allocation order)
  bool dump_choice_ = false;   ///< LOOM_DUMP=scheduler_choice
  std::unique_ptr<AttentionRunner> runner_;
  std::atomic<int64_t> fused_runs_{0};
  std::atomic<int64_t> composite_runs_{0};
};

}  // namespace loom::runtime
