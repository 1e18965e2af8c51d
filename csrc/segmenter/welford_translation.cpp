// SPDX-License-Identifier: Apache-2.0
// Welford to two-pass translation (see welford_translation.h).
#include "loom/segmenter/welford_translation.h"

#include <vector>

#include "loom/ir/builder.h"
#include "loom/ir/iter_domain.h"
#include "loom/ir/scalar_math.h"
#include "loom/ir/tensor_view.h"
#include "loom/ops/ops.h"
#include "loom/transform/reduction_ids.h"
#include "loom/scheduler/normalization.h"
#include "loom/transform/replay.h"

namespace loom::segmenter {

using namespace loom::ir;
using transform::ReplayOptions;
using transform::TransformReplay;

namespace {

// `count` (an Int64 extent product) as a Scalar of `dtype`: a constant when it folds.
Scalar* countAs(Scalar* count, DataType dtype) {
  if (auto c = count->constInt()) return IrBuilder::constant(ScalarValue(double(*c)), dtype);
  Scalar* out = IrBuilder::symbolic(dtype);
  IrBuilder::create<UnaryOp>(UnaryOpType::Cast, out, count);
  return out;
}

}  // namespace

bool isTranslatableWelford(const WelfordOp* w) {
  if (!w->hasRawInput() || !w->inAvg()->isA<TensorView>()) return false;
  // The two passes compute the input's own statistics; an init is combined separately first.
  if (!w->hasIdentityInit()) return false;
  for (TensorView* out : {w->outAvg(), w->outM2(), w->outN()}) {
    if (out->domain()->hasRoot()) return false;
  }
  return true;
}

bool hasTranslatableWelford(const Fusion& fusion) {
  for (Expr* e : fusion.exprs()) {
    if (auto* w = e->dynCast<WelfordOp>(); w != nullptr && isTranslatableWelford(w)) return true;
  }
  return false;
}

void translateWelford(Fusion& fusion, WelfordOp* w) {
  LOOM_CHECK(isTranslatableWelford(w), "Welford translation of ", w->toString(),
             ": needs a raw tensor input and outputs without a root domain (not rFactored)");
  FusionGuard guard(&fusion);
  auto* in = w->inAvg()->as<TensorView>();
  TensorView* avg = w->outAvg();
  TensorView* m2 = w->outM2();
  TensorView* n = w->outN();

  // The reduced positions of avg's logical domain are the input's dims (reductions keep every
  // dim); N multiplies their logical, i.e. global, extents: sharding never changes logical.
  std::vector<int64_t> axes;
  std::vector<bool> is_reduced;
  Scalar* count = IrBuilder::constant(int64_t(1));
  const auto& logical = avg->logical();
  for (size_t i = 0; i < logical.size(); ++i) {
    bool r = logical[i]->isReduction();
    is_reduced.push_back(r);
    if (r) {
      axes.push_back(int64_t(i));
      count = scalar_math::mul(count, logical[i]->logicalExtent());
    }
  }
  LOOM_ASSERT(!axes.empty(), "Welford ", w->toString(), " reduces nothing");

  fusion.removeExpr(w);
  ReplayOptions keep_sharding{.replay_allocation = true};

  // avg = sum(x) / N. x_sum has avg's former shape (reductions included), so it takes m2's
  // schedule, which is still avg's old one: loop, allocation, DID types.
  TensorView* x_sum = ops::sum(in, axes);
  TransformReplay::selfReplay(m2, x_sum);
  IrBuilder::create<BinaryOp>(BinaryOpType::Div, avg, x_sum, countAs(count, avg->dtype()));
  transform::clearReductionIterDomains(avg);

  // m2 = sum((x - avg)^2): m2 stays a reduction and keeps its domain as it is.
  TensorView* avg_b = ops::broadcast(avg, is_reduced);
  TransformReplay::replayCasP(avg_b, avg, -1, keep_sharding);
  TensorView* diff = ops::sub(in, avg_b);
  TransformReplay::replayCasP(diff, in, -1, keep_sharding);
  TensorView* sq = ops::mul(diff, diff);
  TransformReplay::replayCasP(sq, diff, -1, keep_sharding);
  IrBuilder::create<ReductionOp>(ReductionOpType::Sum,
                                 IrBuilder::constant(ScalarValue(0.0), m2->dtype()), m2, sq);

  // n = N, a pointwise definition from the extent product.
  IrBuilder::create<UnaryOp>(UnaryOpType::Cast, n, count->dtype() == n->dtype()
                                                        ? count
                                                        : countAs(count, n->dtype()));
  transform::clearReductionIterDomains(n);
}

int64_t translateWelfordInFusion(Fusion& fusion) {
  std::vector<WelfordOp*> todo;
  for (Expr* e : fusion.exprs()) {
    if (auto* w = e->dynCast<WelfordOp>(); w != nullptr && isTranslatableWelford(w)) {
      todo.push_back(w);
    }
  }
  for (WelfordOp* w : todo) translateWelford(fusion, w);
  return int64_t(todo.size());
}

bool translateApplicableWelford(Fusion& fusion, std::span<const eval::Argument> args,
                                const scheduler::DeviceInfo& device, std::string* why) {
  std::string reason;
  if (!hasTranslatableWelford(fusion)) {
    reason = "no Welford with a raw input";
  } else {
    std::unique_ptr<Fusion> copy = fusion.clone();
    translateWelfordInFusion(*copy);
    scheduler::SchedulerRuntimeInfo info(*copy, args, device);
    if (scheduler::innerPersistentCompileTimeCheck(*copy, &reason) &&
        scheduler::innerPersistentRunTimeCheck(*copy, info, &reason)) {
      // Two passes pay only when the row stays on chip between them. Rows read again from
      // global memory (reload_rows) would be read twice for the statistics where Welford reads
      // them once: layer_norm of [512, 131072] fp32 read its row three times and ran at 0.76x of
      // torch.compile on an H100, var_mean at 0.56x.
      // Rows that stay in L2 between the passes (scalar rows of 2-byte elements) read the L2 on
      // the second pass, which costs less than Welford's update per element.
      std::unique_ptr<scheduler::InnerPersistentParams> plan =
          scheduler::innerPersistentHeuristics(*copy, info);
      if (plan->reload_rows && !scheduler::reloadedRowsStayInL2(*plan, device)) {
        reason = "the rows do not fit on chip (they would be read from global memory once per "
                 "pass), so Welford's one pass reads less";
      } else {
        translateWelfordInFusion(fusion);
        return true;
      }
    }
  }
  if (why != nullptr) *why = reason;
  return false;
}

}  // namespace loom::segmenter
