// SPDX-License-Identifier: Apache-2.0
// Non-identity reduction inits combined once, after the reduction (reduction_inits.h).
#include "loom/segmenter/reduction_inits.h"

#include <vector>

#include "loom/ir/builder.h"
#include "loom/ir/tensor_view.h"
#include "loom/ops/ops.h"

namespace loom::segmenter {
namespace {

using ir::Expr;
using ir::Fusion;
using ir::IrBuilder;
using ir::ReductionOp;
using ir::ReductionOpType;
using ir::Scalar;
using ir::ScalarValue;
using ir::TensorView;
using ir::Val;
using ir::WelfordOp;

/// Makes `replacement` take `old`'s place in the exprs listed in `uses` and as a fusion output.
void redirect(Fusion& fusion, Val* old, Val* replacement, const std::vector<Expr*>& uses) {
  for (Expr* u : uses) u->replaceInput(old, replacement);
  if (fusion.isOutput(old)) fusion.replaceOutput(old, replacement);
}

TensorView* castTo(TensorView* tv, DataType dtype) {
  return tv->dtype() == dtype ? tv : ops::cast(tv, dtype);
}

void separate(Fusion& fusion, ReductionOp* r) {
  TensorView* out = r->out();
  TensorView* in = r->in();
  Scalar* init = r->init();
  const ReductionOpType op = r->opType();
  const std::vector<Expr*> uses = out->uses();
  fusion.removeExpr(r);
  const bool sum = op == ReductionOpType::Sum;
  IrBuilder::create<ReductionOp>(
      op, IrBuilder::constant(ir::reductionIdentity(op, out->dtype()), out->dtype()), out, in);
  TensorView* combined = castTo(sum ? ops::add(out, init) : ops::mul(out, init), out->dtype());
  redirect(fusion, out, combined, uses);
}

void separate(Fusion& fusion, WelfordOp* w) {
  TensorView* avg = w->outAvg();
  TensorView* m2 = w->outM2();
  TensorView* n = w->outN();
  Scalar* a0 = w->initAvg();
  Scalar* m0 = w->initM2();
  Scalar* n0 = w->initN();
  Val* in_avg = w->inAvg();
  Val* in_m2 = w->inM2();
  Val* in_n = w->inN();
  const std::vector<Expr*> avg_uses = avg->uses();
  const std::vector<Expr*> m2_uses = m2->uses();
  const std::vector<Expr*> n_uses = n->uses();
  fusion.removeExpr(w);
  IrBuilder::create<WelfordOp>(avg, m2, n, in_avg, in_m2, in_n,
                               IrBuilder::constant(ScalarValue(0.0), a0->dtype()),
                               IrBuilder::constant(ScalarValue(0.0), m0->dtype()),
                               IrBuilder::constant(ScalarValue(int64_t{0}), n0->dtype()));
  // Chan's combine of (a0, m0, n0) with (avg, m2, n), as the reference evaluator's Welford does;
  // a count of 0 keeps the init as it is.
  const DataType dt = avg->dtype();
  TensorView* nf = ops::cast(n, dt);
  TensorView* total = ops::add(nf, n0);
  TensorView* f = ops::div(nf, total);
  TensorView* empty = ops::eq(n, int64_t{0});
  TensorView* avg_combined = ops::add(ops::mul(a0, ops::sub(1.0, f)), ops::mul(avg, f));
  TensorView* new_avg = castTo(ops::where(empty, a0, avg_combined), dt);
  TensorView* delta = ops::sub(avg, a0);
  TensorView* spread = ops::mul(ops::mul(delta, delta), ops::div(ops::mul(nf, n0), total));
  TensorView* m2_combined = ops::add(ops::add(m2, m0), spread);
  TensorView* new_m2 = castTo(ops::where(empty, m0, m2_combined), m2->dtype());
  TensorView* new_n = castTo(ops::add(n, n0), n->dtype());
  redirect(fusion, avg, new_avg, avg_uses);
  redirect(fusion, m2, new_m2, m2_uses);
  redirect(fusion, n, new_n, n_uses);
}

}  // namespace

int64_t separateReductionInits(Fusion& fusion) {
  std::vector<Expr*> todo;
  for (Expr* e : fusion.exprs()) {
    if (auto* r = e->dynCast<ReductionOp>(); r != nullptr && !r->hasIdentityInit()) todo.push_back(e);
    if (auto* w = e->dynCast<WelfordOp>(); w != nullptr && !w->hasIdentityInit()) todo.push_back(e);
  }
  if (todo.empty()) return 0;
  ir::FusionGuard guard(&fusion);
  for (Expr* e : todo) {
    if (auto* r = e->dynCast<ReductionOp>()) {
      separate(fusion, r);
    } else {
      separate(fusion, e->as<WelfordOp>());
    }
  }
  return int64_t(todo.size());
}

}  // namespace loom::segmenter
