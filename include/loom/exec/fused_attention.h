// SPDX-License-Identifier: Apache-2.0
// Loom's fused attention (issue 30) on a ComputeDevice: the kernels of codegen/attention_kernel.h
// (the forward, the backward's two) built once per dtype and head dim, on the GPU or on the host
// backend.
//
//   exec::FusedAttention fa(device);
//   if (!fa.unsupported(q, k, v)) {
//     auto [out, lse] = fa.forward(q, k, v, {.scale = 0.125, .causal = true}, stream);
//     auto [dq, dk, dv] = fa.backward(grad, q, k, v, out, lse, {.scale = 0.125, .causal = true});
//   }
//
// The same math as ops::sdpfaFwd's and sdpfaBwd's composites (docs/ops.md, "Attention"): output
// [N, H, L, E] in the inputs' dtype, log_sumexp [N, H, L] f32, the dropout mask of ops::dropout
// on [N, H, L, S]; the gradients in their inputs' shapes and dtype.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "loom/exec/compute_device.h"

namespace loom::exec {

/// The forward's scalar arguments, as sdpfaFwd's (already resolved to numbers).
struct FusedAttentionArgs {
  double scale = 1.0;
  bool causal = false;
  double dropout_p = 0.0;  ///< in [0, 1); 0 draws nothing
  int64_t seed = 0;
  int64_t offset = 0;
};

struct FusedAttentionResult {
  Tensor output;      ///< [N, H, L, E], contiguous, the inputs' dtype
  Tensor log_sumexp;  ///< [N, H, L], contiguous, f32
};

struct FusedAttentionGrads {
  Tensor grad_query, grad_key, grad_value;  ///< contiguous, the inputs' dtype
};

class FusedAttention {
 public:
  /// poison_outputs: fill the outputs with NaN before the kernel runs (ExecutorOptions'
  /// poisonOutputs), so that a row the kernel does not write shows.
  explicit FusedAttention(std::shared_ptr<const ComputeDevice> device, bool poison_outputs = false);

  /// Why the kernel cannot take these operands (nullopt: it can): each must be a 4-D [N, H, *, *]
  /// tensor of this device, of one dtype, with matching N, H, E and S, and what
  /// codegen::fusedAttentionUnsupported accepts (dtype, head dim).
  std::optional<std::string> unsupported(const Tensor& q, const Tensor& k, const Tensor& v) const;

  /// Runs the forward (queued on `stream` on a GPU). UserError with unsupported()'s reason, or
  /// for dropout_p outside [0, 1).
  FusedAttentionResult forward(const Tensor& q, const Tensor& k, const Tensor& v,
                               const FusedAttentionArgs& args, CUstream stream = nullptr) const;

  /// The gradients from the forward's saved output and log_sumexp (`args` the forward's): two
  /// kernels, dq per block of query rows and dk, dv per block of keys, each recomputing P per
  /// tile from log_sumexp and the mask from the seed and offset. grad_output and output are
  /// [N, H, L, E] of the inputs' dtype, log_sumexp [N, H, L] f32 (any strides). UserErrors as
  /// forward's, and for those operands' shapes and dtypes.
  FusedAttentionGrads backward(const Tensor& grad_output, const Tensor& q, const Tensor& k,
                               const Tensor& v, const Tensor& output, const Tensor& log_sumexp,
                               const FusedAttentionArgs& args, CUstream stream = nullptr) const;

 private:
  const LoadedKernel& kernel(int pass, DataType dtype, int64_t head_dim, bool dropout) const;

  std::shared_ptr<const ComputeDevice> device_;
  bool poison_outputs_;
  mutable std::mutex mutex_;  ///< guards kernels_ (forward may run from several threads)
  mutable std::map<std::tuple<int, DataType, int64_t, bool>, std::unique_ptr<LoadedKernel>>
      kernels_;
};

}  // namespace loom::exec
