// SPDX-License-Identifier: Apache-2.0
// Attention on tensors (issue 30): Loom's fused kernels where they take the operands, else the
// composites of ops::sdpfaFwd / sdpfaBwd through a FusionExecutorCache. What the attention segment
// of docs/design.md ("Attention on the GPU") would run; usable directly until then.
//
//   runtime::AttentionRunner attention(options);
//   auto fwd = attention.forward(q, k, v, {.scale = 0.125, .causal = true});
//   if (!fwd.fused) std::cout << "composite: " << fwd.whyNotFused << "\n";
//   auto bwd = attention.backward(grad, q, k, v, fwd.output, fwd.log_sumexp, {...});
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

#include "loom/exec/fused_attention.h"
#include "loom/runtime/fusion_executor_cache.h"

namespace loom::runtime {

class AttentionRunner {
 public:
  /// The device, stream and output poisoning of `options` are those of every run.
  explicit AttentionRunner(RuntimeOptions options = {});
  ~AttentionRunner();

  struct Forward {
    Tensor output;            ///< [.., L, Ev], the inputs' dtype
    Tensor log_sumexp;        ///< [.., L], f32
    bool fused = false;       ///< the fused kernel ran (else the composite)
    std::string whyNotFused;  ///< exec::FusedAttention::unsupported's reason when not fused
  };
  struct Backward {
    Tensor grad_query, grad_key, grad_value;
    bool fused = false;
    std::string whyNotFused;
  };

  /// sdpfaFwd of q [.., L, E], k [.., S, E], v [.., S, Ev] (rank 4 or 5, one floating dtype).
  /// UserErrors as the composite's (or as the fused kernel's for dropout_p).
  Forward forward(const Tensor& q, const Tensor& k, const Tensor& v,
                  const exec::FusedAttentionArgs& args);
  /// sdpfaBwd from the forward's output and log_sumexp; `args` the forward's.
  Backward backward(const Tensor& grad_output, const Tensor& q, const Tensor& k, const Tensor& v,
                    const Tensor& output, const Tensor& log_sumexp,
                    const exec::FusedAttentionArgs& args);

 private:
  FusionExecutorCache& composite(bool backward, DataType dtype, int64_t rank);

  RuntimeOptions options_;
  std::shared_ptr<const exec::ComputeDevice> device_;
  exec::FusedAttention fused_;
  std::mutex mutex_;  ///< guards composites_
  std::map<std::tuple<bool, DataType, int64_t>, std::unique_ptr<FusionExecutorCache>> composites_;
};

}  // namespace loom::runtime
