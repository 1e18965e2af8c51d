// SPDX-License-Identifier: Apache-2.0
// MatmulSegmentExecutor: the SegmentExecutor of a segment that is one matmul or linear
// (segmenter::MatmulWork). No kernel is generated: each run reads the operands' sizes and
// strides (ir::matmulGeometry), allocates the dense output and hands the GEMM to the device
// (exec::ComputeDevice::gemm: cuBLASLt on a GPU, the blocked host GEMM on the host backend),
// with the epilogue the segmenter chose (segmenter::MatmulWork: the bias and an activation);
// the segment's output is then the epilogue's last expr.
// An operand the device's GEMM cannot read as it is (on a GPU: no unit-strided dim of the
// matrix, a broadcast inside it, a bias that is not one packed vector) is first copied dense by
// a Loom kernel of its own (a cached set(x) fusion), so any strides run.
#pragma once

#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "loom/ir/matmul_activation.h"
#include "loom/runtime/segment_executor.h"

namespace loom::runtime {

class FusionExecutorCache;

class MatmulSegmentExecutor final : public SegmentExecutor {
 public:
  /// `segment` must be a matmul segment (its fusion holds one MatmulOp or LinearOp).
  MatmulSegmentExecutor(const segmenter::Segment& segment, const SegmentContext& context);
  ~MatmulSegmentExecutor() override;

  /// UserError naming the operand for a tensor of another dtype or rank than the fusion
  /// declares, and (ir::matmulGeometry) for sizes that do not multiply.
  void runInto(std::span<const eval::Argument> args, std::vector<Tensor>& outputs,
               SegmentRecord& record, std::span<const Tensor> into) override;
  /// "matmul by cuBLASLt on cuda:0: T0, T1 -> T2", "linear by the host GEMM on host: ...".
  std::string step(const segmenter::Segment& segment) const override;

  /// How many operands the last runs copied dense first (a test's view of the fallback).
  int64_t denseCopies() const;

 private:
  Tensor dense(size_t operand, const Tensor& t) const;

  const ir::Expr* expr_ = nullptr;  ///< the segment fusion's matmul or linear
  ir::MatmulActivation activation_ = ir::MatmulActivation::None;  ///< its GEMM's epilogue's
  std::vector<size_t> arg_of_;  ///< per operand of expr_: its position among the arguments
  std::shared_ptr<const exec::ComputeDevice> device_;
  exec::ExecutorOptions options_;
  mutable std::mutex mutex_;
  /// Per operand: the copy fusion, made on first need.
  mutable std::vector<std::unique_ptr<FusionExecutorCache>> copies_;
  mutable int64_t dense_copies_ = 0;
};

}  // namespace loom::runtime
