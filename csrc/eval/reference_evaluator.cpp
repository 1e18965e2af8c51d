// SPDX-License-Identifier: Apache-2.0
// The reference evaluator (see reference_evaluator.h for the semantics it implements): running a
// fusion, its inputs and outputs, and the elementwise ops. reference_runner.h lists where the
// other ops live.
#include "loom/eval/reference_evaluator.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "eval/reference_runner.h"
#include "loom/ir/fusion.h"
#include "loom/support/strings.h"

namespace loom::eval::detail {

using ir::TensorView;

namespace {

// The integer `bits` (unsigned when `is_unsigned`) as a double rounded to odd: exact below 2^53;
// above, the top 53 bits with the lowest set when any bit below them is, so rounding the result
// to a type of 51 bits or fewer rounds as from the integer itself.
double integerRoundedToOdd(int64_t bits, bool is_unsigned) {
  const bool negative = !is_unsigned && bits < 0;
  uint64_t mag = negative ? uint64_t(0) - uint64_t(bits) : uint64_t(bits);
  int shift = 0;
  while ((mag >> shift) >= (uint64_t(1) << 53)) ++shift;
  uint64_t kept = mag >> shift;
  if (shift > 0 && (mag & ((uint64_t(1) << shift) - 1)) != 0) kept |= 1;
  const double d = std::ldexp(double(kept), shift);
  return negative ? -d : d;
}

bool isScalarExpr(const ir::Expr* e) {
  for (ir::Val* out : e->outputs()) {
    if (!out->isA<ir::Scalar>()) return false;
  }
  return true;
}

}  // namespace

bool stretchStrides(const std::vector<int64_t>& in_shape, const std::vector<int64_t>& out_shape,
                    std::vector<int64_t>& strides) {
  if (in_shape.size() != out_shape.size()) return false;
  strides = rowMajorStrides(in_shape);
  for (size_t d = 0; d < in_shape.size(); ++d) {
    if (in_shape[d] == out_shape[d]) continue;
    if (in_shape[d] != 1) return false;
    strides[d] = 0;
  }
  return true;
}

std::vector<Tensor> Runner::run(const ir::Fusion& fusion, std::span<const Argument> args) {
  // The evaluator reads elements: tensors must be host tensors (binding reads metadata only).
  for (size_t i = 0; i < fusion.inputs().size() && i < args.size(); ++i) {
    const Tensor* t = std::get_if<Tensor>(&args[i]);
    if (t == nullptr || !t->defined() || t->device().isCpu()) continue;
    LOOM_THROW("input ", i, " (", fusion.inputs()[i]->toString(),
               "): the reference evaluator needs a host (cpu) tensor, got ", describe(*t));
  }
  ee_.bindInputs(fusion, args, ExpressionEvaluator::Shards::Global);  // whole tensors
  for (size_t i = 0; i < fusion.inputs().size(); ++i) {
    if (auto* tv = fusion.inputs()[i]->dynCast<TensorView>()) {
      buffers_[tv] = readTensor(std::get<Tensor>(args[i]));
    }
  }
  for (ir::Expr* e : fusion.exprs()) {
    if (isScalarExpr(e)) {
      for (ir::Val* out : e->outputs()) {
        LOOM_CHECK(ee_.evaluate(out).has_value(), "cannot evaluate ", e->toString(),
                   ": it depends on a scalar that is not bound");
      }
      continue;
    }
    dispatch(e);
  }
  std::vector<Tensor> outs;
  for (ir::Val* out : fusion.outputs()) outs.push_back(toTensor(out));
  return outs;
}

Buffer Runner::readTensor(const Tensor& t) {
  Buffer b{t.sizes(), std::vector<double>(size_t(t.numel()))};
  const bool complex = isComplexType(t.dtype());
  if (complex) b.makeComplex();
  const char* base = static_cast<const char*>(t.data());
  int64_t isz = int64_t(t.itemSize());
  forEachIndex(b.shape, {t.strides()}, [&](int64_t lin, const std::vector<int64_t>& off) {
    if (complex) {
      const Complex z = loadAsComplex(base + off[0] * isz, t.dtype());
      b.data[size_t(lin)] = z.real();
      b.imag[size_t(lin)] = z.imag();
    } else {
      b.data[size_t(lin)] = loadAsDouble(base + off[0] * isz, t.dtype());
    }
  });
  if (isIntegralType(t.dtype())) {
    b.ints.resize(b.data.size());
    forEachIndex(b.shape, {t.strides()}, [&](int64_t lin, const std::vector<int64_t>& off) {
      b.ints[size_t(lin)] = loadInteger(base + off[0] * isz, t.dtype());
    });
  }
  return b;
}

Tensor Runner::toTensor(ir::Val* out) {
  if (auto* s = out->dynCast<ir::Scalar>()) {
    auto v = ee_.evaluate(s);
    LOOM_CHECK(v.has_value(), "fusion output ", s->toString(), " is not bound");
    Tensor t = Tensor::empty({}, s->dtype());
    storeFromComplex(t.data(), s->dtype(), scalarToComplex(*v));
    return t;
  }
  const Buffer& b = bufferOf(out->as<TensorView>(), nullptr);
  Tensor t = Tensor::empty(b.shape, out->dtype());
  char* base = static_cast<char*>(t.data());
  size_t isz = t.itemSize();
  for (size_t i = 0; i < b.data.size(); ++i) {
    if (isIntegralType(out->dtype())) {
      storeInteger(base + i * isz, out->dtype(), b.intAt(i));
    } else {
      storeFromComplex(base + i * isz, out->dtype(), b.at(i));
    }
  }
  return t;
}

const Buffer& Runner::bufferOf(const TensorView* tv, const ir::Expr* user) {
  auto it = buffers_.find(tv);
  LOOM_ASSERT(it != buffers_.end(), "no value for ", tv->toString(),
              user != nullptr ? " used by " + user->toString() : std::string());
  return it->second;
}

void Runner::define(const TensorView* tv, Buffer b) {
  const DataType dtype = tv->dtype();
  if (isComplexType(dtype) && !b.complex) b.makeComplex();
  if (!isComplexType(dtype) && b.complex) {  // only the real part exists in a real tensor
    b.complex = false;
    b.imag.clear();
  }
  if (isIntegralType(dtype) && !b.ints.empty()) {
    // Exact values: wrapped to the dtype's width, `data` their nearest doubles.
    for (size_t i = 0; i < b.ints.size(); ++i) {
      b.ints[i] = wrapToDtype(b.ints[i], dtype);
      b.data[i] = integerToDouble(b.ints[i], dtype);
    }
  } else if (dtype != DataType::Float64 && dtype != DataType::ComplexDouble) {
    for (double& x : b.data) x = roundToDtype(x, dtype);
    for (double& x : b.imag) x = roundToDtype(x, dtype);
  }
  if (!isIntegralType(dtype)) {
    b.ints.clear();
  } else if (b.ints.empty()) {  // computed in double
    b.ints.resize(b.data.size());
    for (size_t i = 0; i < b.data.size(); ++i) b.ints[i] = floatToInteger(b.data[i], dtype);
  }
  buffers_[tv] = std::move(b);
}

std::vector<int64_t> Runner::checkedSizes(const ir::Expr* e, const TensorView* tv,
                                          const char* what) {
  std::vector<int64_t> shape = ee_.logicalSizes(tv);
  for (size_t d = 0; d < shape.size(); ++d) {
    LOOM_CHECK(shape[d] >= 0, e->opName(), ": ", tv->toString(), " would have the negative ", what,
               " ", shape[d], " at dimension ", d, " (sizes [", join(shape), "]) in ",
               e->toString());
  }
  return shape;
}

std::vector<int64_t> Runner::pointwiseShape(const ir::Expr* e, const TensorView* out) {
  auto ids = ir::TensorDomain::noReductions(out->logical());
  std::vector<int64_t> shape(ids.size());
  for (size_t d = 0; d < ids.size(); ++d) {
    int64_t inferred = 1;
    for (ir::Val* in : e->inputs()) {
      auto* tv = in->dynCast<TensorView>();
      if (tv == nullptr) continue;
      const Buffer& b = bufferOf(tv, e);
      LOOM_CHECK(b.shape.size() == ids.size(), e->toString(), ": operand ", tv->toString(),
                 " has rank ", b.shape.size(), " but the output has rank ", ids.size(),
                 " (broadcasts must be explicit)");
      int64_t s = b.shape[d];
      if (s == 1 || s == inferred) continue;
      LOOM_CHECK(inferred == 1, e->toString(), ": operands disagree on dimension ", d, ": sizes ",
                 inferred, " and ", s);
      inferred = s;
    }
    auto known = ee_.evaluate(ids[d]->logicalExtent());
    if (!known) {
      shape[d] = inferred;
      continue;
    }
    int64_t extent = scalarToInt(*known);
    if (extent == inferred || inferred == 1) {
      shape[d] = extent;
    } else if (extent == 1 && (ids[d]->isBroadcast() || ids[d]->isSymbolic())) {
      // An expanded operand keeps the broadcast dim at its size; a Symbolic dim (from a
      // dynamic reshape) that is 1 at run time broadcasts against the other operands.
      shape[d] = inferred;
    } else {
      LOOM_THROW(e->toString(), ": dimension ", d, " of ", out->toString(), " has extent ", extent,
                 " but its operands have size ", inferred);
    }
  }
  return shape;
}

Runner::Operand Runner::operand(ir::Val* v, const ir::Expr* e) {
  Operand op;
  op.dtype = v->dtype();
  if (auto* tv = v->dynCast<TensorView>()) {
    op.buffer = &bufferOf(tv, e);
  } else {
    auto value = ee_.evaluate(v);
    LOOM_CHECK(value.has_value(), e->toString(), ": scalar ", v->toString(), " is not bound");
    op.scalar = roundToDtype(scalarToDouble(*value), v->dtype());
    op.int_scalar =
        isIntegralType(v->dtype()) ? normalizeScalarInt(*value, v->dtype()) : toInt64(op.scalar);
    op.complex_scalar = roundComplex(scalarToComplex(*value), v->dtype());
  }
  return op;
}

std::vector<std::vector<int64_t>> Runner::operandStrides(const ir::Expr* e,
                                                         const std::vector<Operand>& ops,
                                                         const std::vector<int64_t>& shape) {
  std::vector<std::vector<int64_t>> strides;
  for (const Operand& op : ops) {
    std::vector<int64_t> s(shape.size(), 0);
    if (op.buffer != nullptr) {
      bool ok = stretchStrides(op.buffer->shape, shape, s);
      LOOM_ASSERT(ok, "operand shape [", join(op.buffer->shape), "] vs [", join(shape), "] in ",
                  e->toString());
    }
    strides.push_back(std::move(s));
  }
  return strides;
}

template <bool kComplex, typename Fn>
Buffer Runner::pointwise(const ir::Expr* e, const TensorView* out, Fn&& fn) {
  std::vector<Operand> ops;
  for (ir::Val* in : e->inputs()) ops.push_back(operand(in, e));
  Buffer result{pointwiseShape(e, out), {}};
  result.data.resize(size_t(numelOf(result.shape)));
  const std::vector<std::vector<int64_t>> strides = operandStrides(e, ops, result.shape);
  using In = std::conditional_t<kComplex, Complex, double>;
  if constexpr (kComplex) result.makeComplex();
  std::vector<In> vals(ops.size());
  forEachIndex(result.shape, strides, [&](int64_t lin, const std::vector<int64_t>& off) {
    for (size_t j = 0; j < ops.size(); ++j) {
      const Buffer* b = ops[j].buffer;
      if constexpr (kComplex) {
        vals[j] = b != nullptr ? b->at(size_t(off[j])) : ops[j].complex_scalar;
      } else {
        vals[j] = b != nullptr ? b->data[size_t(off[j])] : ops[j].scalar;
      }
    }
    if constexpr (kComplex) {
      const Complex z = fn(vals);
      result.data[size_t(lin)] = z.real();
      result.imag[size_t(lin)] = z.imag();
    } else {
      result.data[size_t(lin)] = fn(vals);
    }
  });
  return result;
}

template <typename Fn>
Buffer Runner::pointwiseInt(const ir::Expr* e, const TensorView* out, Fn&& fn) {
  std::vector<Operand> ops;
  for (ir::Val* in : e->inputs()) ops.push_back(operand(in, e));
  Buffer result{pointwiseShape(e, out), {}};
  result.data.resize(size_t(numelOf(result.shape)));
  result.ints.resize(result.data.size());
  const std::vector<std::vector<int64_t>> strides = operandStrides(e, ops, result.shape);
  std::vector<int64_t> vals(ops.size());
  forEachIndex(result.shape, strides, [&](int64_t lin, const std::vector<int64_t>& off) {
    for (size_t j = 0; j < ops.size(); ++j) vals[j] = ops[j].intAt(size_t(off[j]));
    result.ints[size_t(lin)] = fn(vals);
    result.data[size_t(lin)] = integerToDouble(result.ints[size_t(lin)], out->dtype());
  });
  return result;
}

void Runner::handle(ir::UnaryOp* e) {
  auto* out = e->out()->as<TensorView>();
  DataType in_t = e->in()->dtype();
  DataType out_t = out->dtype();
  if (usesComplexMath(in_t, out_t)) {
    define(out, pointwise<true>(e, out, [&](const std::vector<Complex>& v) {
             return applyComplexUnary(e->opType(), v[0], out_t, e);
           }));
    return;
  }
  if (usesIntegerMath(e->opType(), in_t, out_t)) {
    define(out, pointwiseInt(e, out, [&](const std::vector<int64_t>& v) {
             return wrapToDtype(intUnary(e->opType(), v[0], out_t, e), out_t);
           }));
    return;
  }
  if (e->opType() == ir::UnaryOpType::Cast && (in_t == DataType::Int64 || in_t == DataType::UInt64) &&
      out_t == DataType::Float32) {
    // A 64-bit integer past 2^53 is not a double, and rounding it to one and then to f32 could
    // round twice (a value just above a midpoint landing on it): a kernel's cast rounds once
    // from the integer. A double rounded to odd keeps what the second rounding needs, so
    // rounding that to f32 is the one correct rounding. (f16 and bf16 convert through a double,
    // exact below 2^53, in the kernels as here.)
    Buffer b = pointwiseInt(e, out, [](const std::vector<int64_t>& v) { return v[0]; });
    for (size_t i = 0; i < b.data.size(); ++i) {
      const double d = integerRoundedToOdd(b.ints[i], in_t == DataType::UInt64);
      b.data[i] = applyUnary(ir::UnaryOpType::Cast, d, in_t, out_t, e);
    }
    b.ints.clear();
    define(out, std::move(b));
    return;
  }
  if (e->opType() == ir::UnaryOpType::Cast && isIntegralType(out_t)) {
    // Floats to integers straight from the operand's value: a UInt64 result past 2^53 is not
    // a double (floatToInteger, data_type.h).
    Buffer b = pointwise(e, out, [](const std::vector<double>& v) { return v[0]; });
    b.ints.resize(b.data.size());
    for (size_t i = 0; i < b.data.size(); ++i) b.ints[i] = floatToInteger(b.data[i], out_t);
    define(out, std::move(b));
    return;
  }
  define(out, pointwise(e, out, [&](const std::vector<double>& v) {
           return applyUnary(e->opType(), v[0], in_t, out_t, e);
         }));
}

void Runner::handle(ir::BinaryOp* e) {
  auto* out = e->out()->as<TensorView>();
  DataType l = e->lhs()->dtype();
  DataType r = e->rhs()->dtype();
  DataType out_t = out->dtype();
  if (usesComplexMath(l, r, out_t)) {
    define(out, pointwise<true>(e, out, [&](const std::vector<Complex>& v) {
             return applyComplexBinary(e->opType(), v[0], v[1], out_t);
           }));
    return;
  }
  if (usesIntegerMath(e->opType(), l, r, out_t) && !isFloatingType(l) && !isFloatingType(r)) {
    const DataType t = integerMathType(e->opType(), l, r, out_t);
    define(out, pointwiseInt(e, out, [&](const std::vector<int64_t>& v) {
             return wrapToDtype(intBinary(e->opType(), v[0], v[1], t), out_t);
           }));
    return;
  }
  define(out, pointwise(e, out, [&](const std::vector<double>& v) {
           return applyBinary(e->opType(), v[0], v[1], l, r, out_t);
         }));
}

void Runner::handle(ir::TernaryOp* e) {
  auto* out = e->out()->as<TensorView>();
  DataType out_t = out->dtype();
  if (isComplexType(out_t)) {  // where (ir::verify): the condition's real part selects
    LOOM_CHECK(e->opType() == ir::TernaryOpType::Where, e->toString(),
               ": only where is defined for complex values");
    define(out, pointwise<true>(e, out, [&](const std::vector<Complex>& v) {
             return v[0].real() != 0.0 ? v[1] : v[2];
           }));
    return;
  }
  if (isIntegralType(out_t) && e->opType() != ir::TernaryOpType::Lerp &&
      std::none_of(e->inputs().begin(), e->inputs().end(),
                   [](const ir::Val* v) { return isFloatingType(v->dtype()); })) {
    // where and clamp choose among their integer operands: exact.
    const bool where = e->opType() == ir::TernaryOpType::Where;
    define(out, pointwiseInt(e, out, [&](const std::vector<int64_t>& v) {
             if (where) return v[0] != 0 ? v[1] : v[2];
             return intBinary(ir::BinaryOpType::Min,
                              intBinary(ir::BinaryOpType::Max, v[0], v[1], out_t), v[2], out_t);
           }));
    return;
  }
  define(out, pointwise(e, out, [&](const std::vector<double>& v) {
           return applyTernary(e->opType(), v[0], v[1], v[2], out_t);
         }));
}

void Runner::handleDefault(ir::Expr* e) {
  LOOM_THROW("the reference evaluator does not support ", e->toString());
}

}  // namespace loom::eval::detail

namespace loom::eval {

std::vector<Tensor> evaluateFusion(const ir::Fusion& fusion, std::span<const Argument> inputs) {
  detail::Runner runner;
  return runner.run(fusion, inputs);
}

}  // namespace loom::eval
