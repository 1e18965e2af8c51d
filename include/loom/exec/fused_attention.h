// SPDX-License-Identifier: Apache-2.0
// Loom's fused attention forward (issue 30) on a ComputeDevice: the kernel of
// codegen/attention_kernel.h built once per dtype and head dim, on the GPU or on the host backend.
//
//   exec::FusedAttention fa(device);
//   if (!fa.unsupported(q, k, v)) {
//     auto [out, lse] = fa.forward(q, k, v, {.scale = 0.125, .causal = true}, stream);
//   }
//
// The same math as ops::sdpfaFwd's composite (docs/ops.md, "Attention"): output [N, H, L, E] in
// the inputs' dtype, log_sumexp [N, H, L] f32, the dropout mask of ops::dropout on [N, H, L, S].
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
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

 private:
  const LoadedKernel& kernel(DataType dtype, int64_t head_dim) const;

  std::shared_ptr<const ComputeDevice> device_;
  bool poison_outputs_;
  mutable std::mutex mutex_;  ///< guards kernels_ (forward may run from several threads)
  mutable std::map<std::pair<DataType, int64_t>, std::unique_ptr<LoadedKernel>> kernels_;
};

}  // namespace loom::exec
