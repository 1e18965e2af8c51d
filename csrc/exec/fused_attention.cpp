// SPDX-License-Identifier: Apache-2.0
// FusedAttention: packs loom::AttentionFwdParams and launches codegen's fused attention kernel.
#include "loom/exec/fused_attention.h"

#include <fmt/format.h>

#include <cmath>
#include <cstddef>

#include "../codegen/runtime/attention_params.cuh"  // the structs the kernels read
#include "loom/codegen/attention_kernel.h"
#include "loom/support/error.h"

namespace loom::exec {
namespace {

// The kernels' argument structs are the runtime library's own (the host packs what the device
// reads); these sizes pin the layout both compilers give them.
static_assert(sizeof(AttentionFwdParams) == 200 && offsetof(AttentionFwdParams, seed) == 184,
              "the layout attention.cuh reads");
static_assert(sizeof(AttentionBwdParams) == 328 && offsetof(AttentionBwdParams, seed) == 312,
              "the layout attention.cuh reads");

// The scalars both directions share, as the composite rounds them (see forward()).
template <typename P>
void setScalars(P& p, const FusedAttentionArgs& args) {
  LOOM_CHECK(args.dropout_p >= 0.0 && args.dropout_p < 1.0,
             "fused attention: dropout_p must be in [0, 1), got ", args.dropout_p);
  // The composite multiplies its f32 scores by the scale rounded to f32, compares its f32 draw
  // with 1 - p rounded to f32 and scales by 1 / (1 - p) rounded to f32: so do the kernels.
  p.scale = float(args.scale);
  p.causal = args.causal ? 1 : 0;
  p.dropout = args.dropout_p > 0.0 ? 1 : 0;
  p.keep = float(1.0 - args.dropout_p);
  p.inv_keep = float(1.0 / (1.0 - args.dropout_p));
  p.seed = static_cast<unsigned long long>(args.seed);
  p.offset = static_cast<unsigned long long>(args.offset);
}

// One CTA per (block of the tile's rows or keys, h, n).
LaunchParams launchOf(codegen::FusedAttentionPass pass, DataType dtype, int64_t n, int64_t h,
                      int64_t rows, int64_t e, bool dropout) {
  const codegen::FusedAttentionTile tile = codegen::fusedAttentionTile(pass, dtype, e, dropout);
  const int64_t blocks = (rows + tile.rows - 1) / tile.rows;
  LOOM_CHECK(blocks <= 0x7fffffff && h <= 65535 && n <= 65535, "fused attention: [N, H] = [", n,
             ", ", h, "] with ", rows,
             " rows is more than one launch's grid (N and H up to 65535)");
  LaunchParams lp;
  lp.grid[0] = uint32_t(blocks);
  lp.grid[1] = uint32_t(h);
  lp.grid[2] = uint32_t(n);
  lp.block[0] = uint32_t(tile.threads);
  lp.sharedBytes = codegen::fusedAttentionSharedBytes(pass, dtype, e);
  return lp;
}

void copyStrides(const Tensor& t, long long (&out)[4]) {
  for (int d = 0; d < 4; ++d) out[d] = t.stride(d);
}

}  // namespace

FusedAttention::FusedAttention(std::shared_ptr<const ComputeDevice> device, bool poison_outputs)
    : device_(std::move(device)), poison_outputs_(poison_outputs) {
  LOOM_ASSERT(device_ != nullptr, "FusedAttention needs a device");
}

std::optional<std::string> FusedAttention::unsupported(const Tensor& q, const Tensor& k,
                                                       const Tensor& v) const {
  const std::pair<const char*, const Tensor*> operands[] = {
      {"query", &q}, {"key", &k}, {"value", &v}};
  for (const auto& [name, t] : operands) {
    if (t->dim() != 4)
      return fmt::format("{} has rank {}, the fused kernel takes 4", name, t->dim());
    if (t->device() != device_->tensorDevice()) {
      return fmt::format("{} is not on {}", name, device_->name());
    }
    if (t->dtype() != q.dtype()) return fmt::format("{} is not the query's dtype", name);
  }
  for (int d = 0; d < 2; ++d) {
    if (k.size(d) != q.size(d) || v.size(d) != q.size(d)) {
      return fmt::format("batch dim {} differs between query, key and value", d);
    }
  }
  if (k.size(3) != q.size(3)) return std::string("query and key have different head dims");
  if (v.size(2) != k.size(2)) return std::string("key and value have different lengths");
  return codegen::fusedAttentionUnsupported(q.dtype(), q.size(3), v.size(3));
}

const LoadedKernel& FusedAttention::kernel(int pass, DataType dtype, int64_t head_dim,
                                           bool dropout) const {
  const auto kind = codegen::FusedAttentionPass(pass);
  // One kernel serves both where it reads the dropout flag at run time.
  dropout = codegen::fusedAttentionDropoutVariant(kind, dtype, dropout);
  std::lock_guard lock(mutex_);
  auto& slot = kernels_[{pass, dtype, head_dim, dropout}];
  if (slot == nullptr) {
    const codegen::GeneratedKernel g =
        codegen::fusedAttentionKernel(kind, dtype, head_dim, dropout);
    PhaseTimer timer(false, g.name);
    slot = device_->load(g, timer);
  }
  return *slot;
}

FusedAttentionResult FusedAttention::forward(const Tensor& q, const Tensor& k, const Tensor& v,
                                             const FusedAttentionArgs& args,
                                             CUstream stream) const {
  if (auto why = unsupported(q, k, v)) LOOM_CHECK(false, "fused attention: ", *why);
  const int64_t n = q.size(0), h = q.size(1), l = q.size(2), s = k.size(2), e = q.size(3);
  FusedAttentionResult r{device_->empty(std::vector<int64_t>{n, h, l, e}, q.dtype(), stream),
                         device_->empty(std::vector<int64_t>{n, h, l}, DataType::Float32, stream)};
  if (poison_outputs_) {
    device_->poison(r.output, stream);
    device_->poison(r.log_sumexp, stream);
  }
  // S = 0 still launches: the tile loop is empty and every row writes output 0, log_sumexp -inf.
  if (n * h * l == 0) return r;
  AttentionFwdParams p{};
  p.q = q.data();
  p.k = k.data();
  p.v = v.data();
  p.out = r.output.data();
  p.lse = static_cast<float*>(r.log_sumexp.data());
  copyStrides(q, p.qs);
  copyStrides(k, p.ks);
  copyStrides(v, p.vs);
  p.heads = h;
  p.rows = l;
  p.keys = s;
  setScalars(p, args);
  constexpr auto kPass = codegen::FusedAttentionPass::Forward;
  const LaunchParams lp = launchOf(kPass, q.dtype(), n, h, l, e, p.dropout != 0);
  void* launch_args[] = {&p};
  kernel(int(kPass), q.dtype(), e, p.dropout != 0).launch(lp, launch_args, stream);
  return r;
}

FusedAttentionGrads FusedAttention::backward(const Tensor& grad_output, const Tensor& q,
                                             const Tensor& k, const Tensor& v, const Tensor& output,
                                             const Tensor& log_sumexp,
                                             const FusedAttentionArgs& args,
                                             CUstream stream) const {
  if (auto why = unsupported(q, k, v)) LOOM_CHECK(false, "fused attention: ", *why);
  const int64_t n = q.size(0), h = q.size(1), l = q.size(2), s = k.size(2), e = q.size(3);
  const std::pair<const char*, const Tensor*> saved[] = {{"grad_output", &grad_output},
                                                         {"output", &output}};
  for (const auto& [name, t] : saved) {
    LOOM_CHECK(t->dim() == 4 && t->sizes() == q.sizes() && t->dtype() == q.dtype() &&
                   t->device() == q.device(),
               "fused attention: ", name,
               " must be [N, H, L, E] = the query's shape, dtype and "
               "device");
  }
  LOOM_CHECK(log_sumexp.dim() == 3 && log_sumexp.size(0) == n && log_sumexp.size(1) == h &&
                 log_sumexp.size(2) == l && log_sumexp.dtype() == DataType::Float32 &&
                 log_sumexp.device() == q.device(),
             "fused attention: log_sumexp must be [N, H, L] f32 on the query's device");
  FusedAttentionGrads r{device_->empty(std::vector<int64_t>{n, h, l, e}, q.dtype(), stream),
                        device_->empty(std::vector<int64_t>{n, h, s, e}, q.dtype(), stream),
                        device_->empty(std::vector<int64_t>{n, h, s, e}, q.dtype(), stream)};
  if (poison_outputs_) {
    for (const Tensor* t : {&r.grad_query, &r.grad_key, &r.grad_value}) device_->poison(*t, stream);
  }
  // D = rowsum(dO * O) per row: the tensor-core dq kernel writes it, the dk/dv kernel after it
  // reads it (the f32 kernels sum D themselves and need none).
  Tensor delta;
  if (codegen::fusedAttentionUsesMma(codegen::FusedAttentionPass::BackwardDkDv, q.dtype())) {
    delta = device_->empty(std::vector<int64_t>{n, h, l}, DataType::Float32, stream);
  }
  AttentionBwdParams p{};
  p.delta = delta.defined() ? static_cast<float*>(delta.data()) : nullptr;
  p.q = q.data();
  p.k = k.data();
  p.v = v.data();
  p.o = output.data();
  p.dout = grad_output.data();
  p.lse = static_cast<const float*>(log_sumexp.data());
  p.dq = r.grad_query.data();
  p.dk = r.grad_key.data();
  p.dv = r.grad_value.data();
  copyStrides(q, p.qs);
  copyStrides(k, p.ks);
  copyStrides(v, p.vs);
  copyStrides(output, p.os);
  copyStrides(grad_output, p.dos);
  for (int d = 0; d < 3; ++d) p.lses[d] = log_sumexp.stride(d);
  p.heads = h;
  p.rows = l;
  p.keys = s;
  setScalars(p, args);
  void* launch_args[] = {&p};
  // Each kernel writes every element of its outputs, also where no row or key is seen (zeros).
  // dq first: it writes the D that dk/dv reads (stream order; delta lives until both ran, as the
  // device allocator reuses memory only in stream order).
  if (n * h * l > 0) {
    constexpr auto kDq = codegen::FusedAttentionPass::BackwardDq;
    kernel(int(kDq), q.dtype(), e, p.dropout != 0)
        .launch(launchOf(kDq, q.dtype(), n, h, l, e, p.dropout != 0), launch_args, stream);
  }
  if (n * h * s > 0) {
    constexpr auto kDkDv = codegen::FusedAttentionPass::BackwardDkDv;
    kernel(int(kDkDv), q.dtype(), e, p.dropout != 0)
        .launch(launchOf(kDkDv, q.dtype(), n, h, s, e, p.dropout != 0), launch_args, stream);
  }
  return r;
}

}  // namespace loom::exec
