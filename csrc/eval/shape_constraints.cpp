// SPDX-License-Identifier: Apache-2.0
// The extent equalities of a fusion's exprs, checked against bound inputs.
#include "eval/shape_constraints.h"

#include <optional>

#include "eval/element_ops.h"
#include "loom/eval/expression_evaluator.h"
#include "loom/ir/exprs.h"
#include "loom/ir/fusion.h"
#include "loom/ir/iter_domain.h"
#include "loom/ir/logical_map.h"
#include "loom/ir/tensor_domain.h"
#include "loom/ir/tensor_view.h"
#include "loom/support/error.h"

namespace loom::eval {
namespace {

using ir::IterDomain;
using ir::TensorView;

std::optional<int64_t> sizeOf(ExpressionEvaluator& ee, const IterDomain* id) {
  auto v = ee.evaluate(id->logicalExtent());
  if (!v.has_value()) return std::nullopt;
  return detail::scalarToInt(*v);
}

/// "T1 dimension 0 (i1{s1})": the position among the dims users see, else in the root.
std::string describeDim(const TensorView* tv, const IterDomain* id) {
  const auto ids = ir::TensorDomain::noReductions(tv->logical());
  for (size_t d = 0; d < ids.size(); ++d) {
    if (ids[d] == id) return tv->toString() + " dimension " + std::to_string(d);
  }
  const auto& logical = tv->logical();
  for (size_t d = 0; d < logical.size(); ++d) {
    if (logical[d] == id) return tv->toString() + " reduced dimension " + std::to_string(d);
  }
  const auto& root = tv->domain()->maybeRoot();
  for (size_t d = 0; d < root.size(); ++d) {
    if (root[d] == id) return tv->toString() + " root dimension " + std::to_string(d);
  }
  return tv->toString() + " " + id->toString();
}

std::string sizeText(const IterDomain* id, int64_t size,
                     const std::function<std::string(const ir::Val*)>& origin) {
  const ir::Scalar* extent = id->logicalExtent();
  std::string text = "size " + std::to_string(size);
  if (extent->isConst()) return text;
  text += " (extent " + extent->toString();
  std::string from = origin(extent);
  if (!from.empty()) text += ", from " + from;
  return text + ")";
}

// Along the sort dim nothing lines up position by position: argsort keeps the input's extent,
// topk's k lies in [0, that extent].
void checkSortExtents(const ir::Expr* e, ExpressionEvaluator& ee,
                      const std::function<std::string(const ir::Val*)>& origin) {
  const auto* in = e->input(0)->as<TensorView>();
  const IterDomain* pid = ir::TensorDomain::noReductions(in->logical()).at(size_t(ir::sortDim(e)));
  const std::optional<int64_t> n = sizeOf(ee, pid);
  if (!n.has_value()) return;
  if (const auto* tk = e->dynCast<ir::TopKOp>()) {
    auto kv = ee.evaluate(tk->k());
    if (!kv.has_value()) return;
    const int64_t k = detail::scalarToInt(*kv);
    std::string from = tk->k()->isConst() ? std::string() : origin(tk->k());
    LOOM_CHECK(k >= 0 && k <= *n, "topk: k = ", k, from.empty() ? "" : " (from " + from + ")",
               " is outside [0, ", *n, "]: ", describeDim(in, pid), " has ",
               sizeText(pid, *n, origin), " (selected index k out of range)");
    return;
  }
  const auto* out = e->output(0)->as<TensorView>();
  const IterDomain* cid = ir::TensorDomain::noReductions(out->logical()).at(size_t(ir::sortDim(e)));
  const std::optional<int64_t> m = sizeOf(ee, cid);
  LOOM_CHECK(!m.has_value() || *m == *n, "shapes disagree in ", e->toString(), ": ",
             describeDim(in, pid), " has ", sizeText(pid, *n, origin), " but ",
             describeDim(out, cid), " has ", sizeText(cid, *m, origin),
             "; argsort keeps the size of the dimension it sorts");
}

// Negative widths cut a dim; cutting more than it holds leaves no valid size.
void checkPaddedExtents(const ir::Expr* e, ExpressionEvaluator& ee,
                        const std::function<std::string(const ir::Val*)>& origin) {
  const auto* in = e->input(0)->as<TensorView>();
  const auto* out = e->output(0)->as<TensorView>();
  const auto in_ids = ir::TensorDomain::noReductions(in->logical());
  const auto out_ids = ir::TensorDomain::noReductions(out->logical());
  for (size_t d = 0; d < out_ids.size() && d < in_ids.size(); ++d) {
    const std::optional<int64_t> size = sizeOf(ee, out_ids[d]);
    if (!size.has_value() || *size >= 0) continue;
    const std::optional<int64_t> before = sizeOf(ee, in_ids[d]);
    LOOM_CHECK(false, "pad: ", out->toString(), " would have the negative size ", *size,
               " at dimension ", d, ": the widths cut more than ", describeDim(in, in_ids[d]),
               " holds (",
               before.has_value() ? sizeText(in_ids[d], *before, origin) : std::string("?"),
               "). Invalid resized domain extent");
  }
}

// A factory's sizes come from Scalars (inputs, or math on them); a negative one is a mistake
// to name here, before a kernel is launched for it.
void checkCreatedExtents(const ir::Expr* e, ExpressionEvaluator& ee,
                         const std::function<std::string(const ir::Val*)>& origin) {
  const auto* out = e->output(0)->as<TensorView>();
  const auto ids = ir::TensorDomain::noReductions(out->logical());
  for (size_t d = 0; d < ids.size(); ++d) {
    const std::optional<int64_t> size = sizeOf(ee, ids[d]);
    if (!size.has_value() || *size >= 0) continue;
    const char* what = e->isA<ir::IotaOp>() ? "length" : "size";
    LOOM_CHECK(false, e->opName(), ": ", out->toString(), " would have the negative ", what, " ",
               *size, " at dimension ", d, " (", sizeText(ids[d], *size, origin), "); a ", what,
               " must be 0 or more");
  }
}

}  // namespace

void checkShapeConstraints(const ir::Fusion& fusion, ExpressionEvaluator& ee,
                           const std::function<std::string(const ir::Val*)>& origin) {
  for (const ir::Expr* e : fusion.exprs()) {
    // A reduction whose output lists no reduction dims leaves the reduced dims to be inferred
    // from sizes (the reference evaluator does); its dims cannot be lined up here.
    if (e->isA<ir::ReductionOp>() || e->isA<ir::WelfordOp>()) {
      const auto* out = e->output(0)->as<TensorView>();
      if (!out->domain()->hasReduction()) continue;
    }
    if (ir::isSortExpr(e)) checkSortExtents(e, ee, origin);
    if (e->isA<ir::PadOp>()) checkPaddedExtents(e, ee, origin);
    if (e->isA<ir::FullOp>() || e->isA<ir::IotaOp>() || e->isA<ir::RngOp>()) {
      checkCreatedExtents(e, ee, origin);
    }
    for (ir::Val* in : e->inputs()) {
      const auto* p = in->dynCast<TensorView>();
      if (p == nullptr) continue;
      for (ir::Val* out : e->outputs()) {
        const auto* c = out->dynCast<TensorView>();
        if (c == nullptr) continue;
        for (auto [pid, cid] : ir::pairwiseLogicalMap(p, c)) {
          // A declared broadcast stretches to any size.
          if (pid->isBroadcast() && !pid->hasExpandedExtent()) continue;
          // A matmul's contracted k and its r{k}: ir::matmulGeometry names both operands when
          // their contracted sizes differ.
          if (cid->isReduction() && (e->isA<ir::MatmulOp>() || e->isA<ir::LinearOp>())) continue;
          // One device's view against the whole: a communication in a device's program.
          if (pid->isLocalized() != cid->isLocalized()) continue;
          std::optional<int64_t> ps = sizeOf(ee, pid);
          std::optional<int64_t> cs = sizeOf(ee, cid);
          if (!ps.has_value() || !cs.has_value() || *ps == *cs) continue;
          // A symbolic dim of size 1 is a broadcast decided at run time (and a symbolic output
          // dim may carry the extent of such an operand); expand stretches a size-1 broadcast
          // (one with an expanded extent), never a dim the fusion declares non-broadcast.
          if (*ps == 1 && (pid->isSymbolic() || (e->isA<ir::ExpandOp>() && pid->isBroadcast()))) {
            continue;
          }
          if (*cs == 1 && cid->isSymbolic()) continue;
          LOOM_CHECK(false, "shapes disagree in ", e->toString(), ": ", describeDim(p, pid),
                     " has ", sizeText(pid, *ps, origin), " but ", describeDim(c, cid), " has ",
                     sizeText(cid, *cs, origin),
                     "; they must be equal (a size-1 dimension stretches only where the fusion "
                     "declares a broadcast): a conflict was found with 2 different sizes across "
                     "dimensions that are expected to match");
        }
      }
    }
  }
}

}  // namespace loom::eval
