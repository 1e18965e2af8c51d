// SPDX-License-Identifier: Apache-2.0
// Scaled dot-product attention, forward and backward, with nvFuser's sdpfa_fwd / sdpfa_bwd
// arguments and results (docs/ops.md, "Attention"): one ir::SdpaFwdOp / SdpaBwdOp node each, a
// segment of its own that runs Loom's fused kernels where they apply, and the composites (matmul,
// reductions, pointwise ops, the counter-based RNG) that define their math everywhere else.
//
//   auto fwd = ops::sdpfaFwd(q, k, v, 0.1, true, std::nullopt, seed, offset);
//   auto bwd = ops::sdpfaBwd(grad, q, k, v, fwd.output, fwd.log_sumexp, 0.1, true,
//                            fwd.philox_seed, fwd.philox_offset, std::nullopt);
#pragma once

#include <memory>
#include <optional>

#include "loom/ops/operand.h"

namespace loom::ir {
class Fusion;
}

namespace loom::ops {

/// nvFuser's SdpfaFwdResult.
struct SdpfaFwdResult {
  TensorView* output;       ///< [N, H, L, Ev], the inputs' dtype
  TensorView* log_sumexp;   ///< [N, H, L], Float32: log(sum(exp(scores))) per row (-inf if empty)
  /// [2] UInt64: the RNG seed the dropout mask was drawn with and its offset (0 if none), as
  /// nvFuser returns it with torch 2.7 and later (flash attention's RNG state)
  TensorView* philox_seed;
  TensorView* philox_offset;  ///< 0-D UInt64: the offset (0 if none)
};

/// nvFuser's SdpfaBwdResult.
struct SdpfaBwdResult {
  TensorView* grad_query;  ///< query's shape and dtype
  TensorView* grad_key;    ///< key's shape and dtype
  TensorView* grad_value;  ///< value's shape and dtype
};

/// Builds one ir::SdpaFwdOp (output, log_sumexp); philox_seed / philox_offset are filled with the
/// seed and offset (a pad of a [1] FullOp, and a 0-D FullOp). Semantics and checks:
/// sdpfaFwdComposite below.
SdpfaFwdResult sdpfaFwd(TensorView* query, TensorView* key, TensorView* value,
                        std::optional<Operand> dropout_p = std::nullopt,
                        std::optional<Operand> is_causal = std::nullopt,
                        std::optional<Operand> scale = std::nullopt,
                        std::optional<Operand> rng_seed = std::nullopt,
                        std::optional<Operand> rng_offset = std::nullopt,
                        TensorView* bias = nullptr, TensorView* mask = nullptr);

/// Builds one ir::SdpaBwdOp. Semantics and checks: sdpfaBwdComposite below.
SdpfaBwdResult sdpfaBwd(TensorView* grad_output, TensorView* query, TensorView* key,
                        TensorView* value, TensorView* output, TensorView* log_sumexp,
                        std::optional<Operand> dropout_p, std::optional<Operand> is_causal,
                        std::optional<Operand> philox_seed, std::optional<Operand> philox_offset,
                        std::optional<Operand> scale = std::nullopt);

/// The definition of sdpfa_fwd, as a composite:
/// torch's scaled_dot_product_attention(query, key, value, dropout_p, is_causal, scale) with
/// log_sumexp: query [N, H, L, E], key [N, H, S, E], value [N, H, S, Ev] (or each with one more
/// leading dim, as nvFuser's device dim), all f32, bf16 or f16 of one dtype, computed in f32.
/// scores = query @ key^T * scale (default 1 / sqrt(E)); is_causal keeps key j <= query i (torch's
/// top-left tril of ones [L, S]); P = exp(scores - log_sumexp); P is dropped out with probability
/// dropout_p (kept entries scaled by 1 / (1 - dropout_p)) by the mask of ops::dropout on a
/// [N, H, L, S] tensor for (rng_seed, rng_offset); output = P @ value.
///  - dropout_p: a number in [0, 1) or a floating Scalar (default 0: no RNG is drawn).
///  - is_causal: a bool or a Bool Scalar (default false).
///  - scale: a number or a floating Scalar (default 1 / sqrt(E)).
///  - rng_seed, rng_offset: integers or integer Scalars; needed unless dropout_p is the constant
///    0 (Loom has no global generator). philox_seed returns both as a [2] UInt64 tensor,
///    philox_offset the offset as a 0-D UInt64 (nvFuser's form since torch 2.7).
///  - bias: a floating tensor added to the scores (in f32) before the softmax; mask: a Bool
///    tensor, false where a key is hidden (its score -inf). Each has the scores' rank
///    ([.., L, S]); a broadcast dim stands for any size. nvFuser's newer sdpfa_fwd arguments;
///    sdpfaBwd takes neither (its scores have no bias or mask).
/// UserErrors name the argument: ranks, sizes that differ (N, H, E, S; constants now, symbolic
/// ones when the fusion runs), dtypes, dropout_p outside [0, 1), a missing seed.
SdpfaFwdResult sdpfaFwdComposite(TensorView* query, TensorView* key, TensorView* value,
                                 std::optional<Operand> dropout_p = std::nullopt,
                                 std::optional<Operand> is_causal = std::nullopt,
                                 std::optional<Operand> scale = std::nullopt,
                                 std::optional<Operand> rng_seed = std::nullopt,
                                 std::optional<Operand> rng_offset = std::nullopt,
                                 TensorView* bias = nullptr, TensorView* mask = nullptr);

/// The definition of sdpfa_bwd, as a composite: the gradients of sdpfaFwd from its saved output and
/// log_sumexp: P is recomputed as exp(query @ key^T * scale - log_sumexp) (masked entries 0), the
/// dropout mask regenerated from the same seed and offset, and with dP = dropout(grad_output @
/// value^T) and D = rowsum(grad_output * output): dS = P * (dP - D), grad_query = dS @ key * scale,
/// grad_key = dS^T @ query * scale, grad_value = dropout(P)^T @ grad_output. Computed in f32,
/// returned in the inputs' dtype. dropout_p, is_causal and scale must be those of the forward.
/// philox_seed / philox_offset: the tensors sdpfaFwd returned in this fusion, or the seed and
/// offset themselves (integers or integer Scalars); any tensor is accepted (and not read) when
/// dropout_p is the constant 0.
SdpfaBwdResult sdpfaBwdComposite(TensorView* grad_output, TensorView* query, TensorView* key,
                                 TensorView* value, TensorView* output, TensorView* log_sumexp,
                                 std::optional<Operand> dropout_p, std::optional<Operand> is_causal,
                                 std::optional<Operand> philox_seed,
                                 std::optional<Operand> philox_offset,
                                 std::optional<Operand> scale = std::nullopt);

/// One direction's composite as a fusion for `dtype` and `rank`: inputs the tensors (forward:
/// query, key, value; backward: grad_output, query, key, value, output, log_sumexp), then the
/// Scalars dropout_p (Float64), is_causal (Bool), scale (Float64), seed, offset (Int64); outputs
/// as the node's. The reference evaluator and the attention segment's fallback run it, so the
/// node's math is the composite's.
std::unique_ptr<ir::Fusion> sdpfaCompositeFusion(bool backward, DataType dtype, int64_t rank);

/// Replaces every SdpaFwdOp / SdpaBwdOp of `fusion` by its composite (the multidevice passes
/// shard the composite's ops).
void expandAttention(ir::Fusion& fusion);

}  // namespace loom::ops
