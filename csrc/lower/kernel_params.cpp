// SPDX-License-Identifier: Apache-2.0
// Pass kernel_params: a Param buffer (a loom::Tensor<T, N> kernel argument) per fusion input, per
// fusion output and per Global intermediate, in that order; scalar fusion inputs become by-value
// scalar parameters (Kernel::scalarParams) after the tensors.
#include "loom/ir/exprs.h"
#include "loom/ir/tensor_domain.h"
#include "loom/lower/lower.h"

namespace loom::lower {

namespace {

kir::Buffer* addParam(kir::Kernel& kernel, LowerContext& ctx, const ir::TensorView* tv) {
  if (auto it = ctx.buffers.find(tv); it != ctx.buffers.end()) return it->second;
  kir::Buffer* b = kernel.createBuffer();
  b->tv = tv;
  b->name = tv->toString();
  b->dtype = tv->dtype();
  b->kind = kir::BufferKind::Param;
  b->rank = int64_t(ir::TensorDomain::noReductions(tv->logical()).size());
  b->isFusionInput = tv->isFusionInput();
  b->isFusionOutput = tv->isFusionOutput();
  ctx.buffers[tv] = b;
  kernel.params.push_back(b);
  return b;
}

}  // namespace

bool kernelParams(kir::Kernel& kernel, LowerContext& ctx) {
  for (ir::Val* v : ctx.fusion.inputs()) {
    if (auto* s = v->dynCast<ir::Scalar>()) {
      // Passed by value; named by input position so the kernel text does not depend on ir names.
      auto* var = kernel.create<kir::Var>(s->dtype(),
                                          "loom_s" + std::to_string(kernel.scalarParams.size()));
      kernel.scalarParams.emplace_back(s, var);
      continue;
    }
    addParam(kernel, ctx, v->as<ir::TensorView>());
  }
  // An output that is also an input is not written by the kernel: the executor returns a copy of
  // the input, so it needs no parameter of its own.
  for (ir::Val* v : ctx.fusion.outputs()) {
    auto* tv = v->as<ir::TensorView>();
    if (!tv->isFusionInput()) addParam(kernel, ctx, tv);
  }
  for (const ir::Expr* e : ctx.exprs) {
    for (ir::Val* out : e->outputs()) {
      auto* tv = out->as<ir::TensorView>();
      if (tv->memoryType() == ir::MemoryType::Global) addParam(kernel, ctx, tv);
    }
  }
  return !kernel.params.empty() || !kernel.scalarParams.empty();
}

}  // namespace loom::lower
