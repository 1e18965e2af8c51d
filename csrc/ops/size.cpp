// SPDX-License-Identifier: Apache-2.0
// Size and SizeList: integer constants or integer Scalars given to shape ops and factories.
#include "loom/ops/size.h"

#include <cmath>

#include "loom/ir/builder.h"
#include "loom/ir/exprs.h"
#include "loom/ir/fusion.h"
#include "loom/ops/scalar_arith.h"
#include "loom/support/strings.h"

namespace loom::ops {

void Size::check() const {
  LOOM_CHECK(scalar_ != nullptr, "a size, bound or width must not be a null Scalar");
  LOOM_CHECK(isIntegralType(scalar_->dtype()) || isFloatingType(scalar_->dtype()),
             "a size, bound or width must be an integer or a floating value that is one, but ",
             scalar_->toString(), " is ", dataTypeName(scalar_->dtype()),
             " (a length must be integer)");
  (void)constant();  // a floating constant that is not an integer is refused now
}

std::optional<int64_t> Size::constant() const {
  if (scalar_ == nullptr) return value_;
  if (!isFloatingType(scalar_->dtype())) return scalar_->constInt();
  // A floating value is its size only when it is an integer (nvFuser's cast would truncate
  // 6.5 to 6 silently); a symbolic one is checked when the run binds it
  // (ExpressionEvaluator::bindInputs).
  const std::optional<double> d = scalar_->constDouble();
  if (!d.has_value() || !scalar_->isConst()) return std::nullopt;
  LOOM_CHECK(std::isfinite(*d) && *d == std::trunc(*d) && std::fabs(*d) < 9.3e18, "the size ",
             scalar_->toString(),
             " is not an integer; a floating size, bound or width must have "
             "an integral value");
  return int64_t(*d);
}

ir::Scalar* Size::toScalar() const {
  if (scalar_ == nullptr) return ir::IrBuilder::index(value_);
  if (scalar_->dtype() == kIndexType) return scalar_;
  if (auto c = constant()) return ir::IrBuilder::index(*c);
  ir::Scalar* out = ir::IrBuilder::symbolic(kIndexType);
  ir::IrBuilder::create<ir::UnaryOp>(ir::UnaryOpType::Cast, out, scalar_);
  if (isFloatingType(scalar_->dtype())) {
    // The cast must not truncate: the value is checked when a run binds it (an explicit cast by
    // the caller, nvFuser's way to truncate a size on purpose, is not).
    ir::Scalar* integral = scalarBinary(
        ir::BinaryOpType::LogicalAnd,
        scalarBinary(ir::BinaryOpType::Eq, scalar_, scalarUnary(ir::UnaryOpType::Trunc, scalar_)),
        scalarUnary(ir::UnaryOpType::IsFinite, scalar_));
    ir::FusionGuard::current()->addExtentRequirement(
        {integral, 1, scalar_,
         "the size " + scalar_->toString() +
             " is a floating Scalar, which is a size only when its value is an integer (a "
             "floating size, bound or width must have an integral value; it is never "
             "truncated)"});
  }
  return out;
}

std::string Size::toString() const {
  if (auto c = constant()) return std::to_string(*c);
  return scalar_->toString();
}

SizeList::SizeList(const std::vector<int64_t>& sizes) {
  sizes_.reserve(sizes.size());
  for (int64_t s : sizes) sizes_.emplace_back(s);
}

SizeList::SizeList(const std::vector<ir::Scalar*>& sizes) {
  sizes_.reserve(sizes.size());
  for (ir::Scalar* s : sizes) sizes_.emplace_back(s);
}

std::optional<std::vector<int64_t>> SizeList::constants() const {
  std::vector<int64_t> out;
  out.reserve(sizes_.size());
  for (const Size& s : sizes_) {
    auto c = s.constant();
    if (!c) return std::nullopt;
    out.push_back(*c);
  }
  return out;
}

std::string SizeList::toString() const {
  std::vector<std::string> parts;
  for (const Size& s : sizes_) parts.push_back(s.toString());
  return "[" + join(parts) + "]";
}

}  // namespace loom::ops
