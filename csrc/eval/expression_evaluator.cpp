// SPDX-License-Identifier: Apache-2.0
// ExpressionEvaluator: scalar evaluation and validation/binding of runtime fusion inputs.
#include "loom/eval/expression_evaluator.h"

#include <algorithm>
#include <limits>
#include <sstream>
#include <string>

#include "eval/complex_ops.h"
#include "eval/element_ops.h"
#include "eval/shape_constraints.h"
#include "loom/ir/exprs.h"
#include "loom/ir/extent_bindings.h"
#include "loom/ir/fusion.h"
#include "loom/ir/iter_domain.h"
#include "loom/ir/scalar_math.h"
#include "loom/ir/tensor_domain.h"
#include "loom/ir/tensor_view.h"
#include "loom/support/checked_math.h"
#include "loom/support/strings.h"

namespace loom::eval {
namespace {

using ir::ScalarValue;

std::string valueString(const ScalarValue& v, DataType dtype) {
  return ir::scalarValueToString(v, dtype);
}

bool sameValue(const ScalarValue& a, const ScalarValue& b) {
  if (a.index() != b.index()) return false;
  if (auto* x = std::get_if<double>(&a)) {
    double y = std::get<double>(b);
    return *x == y || (*x != *x && y != y);  // NaN binds consistently to NaN
  }
  if (auto* x = std::get_if<std::complex<double>>(&a)) {
    const std::complex<double> y = std::get<std::complex<double>>(b);
    auto same = [](double p, double q) { return p == q || (p != p && q != q); };
    return same(x->real(), y.real()) && same(x->imag(), y.imag());
  }
  return a == b;
}

ScalarValue evalUnary(const ir::UnaryOp* op, const ScalarValue& x) {
  DataType in = op->in()->dtype();
  DataType out = op->out()->dtype();
  if (detail::usesComplexMath(in, out)) {
    const detail::Complex r =
        detail::applyComplexUnary(op->opType(), detail::scalarToComplex(x), out, op);
    return detail::normalizeScalar(r, out);
  }
  // Integer casts and integer math are exact in int64 (not through double), narrowing by wrap.
  if (detail::usesIntegerMath(op->opType(), in, out)) {
    return detail::wrapToDtype(detail::intUnary(op->opType(), detail::scalarToInt(x), out, op), out);
  }
  double r = detail::applyUnary(op->opType(), detail::scalarToDouble(x), in, out, op);
  return detail::scalarFromDouble(r, out);
}

ScalarValue evalBinary(const ir::BinaryOp* op, const ScalarValue& a, const ScalarValue& b) {
  DataType out = op->out()->dtype();
  if (detail::usesComplexMath(op->lhs()->dtype(), op->rhs()->dtype(), out)) {
    const detail::Complex r = detail::applyComplexBinary(op->opType(), detail::scalarToComplex(a),
                                                         detail::scalarToComplex(b), out);
    return detail::normalizeScalar(r, out);
  }
  if (detail::usesIntegerMath(op->opType(), op->lhs()->dtype(), op->rhs()->dtype(), out)) {
    const DataType t =
        detail::integerMathType(op->opType(), op->lhs()->dtype(), op->rhs()->dtype(), out);
    int64_t r = detail::intBinary(op->opType(), detail::scalarToInt(a), detail::scalarToInt(b), t);
    if (isBooleanType(out)) return r != 0;
    return detail::wrapToDtype(r, out);
  }
  double r = detail::applyBinary(op->opType(), detail::scalarToDouble(a), detail::scalarToDouble(b),
                                 op->lhs()->dtype(), op->rhs()->dtype(), out);
  return detail::scalarFromDouble(r, out);
}

ScalarValue evalTernary(const ir::TernaryOp* op, const ScalarValue& a, const ScalarValue& b,
                        const ScalarValue& c) {
  DataType out = op->out()->dtype();
  if (op->opType() == ir::TernaryOpType::Where) {
    // Pick the operand itself so large integers stay exact.
    return detail::normalizeScalar(detail::scalarToDouble(a) != 0.0 ? b : c, out);
  }
  double r = detail::applyTernary(op->opType(), detail::scalarToDouble(a),
                                  detail::scalarToDouble(b), detail::scalarToDouble(c), out);
  return detail::scalarFromDouble(r, out);
}

// Which input dimension (or scalar input) first gave a symbolic extent its size, for messages.
using Binders = std::unordered_map<const ir::Val*, std::string>;

std::string inputName(size_t i, const ir::Val* v) {
  return "input " + std::to_string(i) + " (" + v->toString() + ")";
}

// "input 1, T0,": how nvFuser names an input in its binding errors ("Expected input 1, T0, to
// be bound to a tensor of rank 2, ..."), so that tests written for its messages match.
std::string expectedInput(size_t i, const ir::Val* v) {
  return "Expected input " + std::to_string(i) + ", " + v->toString() + ",";
}

void bindScalarInput(ExpressionEvaluator& ee, size_t i, const ir::Scalar* s, const Argument& arg,
                     Binders& binders) {
  DataType dt = s->dtype();
  std::string name = inputName(i, s);
  LOOM_CHECK(!std::holds_alternative<Tensor>(arg), expectedInput(i, s), " to be a scalar but got ",
             describeArgument(arg), " (", s->toString(), " is a ", dt, " scalar)");
  // Scalar arguments are bool, int64 or double (Argument): a complex scalar is a constant.
  LOOM_CHECK(!isComplexType(dt), name, " is a ", dt,
             " scalar input; complex scalars cannot be given at run time (make it a constant, "
             "or pass a 0-dim complex tensor)");
  bool ok = false;
  if (isFloatingType(dt)) {
    ok = std::holds_alternative<double>(arg) || std::holds_alternative<int64_t>(arg);
  } else if (isIntegralType(dt)) {
    ok = std::holds_alternative<int64_t>(arg);
  } else {
    ok = std::holds_alternative<bool>(arg);
  }
  LOOM_CHECK(ok, name, " is a ", dt, " scalar, but the argument is a ", describeArgument(arg));
  ScalarValue v = std::visit(
      [](const auto& x) -> ScalarValue {
        if constexpr (std::is_same_v<std::decay_t<decltype(x)>, Tensor>) {
          return std::monostate{};
        } else {
          return x;
        }
      },
      arg);
  if (s->isConst()) return;  // nothing to bind; kernels use the constant
  ee.bind(s, v);
  binders.emplace(s, name);
}

// Checks that `extent` (of dimension `dim` of input `name`) can take `size`, binding it when it
// is a fresh symbol. Extents with a definition are checked after every symbol is bound.
void matchExtent(ExpressionEvaluator& ee, const ir::Scalar* extent, int64_t size,
                 const std::string& where, Binders& binders,
                 std::vector<std::pair<const ir::Scalar*, std::pair<int64_t, std::string>>>& later) {
  if (auto c = extent->constInt()) {
    LOOM_CHECK(*c == size, where, ": expected size ", *c, " (a constant extent), got size ", size);
    return;
  }
  if (extent->definition() != nullptr) {
    later.push_back({extent, {size, where}});
    return;
  }
  if (ee.isBound(extent)) {
    int64_t have = detail::scalarToInt(*ee.evaluate(extent));
    auto it = binders.find(extent);
    std::string by = it != binders.end() ? it->second : std::string("an earlier binding");
    LOOM_CHECK(have == size, where, ": got size ", size, ", but ", by, " gave extent ",
               extent->toString(), " the size ", have);
    return;
  }
  ee.bind(extent, size);
  binders.emplace(extent, where);
}

}  // namespace

std::string describeArgument(const Argument& arg) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, Tensor>) {
          return "tensor " + describe(x);
        } else if constexpr (std::is_same_v<T, double>) {
          return "double " + ir::scalarValueToString(x, DataType::Float64);
        } else if constexpr (std::is_same_v<T, int64_t>) {
          return "int64 " + std::to_string(x);
        } else {
          return std::string("bool ") + (x ? "true" : "false");
        }
      },
      arg);
}

