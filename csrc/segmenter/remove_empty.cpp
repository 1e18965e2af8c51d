// SPDX-License-Identifier: Apache-2.0
// Empty tensors and reductions over empty dims become FullOps (see remove_empty.h).
#include "loom/segmenter/remove_empty.h"

#include <optional>
#include <vector>

#include "loom/eval/expression_evaluator.h"
#include "loom/ir/builder.h"
#include "loom/ir/exprs.h"
#include "loom/ir/iter_domain.h"
#include "loom/ir/tensor_view.h"

namespace loom::segmenter {
namespace {

using ir::Expr;
using ir::IterDomain;
using ir::TensorView;

struct EmptyWork {
  std::vector<TensorView*> outputs;  ///< computed tensors with zero elements
  std::vector<Expr*> reductions;     ///< reductions over an empty dim with a non-empty result
};

std::optional<int64_t> extentOf(eval::ExpressionEvaluator& ee, const IterDomain* id) {
  const ir::Scalar* e = id->hasExpandedExtent() ? id->expandedExtent() : id->extent();
  if (!ee.evaluate(e).has_value()) return std::nullopt;
  return ee.evaluateInt(e);
}

// Elements of tv's result (reduction dims left out); nullopt when a size is not known.
std::optional<int64_t> numel(eval::ExpressionEvaluator& ee, const TensorView* tv) {
  int64_t n = 1;
  for (IterDomain* id : ir::TensorDomain::noReductions(tv->logical())) {
    auto e = extentOf(ee, id);
    if (!e.has_value()) return std::nullopt;
    n *= *e;
  }
  return n;
}

EmptyWork findEmptyWork(const ir::Fusion& fusion, std::span<const eval::Argument> args) {
  eval::ExpressionEvaluator ee;
  ee.bindInputs(fusion, args);
  EmptyWork work;
  for (Expr* e : fusion.exprs()) {
    if (e->isA<ir::FullOp>()) continue;
    for (ir::Val* v : e->outputs()) {
      auto* tv = v->dynCast<TensorView>();
      if (tv != nullptr && numel(ee, tv) == 0) work.outputs.push_back(tv);
    }
  }
  for (Expr* e : fusion.exprs()) {
    if (!e->isA<ir::ReductionOp>() && !e->isA<ir::WelfordOp>()) continue;
    auto* out = e->output(0)->as<TensorView>();
    bool empty_dim = false;
    for (IterDomain* id : out->logical()) {
      if (id->isReduction()) empty_dim = empty_dim || extentOf(ee, id) == 0;
    }
    auto n = numel(ee, out);
    if (empty_dim && n.has_value() && *n > 0) work.reductions.push_back(e);
  }
  return work;
}

// A tensor of tv's shape (its result dims, broadcasts kept) filled with `value`.
TensorView* filledLike(const TensorView* tv, ir::Scalar* value) {
  std::vector<IterDomain*> ids;
  for (IterDomain* id : ir::TensorDomain::noReductions(tv->logical())) {
    ids.push_back(ir::IrBuilder::create<IterDomain>(
        ir::IrBuilder::index(0), id->extent(), id->iterType(), ir::ParallelType::Serial,
        id->isBroadcast() ? id->expandedExtent() : nullptr, false));
  }
  auto* out = ir::IrBuilder::create<TensorView>(
      ir::IrBuilder::create<ir::TensorDomain>(std::move(ids)), tv->dtype());
  ir::Scalar* typed = value->isConst() ? ir::IrBuilder::constant(value->value(), tv->dtype())
                                       : value;
  ir::IrBuilder::create<ir::FullOp>(out, typed);
  return out;
}

}  // namespace

bool hasEmptyWork(const ir::Fusion& fusion, std::span<const eval::Argument> args) {
  EmptyWork w = findEmptyWork(fusion, args);
  return !w.outputs.empty() || !w.reductions.empty();
}

bool removeEmptyWork(ir::Fusion& fusion, std::span<const eval::Argument> args) {
  EmptyWork w = findEmptyWork(fusion, args);
  if (w.outputs.empty() && w.reductions.empty()) return false;
  ir::FusionGuard guard(&fusion);
  for (Expr* e : w.reductions) {
    if (auto* r = e->dynCast<ir::ReductionOp>()) {
      fusion.replaceAllUses(r->out(), filledLike(r->out(), r->init()));
      continue;
    }
    auto* wf = e->as<ir::WelfordOp>();
    TensorView* avg = wf->outAvg();
    TensorView* m2 = wf->outM2();
    TensorView* n = wf->outN();
    fusion.replaceAllUses(avg, filledLike(avg, wf->initAvg()));
    fusion.replaceAllUses(m2, filledLike(m2, wf->initM2()));
    fusion.replaceAllUses(n, filledLike(n, wf->initN()));
  }
  for (TensorView* tv : w.outputs) {
    // Still in use (a reduction above may have replaced it already with a FullOp).
    if (!fusion.isOutput(tv) && tv->uses().empty()) continue;
    fusion.replaceAllUses(tv, filledLike(tv, ir::IrBuilder::constant(ir::ScalarValue(int64_t(0)),
                                                               tv->dtype())));
  }
  fusion.removeDeadCode();
  return true;
}

}  // namespace loom::segmenter
