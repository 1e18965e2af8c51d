// SPDX-License-Identifier: Apache-2.0
// Floating sizes must be integral at run time (integral_sizes.h).
#include "eval/integral_sizes.h"

#include <cmath>
#include <optional>
#include <sstream>
#include <unordered_set>
#include <vector>

#include "eval/element_ops.h"
#include "loom/eval/expression_evaluator.h"
#include "loom/ir/exprs.h"
#include "loom/ir/fusion.h"
#include "loom/ir/iter_domain.h"
#include "loom/ir/tensor_domain.h"
#include "loom/ir/tensor_view.h"
#include "loom/ir/transforms.h"
#include "loom/support/error.h"

namespace loom::eval {

namespace {

// The Scalars `tv`'s dims are sized by: extents, expanded extents and resize widths.
std::vector<const ir::Scalar*> sizeScalars(const ir::TensorView* tv) {
  std::vector<const ir::Scalar*> out;
  auto add = [&](const std::vector<ir::IterDomain*>& ids) {
    for (const ir::IterDomain* id : ids) {
      out.push_back(id->extent());
      if (id->hasExpandedExtent()) out.push_back(id->expandedExtent());
      if (const ir::Expr* def = id->definition(); def != nullptr && def->isA<ir::Resize>()) {
        out.push_back(def->as<ir::Resize>()->left());
        out.push_back(def->as<ir::Resize>()->right());
      }
    }
  };
  if (tv->domain()->hasRoot()) add(tv->root());
  add(tv->logical());
  return out;
}

}  // namespace

void checkIntegralSizes(const ir::Fusion& fusion, ExpressionEvaluator& ee) {
  std::unordered_set<const ir::Val*> seen;
  for (const ir::TensorView* tv : fusion.allTvs()) {
    std::vector<const ir::Scalar*> stack = sizeScalars(tv);
    while (!stack.empty()) {
      const ir::Scalar* s = stack.back();
      stack.pop_back();
      if (s == nullptr || !seen.insert(s).second || s->definition() == nullptr) continue;
      const ir::Expr* def = s->definition();
      for (const ir::Val* in : def->inputs()) {
        if (in->isA<ir::Scalar>()) stack.push_back(in->as<ir::Scalar>());
      }
      const auto* cast = def->dynCast<ir::UnaryOp>();
      if (cast == nullptr || cast->opType() != ir::UnaryOpType::Cast ||
          !isIntegralType(s->dtype()) || !isFloatingType(cast->in()->dtype())) {
        continue;
      }
      const std::optional<ir::ScalarValue> v = ee.evaluate(cast->in());
      if (!v.has_value()) continue;  // not this run's to check (a value no argument binds)
      const double d = detail::scalarToDouble(*v);
      std::ostringstream value;
      value.precision(17);
      value << d;
      LOOM_CHECK(std::isfinite(d) && d == std::trunc(d) && std::fabs(d) < 9.3e18, tv->toString(),
                 ": the size ", cast->in()->toString(), " = ", value.str(),
                 " is not an integer; a floating size, bound or width must have an integral "
                 "value, which is then its size (Loom does not round it)");
    }
  }
}

}  // namespace loom::eval
