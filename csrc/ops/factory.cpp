// SPDX-License-Identifier: Apache-2.0
// Factories: full, zeros, ones, iota, arange (FullOp and IotaOp, no tensor inputs).
#include "loom/ops/factory.h"

#include <cmath>

#include "loom/ir/builder.h"
#include "loom/ir/exprs.h"
#include "loom/ir/iter_domain.h"
#include "ops/utils.h"

namespace loom::ops {
namespace {

using ir::IrBuilder;
using ir::IterDomain;
using ir::IterType;

Scalar* scalarBinary(ir::BinaryOpType op, Scalar* a, Scalar* b, DataType dtype) {
  Scalar* out = IrBuilder::symbolic(dtype);
  IrBuilder::create<ir::BinaryOp>(op, out, a, b);
  return out;
}

Scalar* scalarUnary(ir::UnaryOpType op, Scalar* a, DataType dtype) {
  Scalar* out = IrBuilder::symbolic(dtype);
  IrBuilder::create<ir::UnaryOp>(op, out, a);
  return out;
}

}  // namespace

TensorView* full(const SizeList& shape, Operand value, DataType dtype) {
  Scalar* fill = detail::scalarOperand(value.val(), dtype, "full", "the fill value");
  std::vector<IterDomain*> ids;
  for (size_t d = 0; d < shape.size(); ++d) {
    ids.push_back(detail::sizedId(shape[d], "full", d, &shape));
  }
  TensorView* out = detail::newTensor(std::move(ids), dtype);
  IrBuilder::create<ir::FullOp>(out, fill);
  return out;
}

TensorView* zeros(const SizeList& shape, DataType dtype) { return full(shape, int64_t(0), dtype); }

TensorView* ones(const SizeList& shape, DataType dtype) { return full(shape, int64_t(1), dtype); }

TensorView* iota(Size length, Operand start, Operand step, DataType dtype) {
  LOOM_CHECK(isIntegralType(dtype) || isFloatingType(dtype), "iota: dtype ", dtype,
             " is not supported (an integer or floating type is)");
  // nvFuser's checks (and its words, which tests written for it match): a start or step that
  // cannot be the dtype, a non-finite one, and a zero step, which would repeat one value.
  const std::pair<const char*, const Val*> args[] = {{"start", start.val()}, {"step", step.val()}};
  for (const auto& [name, v] : args) {
    if (v == nullptr || !v->isA<Scalar>()) continue;
    LOOM_CHECK(!isComplexType(v->dtype()) || isComplexType(dtype), "iota: ", name, " ",
               v->toString(), " is ", v->dtype(), ", which the dtype ", dtype,
               " cannot hold (iota: ", name, " dtype does not match specified dtype argument)");
    auto c = v->as<Scalar>()->constDouble();
    LOOM_CHECK(!c || std::isfinite(*c), "iota: ", name, " is ", v->toString(),
               " (iota: length, start, step must be finite numbers.)");
  }
  if (step.val() != nullptr && step.val()->isA<Scalar>()) {
    auto c = step.val()->as<Scalar>()->constDouble();
    LOOM_CHECK(!c || *c != 0.0, "iota: step is ", step.val()->toString(),
               ", which would repeat start (iota: step value must not equal zero.)");
  }
  Scalar* first = detail::scalarOperand(start.val(), dtype, "iota", "start");
  Scalar* stride = detail::scalarOperand(step.val(), dtype, "iota", "step");
  TensorView* out = detail::newTensor({detail::sizedId(length, "iota", 0, nullptr)}, dtype);
  IrBuilder::create<ir::IotaOp>(out, first, stride);
  return out;
}

TensorView* arange(Operand start, Operand end, Operand step, std::optional<DataType> dtype) {
  const Val* args[] = {start.val(), end.val(), step.val()};
  const char* names[] = {"start", "end", "step"};
  bool all_integral = true;
  for (size_t i = 0; i < 3; ++i) {
    LOOM_CHECK(args[i]->isA<Scalar>(), "arange: ", names[i], " must be a number or a Scalar, got ",
               args[i]->toString());
    all_integral = all_integral && isIntegralType(args[i]->dtype());
  }
  DataType out_dtype = dtype.value_or(all_integral ? DataType::Int64 : DataType::Float32);
  auto* s0 = start.val()->as<Scalar>();
  auto* s1 = end.val()->as<Scalar>();
  auto* st = step.val()->as<Scalar>();
  auto c0 = s0->constDouble();
  auto c1 = s1->constDouble();
  auto cs = st->constDouble();
  if (cs) LOOM_CHECK(*cs != 0.0, "arange: step must be nonzero");
  if (c0 && c1 && cs) {
    LOOM_CHECK((*cs > 0 && *c1 >= *c0) || (*cs < 0 && *c1 <= *c0),
               "arange: the bounds start=", s0->toString(), " and end=", s1->toString(),
               " are inconsistent with the sign of step=", st->toString());
    double n = std::ceil((*c1 - *c0) / *cs);
    LOOM_CHECK(std::isfinite(n), "arange: the length ceil((", s1->toString(), " - ", s0->toString(),
               ") / ", st->toString(), ") is not finite");
    return iota(int64_t(n), start, step, out_dtype);
  }
  // Length ceil((end - start) / step) as double scalar math, converted to an index.
  auto f64 = [](Scalar* s) { return detail::castScalar(s, DataType::Float64); };
  Scalar* diff = scalarBinary(ir::BinaryOpType::Sub, f64(s1), f64(s0), DataType::Float64);
  Scalar* quot = scalarBinary(ir::BinaryOpType::Div, diff, f64(st), DataType::Float64);
  Scalar* up = scalarUnary(ir::UnaryOpType::Ceil, quot, DataType::Float64);
  Scalar* length = scalarUnary(ir::UnaryOpType::Cast, up, kIndexType);
  return iota(Size(length), start, step, out_dtype);
}

}  // namespace loom::ops