void ExpressionEvaluator::bind(const ir::Val* v, ScalarValue value) {
  LOOM_CHECK(v->isA<ir::Scalar>(), "only scalars can be bound, not ", v->toString());
  const auto* s = v->as<ir::Scalar>();
  LOOM_CHECK(!std::holds_alternative<std::monostate>(value), "binding ", s->toString(),
             " to an empty value");
  ScalarValue norm = detail::normalizeScalar(value, s->dtype());
  if (s->isConst()) {
    LOOM_CHECK(sameValue(s->value(), norm), "cannot bind the constant ", s->toString(), " to ",
               valueString(norm, s->dtype()));
    return;
  }
  auto it = bound_.find(v);
  if (it != bound_.end()) {
    LOOM_CHECK(sameValue(it->second, norm), s->toString(), " is already bound to ",
               valueString(it->second, s->dtype()), "; cannot bind it to ",
               valueString(norm, s->dtype()));
    return;
  }
  bound_.emplace(v, norm);
  derived_.clear();
}

std::optional<ScalarValue> ExpressionEvaluator::evaluate(const ir::Val* v) {
  LOOM_CHECK(v->isA<ir::Scalar>(), "cannot evaluate ", v->toString(), ": it is not a scalar");
  const auto* s = v->as<ir::Scalar>();
  if (s->isConst()) return detail::normalizeScalar(s->value(), s->dtype());
  if (auto it = bound_.find(v); it != bound_.end()) return it->second;
  if (auto it = derived_.find(v); it != derived_.end()) return it->second;
  // The values v is computed from, innermost first, with an explicit stack (a chain of scalar
  // ops can be tens of thousands long; recursion per op overflowed the stack).
  auto known = [&](const ir::Val* x) -> const ScalarValue* {
    if (auto it = bound_.find(x); it != bound_.end()) return &it->second;
    if (auto it = derived_.find(x); it != derived_.end()) return &it->second;
    return nullptr;
  };
  std::vector<std::pair<const ir::Scalar*, bool>> stack{{s, false}};  // (scalar, inputs pushed)
  while (!stack.empty()) {
    auto [x, expanded] = stack.back();
    if (x->isConst() || known(x) != nullptr) {
      stack.pop_back();
      continue;
    }
    ir::Expr* def = x->definition();
    if (def == nullptr) return std::nullopt;  // an unbound symbolic value upstream
    if (!expanded) {
      stack.back().second = true;
      for (ir::Val* in : def->inputs()) {
        if (!in->isA<ir::Scalar>()) return std::nullopt;
        stack.push_back({in->as<ir::Scalar>(), false});
      }
      continue;
    }
    stack.pop_back();
    std::vector<ScalarValue> ins;
    for (ir::Val* in : def->inputs()) {
      const auto* is = in->as<ir::Scalar>();
      ins.push_back(is->isConst() ? detail::normalizeScalar(is->value(), is->dtype())
                                  : *known(is));
    }
    ScalarValue r;
    if (auto* u = def->dynCast<ir::UnaryOp>()) {
      r = evalUnary(u, ins[0]);
    } else if (auto* b = def->dynCast<ir::BinaryOp>()) {
      r = evalBinary(b, ins[0], ins[1]);
    } else if (auto* t = def->dynCast<ir::TernaryOp>()) {
      r = evalTernary(t, ins[0], ins[1], ins[2]);
    } else {
      LOOM_THROW("cannot evaluate ", x->toString(), ": its definition ", def->toString(),
                 " is not scalar math");
    }
    derived_.emplace(x, r);
  }
  return *known(s);
}

