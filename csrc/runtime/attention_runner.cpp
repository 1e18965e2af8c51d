// SPDX-License-Identifier: Apache-2.0
// AttentionRunner: the fused attention kernels, or the composites where they do not apply.
#include "loom/runtime/attention_runner.h"

#include "loom/ir/builder.h"
#include "loom/ir/ir.h"
#include "loom/ops/ops.h"

namespace loom::runtime {
namespace {

std::shared_ptr<const exec::ComputeDevice> deviceOf(const RuntimeOptions& o) {
  return o.device != nullptr ? o.device : exec::makeComputeDevice(o.backend, o.gpu.value_or(0));
}

void appendScalars(std::vector<eval::Argument>& a, const exec::FusedAttentionArgs& args) {
  // The composite reads a Scalar dropout_p unchecked; the fused kernels refuse the same values.
  LOOM_CHECK(args.dropout_p >= 0.0 && args.dropout_p < 1.0,
             "attention: dropout_p must be in [0, 1), got ", args.dropout_p);
  a.emplace_back(args.dropout_p);
  a.emplace_back(args.causal);
  a.emplace_back(args.scale);
  a.emplace_back(args.seed);
  a.emplace_back(args.offset);
}

}  // namespace

AttentionRunner::AttentionRunner(RuntimeOptions options)
    : options_(std::move(options)),
      device_(deviceOf(options_)),
      fused_(device_, options_.executor.poisonOutputs) {
  options_.device = device_;
}

AttentionRunner::~AttentionRunner() = default;

FusionExecutorCache& AttentionRunner::composite(bool backward, DataType dtype, int64_t rank) {
  std::lock_guard lock(mutex_);
  auto& slot = composites_[{backward, dtype, rank}];
  if (slot == nullptr) {
    slot = std::make_unique<FusionExecutorCache>(ops::sdpfaCompositeFusion(backward, dtype, rank),
                                                 options_);
  }
  return *slot;
}

AttentionRunner::Forward AttentionRunner::forward(const Tensor& q, const Tensor& k, const Tensor& v,
                                                  const exec::FusedAttentionArgs& args) {
  Forward r;
  if (auto why = fused_.unsupported(q, k, v)) {
    r.whyNotFused = *why;
  } else {
    exec::FusedAttentionResult f = fused_.forward(q, k, v, args, options_.executor.stream);
    return {std::move(f.output), std::move(f.log_sumexp), true, ""};
  }
  LOOM_CHECK(q.dim() == 4 || q.dim() == 5, "attention: query has rank ", q.dim(),
             "; it takes rank 4 ([N, H, seq, dim]) or 5");
  std::vector<eval::Argument> a{q, k, v};
  appendScalars(a, args);
  std::vector<Tensor> out = composite(false, q.dtype(), q.dim()).run(a);
  r.output = std::move(out[0]);
  r.log_sumexp = std::move(out[1]);
  return r;
}

AttentionRunner::Backward AttentionRunner::backward(const Tensor& grad_output, const Tensor& q,
                                                    const Tensor& k, const Tensor& v,
                                                    const Tensor& output, const Tensor& log_sumexp,
                                                    const exec::FusedAttentionArgs& args) {
  Backward r;
  if (auto why = fused_.unsupported(q, k, v)) {
    r.whyNotFused = *why;
  } else {
    exec::FusedAttentionGrads g =
        fused_.backward(grad_output, q, k, v, output, log_sumexp, args, options_.executor.stream);
    return {std::move(g.grad_query), std::move(g.grad_key), std::move(g.grad_value), true, ""};
  }
  LOOM_CHECK(q.dim() == 4 || q.dim() == 5, "attention: query has rank ", q.dim(),
             "; it takes rank 4 ([N, H, seq, dim]) or 5");
  std::vector<eval::Argument> a{grad_output, q, k, v, output, log_sumexp};
  appendScalars(a, args);
  std::vector<Tensor> out = composite(true, q.dtype(), q.dim()).run(a);
  r.grad_query = std::move(out[0]);
  r.grad_key = std::move(out[1]);
  r.grad_value = std::move(out[2]);
  return r;
}

}  // namespace loom::runtime
