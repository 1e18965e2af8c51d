// SPDX-License-Identifier: Apache-2.0
// Pass kernel_params: a Param buffer (a loom::Tensor<T, N> kernel argument) per fusion input, per
// fusion output and per Global intermediate, in that order.
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
    auto* tv = v->dynCast<ir::TensorView>();
    LOOM_CHECK(tv != nullptr, "lowering: scalar fusion input ", v->toString(),
               " is not supported by the kernel executor yet");
    addParam(kernel, ctx, tv);
  }
  for (ir::Val* v : ctx.fusion.outputs()) {
    auto* tv = v->as<ir::TensorView>();
    LOOM_CHECK(!tv->isFusionInput(), "lowering: output ", tv->toString(),
               " is also an input; the kernel executor does not alias outputs yet");
    addParam(kernel, ctx, tv);
  }
  for (const ir::Expr* e : ctx.exprs) {
    for (ir::Val* out : e->outputs()) {
      auto* tv = out->as<ir::TensorView>();
      LOOM_CHECK(tv->memoryType() != ir::MemoryType::Shared, "lowering: ", tv->toString(),
                 " is in shared memory, which the kernel executor does not support yet");
      if (tv->memoryType() == ir::MemoryType::Global) addParam(kernel, ctx, tv);
    }
  }
  return !kernel.params.empty();
}

}  // namespace loom::lower