int64_t ExpressionEvaluator::evaluateInt(const ir::Val* v) {
  auto r = evaluate(v);
  LOOM_CHECK(r.has_value(), "value ", v->toString(), " is not bound");
  return detail::scalarToInt(*r);
}

double ExpressionEvaluator::evaluateDouble(const ir::Val* v) {
  auto r = evaluate(v);
  LOOM_CHECK(r.has_value(), "value ", v->toString(), " is not bound");
  return detail::scalarToDouble(*r);
}

int64_t ExpressionEvaluator::extentOf(const ir::IterDomain* id, const ir::TensorView* tv) {
  const ir::Scalar* e = id->logicalExtent();
  auto r = evaluate(e);
  LOOM_CHECK(r.has_value(), "extent ", e->toString(), " of ", tv->toString(),
             " is not bound (bind the fusion inputs first)");
  return detail::scalarToInt(*r);
}

std::vector<int64_t> ExpressionEvaluator::logicalSizes(const ir::TensorView* tv) {
  std::vector<int64_t> sizes;
  for (const ir::IterDomain* id : ir::TensorDomain::noReductions(tv->logical())) {
    sizes.push_back(extentOf(id, tv));
  }
  return sizes;
}

void ExpressionEvaluator::bindInputs(const ir::Fusion& fusion, std::span<const Argument> args,
                                     Shards shards) {
  const auto& inputs = fusion.inputs();
  std::vector<std::string> names;
  for (const ir::Val* in : inputs) names.push_back(in->toString());
  LOOM_CHECK(args.size() == inputs.size(), "the fusion takes ", inputs.size(), " inputs (",
             join(names), ") but ", args.size(), " arguments were given");

  Binders binders;
  // Scalars first, so a tensor extent that is also a scalar input is checked against it.
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (auto* s = inputs[i]->dynCast<ir::Scalar>()) bindScalarInput(*this, i, s, args[i], binders);
  }

  std::vector<std::pair<const ir::Scalar*, std::pair<int64_t, std::string>>> later;
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto* tv = inputs[i]->dynCast<ir::TensorView>();
    if (tv == nullptr) continue;
    std::string name = inputName(i, tv);
    LOOM_CHECK(std::holds_alternative<Tensor>(args[i]), expectedInput(i, tv),
               " to be a tensor but got ", describeArgument(args[i]));
    const Tensor& t = std::get<Tensor>(args[i]);
    LOOM_CHECK(t.defined(), name, ": the argument is an undefined tensor");
    LOOM_CHECK(t.dtype() == tv->dtype(), expectedInput(i, tv), " to be bound to a tensor of dtype ",
               tv->dtype(), ", but got a tensor of dtype ", t.dtype(), " (", describe(t), ")");
    auto ids = ir::TensorDomain::noReductions(tv->logical());
    LOOM_CHECK(t.dim() == int64_t(ids.size()), expectedInput(i, tv),
               " to be bound to a tensor of rank ", ids.size(), ", but got a tensor of rank ",
               t.dim(), " (", describe(t), ")");
    const TensorMetadata m = inputMetadata(tv, t, shards, name);
    for (size_t d = 0; d < ids.size(); ++d) {
      const ir::IterDomain* id = ids[d];
      const int64_t size = m.globalSizes[d];
      std::string where = name + " dimension " + std::to_string(d);
      if (size != m.sizes[d]) {
        // A shard: the logical extent is what all devices hold together.
        const int64_t devices = size / m.sizes[d];
        where += " (sharded over " + std::to_string(devices) + " devices, local size " +
                 std::to_string(m.sizes[d]) + ")";
        // A constant extent: say what each device must hold, in the caller's (local) terms.
        const ir::Scalar* extent = id->hasExpandedExtent() ? id->expandedExtent() : id->extent();
        if (auto c = extent->constInt(); c.has_value() && *c != size) {
          LOOM_THROW(where, ": expected a local shard of size ", *c / devices, " (the extent ",
                     *c, " over ", devices, " devices), got ", m.sizes[d]);
        }
      }
      if (id->isBroadcast()) {
        if (!id->hasExpandedExtent()) {
          LOOM_CHECK(size == 1, where, " is a broadcast dimension: expected size 1, got size ",
                     size);
          continue;
        }
        LOOM_CHECK(size == 1 || m.strides[d] == 0, where,
                   " is an expanded broadcast dimension: expected stride 0 (or size 1), got size ",
                   size, " with stride ", m.strides[d]);
        matchExtent(*this, id->expandedExtent(), size, where, binders, later);
        continue;
      }
      matchExtent(*this, id->extent(), size, where, binders, later);
    }
  }
  // A local shard's extent n / d (multidevice::localizeShardings) is the only one of its
  // symbol n: the whole is d times the local size.
  for (const auto& [extent, need] : later) {
    int64_t factor = 0;
    const ir::Scalar* whole = ir::scalar_math::dividedSymbol(extent, &factor);
    if (whole != nullptr && !isBound(whole)) {
      bind(whole, checkedMul(need.first, factor, need.second));
      binders.emplace(whole, need.second);
    }
  }
  for (const auto& [extent, need] : later) {
    auto v = evaluate(extent);
    LOOM_CHECK(v.has_value(), need.second, ": its extent ", extent->toString(),
               " depends on values no input binds");
    LOOM_CHECK(detail::scalarToInt(*v) == need.first, need.second, ": expected size ",
               detail::scalarToInt(*v), " (extent ", extent->toString(), "), got size ",
               need.first);
  }
  checkShapeConstraints(fusion, *this, [&](const ir::Val* v) {
    auto it = binders.find(v);
    return it != binders.end() ? it->second : std::string();
  });
  // What the fusion's form implies about the sizes (ir::ExtentRequirement). One that depends on
  // sizes these arguments do not bind (a tensor another device holds) is not this run's to check.
  for (const ir::ExtentRequirement& r : fusion.extentRequirements()) {
    const std::optional<ir::ScalarValue> v = evaluate(r.value);
    if (!v.has_value() || detail::scalarToInt(*v) == r.expected) continue;
    const std::optional<ir::ScalarValue> extent = evaluate(r.extent);
    if (extent.has_value() && isFloatingType(r.extent->dtype())) {  // a floating size's value
      std::ostringstream value;
      value.precision(17);
      value << detail::scalarToDouble(*extent);
      LOOM_THROW(r.what, "; the arguments make ", r.extent->toString(), " = ", value.str());
    }
    const std::string have =
        extent.has_value() ? std::to_string(detail::scalarToInt(*extent)) : "unknown";
    // A requirement that two sizes are equal (expand to a Scalar size): the other one's value.
    const auto* eq = r.value->definition() != nullptr
                         ? r.value->definition()->dynCast<ir::BinaryOp>()
                         : nullptr;
    if (eq != nullptr && eq->opType() == ir::BinaryOpType::Eq && eq->lhs() == r.extent) {
      const std::optional<ir::ScalarValue> want = evaluate(eq->rhs()->as<ir::Scalar>());
      if (want.has_value()) {
        LOOM_THROW(r.what, "; the arguments make that extent ", have, " and ",
                   eq->rhs()->toString(), " ", detail::scalarToInt(*want));
      }
    }
    LOOM_THROW(r.what, "; the arguments make that extent ", have);
  }
}

TensorMetadata inputMetadata(const ir::TensorView* tv, const Tensor& t,
                             ExpressionEvaluator::Shards shards, const std::string& name) {
  TensorMetadata m = TensorMetadata::of(t);
  // Only a tensor with a device mesh can be sharded; the others need no per-dim counts.
  if (shards != ExpressionEvaluator::Shards::Local || !tv->hasDeviceMesh()) return m;
  const std::vector<int64_t> counts = ir::shardCounts(tv);
  for (size_t d = 0; d < counts.size() && d < m.sizes.size(); ++d) {
    if (counts[d] <= 1) continue;
    m.globalSizes[d] = checkedMul(m.sizes[d], counts[d],
                                  name + " dimension " + std::to_string(d) + " (sharded over " +
                                      std::to_string(counts[d]) + " devices, local size " +
                                      std::to_string(m.sizes[d]) + ")");
  }
  return m;
}

}  // namespace loom::eval
