// SPDX-License-Identifier: Apache-2.0
// The reference evaluator (see reference_evaluator.h for the semantics it implements).
#include "loom/eval/reference_evaluator.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <unordered_map>

#include "eval/complex_ops.h"
#include "eval/element_ops.h"
#include "eval/index_ops.h"
#include "eval/reduction_space.h"
#include "eval/sort_ops.h"
#include "loom/eval/expression_evaluator.h"
#include "loom/eval/philox.h"
#include "loom/ir/dispatch.h"
#include "loom/ir/fusion.h"
#include "loom/ir/matmul_geometry.h"
#include "loom/ops/attention.h"
#include "loom/support/strings.h"

namespace loom::eval {
namespace {

using ir::TensorView;
using detail::forEachIndex;
using detail::numelOf;
using detail::ReductionSpace;
using detail::rowMajorStrides;

/// A tensor value: a dense row-major buffer of its logical shape (reductions removed). A complex
/// tensor (`complex`) keeps its imaginary parts in `imag`, in the layout of `data`; a real one
/// has no `imag`. An integer tensor (Int32, Int64) also keeps its exact values in `ints` (a
/// double holds integers exactly only up to 2^53): integer math, copies, reductions, full and
/// iota read and write them; an op that computes in double leaves `ints` empty, and define()
/// fills it from `data`.
struct Buffer {
  Buffer() = default;
  Buffer(std::vector<int64_t> shape_, std::vector<double> data_, std::vector<double> imag_ = {})
      : shape(std::move(shape_)), data(std::move(data_)), imag(std::move(imag_)) {}

  std::vector<int64_t> shape;
  std::vector<double> data;
  std::vector<double> imag;
  std::vector<int64_t> ints;
  bool complex = false;

  detail::Complex at(size_t i) const { return {data[i], complex ? imag[i] : 0.0}; }
  /// Element i as an integer: exact when `ints` holds it, else truncated from `data`.
  int64_t intAt(size_t i) const { return ints.empty() ? detail::toInt64(data[i]) : ints[i]; }
  /// Element `to` of this buffer set to element `from` of `src` (same kind of buffer).
  void copyElement(size_t to, const Buffer& src, size_t from) {
    data[to] = src.data[from];
    if (complex && src.complex) imag[to] = src.imag[from];
    if (!src.ints.empty()) {
      ints.resize(data.size());
      ints[to] = src.ints[from];
    }
  }
  /// Makes this a complex buffer whose imaginary parts are `fill`.
  void makeComplex(double fill = 0.0) {
    complex = true;
    imag.assign(data.size(), fill);
  }
};

/// Strides that read `in_shape` (row-major, same rank) stretched to `out_shape`: a size-1 dim
/// of the input repeats. Returns false when some dim is neither equal nor 1.
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

/// Chan et al.'s combination of two partial (avg, m2, n) statistics.
struct Welford {
  double avg = 0.0;
  double m2 = 0.0;
  double n = 0.0;
  void combine(double b_avg, double b_m2, double b_n) {
    if (b_n == 0.0) return;
    double total = n + b_n;
    double delta = b_avg - avg;
    double f = b_n / total;
    double step = delta * f;
    // An infinite mean against another: the weighted sum, order independent (welford.cuh).
    avg = step - step == 0.0 ? avg + step : avg * (1.0 - f) + b_avg * f;
    m2 += b_m2 + delta * delta * (n * b_n / total);
    n = total;
  }
};

class Runner : public ir::ExprVisitor {
 public:
  std::vector<Tensor> run(const ir::Fusion& fusion, std::span<const Argument> args) {
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

 private:
  static bool isScalarExpr(const ir::Expr* e) {
    for (ir::Val* out : e->outputs()) {
      if (!out->isA<ir::Scalar>()) return false;
    }
    return true;
  }

  static Buffer readTensor(const Tensor& t) {
    Buffer b{t.sizes(), std::vector<double>(size_t(t.numel()))};
    const bool complex = isComplexType(t.dtype());
    if (complex) b.makeComplex();
    const char* base = static_cast<const char*>(t.data());
    int64_t isz = int64_t(t.itemSize());
    forEachIndex(b.shape, {t.strides()}, [&](int64_t lin, const std::vector<int64_t>& off) {
      if (complex) {
        const detail::Complex z = loadAsComplex(base + off[0] * isz, t.dtype());
        b.data[size_t(lin)] = z.real();
        b.imag[size_t(lin)] = z.imag();
      } else {
        b.data[size_t(lin)] = loadAsDouble(base + off[0] * isz, t.dtype());
      }
    });
    if (isIntegralType(t.dtype())) {
      b.ints.resize(b.data.size());
      forEachIndex(b.shape, {t.strides()}, [&](int64_t lin, const std::vector<int64_t>& off) {
        b.ints[size_t(lin)] = loadInt(base + off[0] * isz, t.dtype());
      });
    }
    return b;
  }

  static int64_t loadInt(const char* p, DataType dtype) {
    if (dtype == DataType::Int32) {
      int32_t v = 0;
      std::memcpy(&v, p, sizeof(v));
      return v;
    }
    int64_t v = 0;
    std::memcpy(&v, p, sizeof(v));
    return v;
  }

  static void storeInt(char* p, DataType dtype, int64_t v) {
    if (dtype == DataType::Int32) {
      const auto narrow = int32_t(detail::wrapToDtype(v, DataType::Int32));
      std::memcpy(p, &narrow, sizeof(narrow));
    } else {
      std::memcpy(p, &v, sizeof(v));
    }
  }

  Tensor toTensor(ir::Val* out) {
    if (auto* s = out->dynCast<ir::Scalar>()) {
      auto v = ee_.evaluate(s);
      LOOM_CHECK(v.has_value(), "fusion output ", s->toString(), " is not bound");
      Tensor t = Tensor::empty({}, s->dtype());
      storeFromComplex(t.data(), s->dtype(), detail::scalarToComplex(*v));
      return t;
    }
    const Buffer& b = bufferOf(out->as<TensorView>(), nullptr);
    Tensor t = Tensor::empty(b.shape, out->dtype());
    char* base = static_cast<char*>(t.data());
    size_t isz = t.itemSize();
    for (size_t i = 0; i < b.data.size(); ++i) {
      if (isIntegralType(out->dtype())) {
        storeInt(base + i * isz, out->dtype(), b.intAt(i));
      } else {
        storeFromComplex(base + i * isz, out->dtype(), b.at(i));
      }
    }
    return t;
  }

  const Buffer& bufferOf(const TensorView* tv, const ir::Expr* user) {
    auto it = buffers_.find(tv);
    LOOM_ASSERT(it != buffers_.end(), "no value for ", tv->toString(),
                user != nullptr ? " used by " + user->toString() : std::string());
    return it->second;
  }

  /// Stores an op's result after rounding it to the output dtype.
  void define(const TensorView* tv, Buffer b) {
    const DataType dtype = tv->dtype();
    if (isComplexType(dtype) && !b.complex) b.makeComplex();
    if (!isComplexType(dtype) && b.complex) {  // only the real part exists in a real tensor
      b.complex = false;
      b.imag.clear();
    }
    if (isIntegralType(dtype) && !b.ints.empty()) {
      // Exact values: wrapped to the dtype's width, `data` their nearest doubles.
      for (size_t i = 0; i < b.ints.size(); ++i) {
        b.ints[i] = detail::wrapToDtype(b.ints[i], dtype);
        b.data[i] = double(b.ints[i]);
      }
    } else if (dtype != DataType::Float64 && dtype != DataType::ComplexDouble) {
      for (double& x : b.data) x = detail::roundToDtype(x, dtype);
      for (double& x : b.imag) x = detail::roundToDtype(x, dtype);
    }
    if (!isIntegralType(dtype)) {
      b.ints.clear();
    } else if (b.ints.empty()) {  // computed in double
      b.ints.resize(b.data.size());
      for (size_t i = 0; i < b.data.size(); ++i) b.ints[i] = detail::toInt64(b.data[i]);
    }
    buffers_[tv] = std::move(b);
  }

  /// Output shape of a pointwise op: the output's extents, checked against (and filled in from)
  /// the operand sizes, where a size-1 operand dim stretches.
  std::vector<int64_t> pointwiseShape(const ir::Expr* e, const TensorView* out) {
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
        LOOM_CHECK(inferred == 1, e->toString(), ": operands disagree on dimension ", d,
                   ": sizes ", inferred, " and ", s);
        inferred = s;
      }
      auto known = ee_.evaluate(ids[d]->logicalExtent());
      if (!known) {
        shape[d] = inferred;
        continue;
      }
      int64_t extent = detail::scalarToInt(*known);
      if (extent == inferred || inferred == 1) {
        shape[d] = extent;
      } else if (extent == 1 && (ids[d]->isBroadcast() || ids[d]->isSymbolic())) {
        // An expanded operand keeps the broadcast dim at its size; a Symbolic dim (from a
        // dynamic reshape) that is 1 at run time broadcasts against the other operands.
        shape[d] = inferred;
      } else {
        LOOM_THROW(e->toString(), ": dimension ", d, " of ", out->toString(), " has extent ",
                   extent, " but its operands have size ", inferred);
      }
    }
    return shape;
  }

  /// Reads operand `v` (a tensor stretched to `shape`, or a scalar) element by element.
  struct Operand {
    const Buffer* buffer = nullptr;  // nullptr for a scalar
    double scalar = 0.0;
    int64_t int_scalar = 0;          // the scalar as an integer (exact for integer values)
    detail::Complex complex_scalar;  // the scalar as a complex number
    DataType dtype = DataType::Float64;
    int64_t intAt(size_t i) const { return buffer != nullptr ? buffer->intAt(i) : int_scalar; }
  };

  Operand operand(ir::Val* v, const ir::Expr* e) {
    Operand op;
    op.dtype = v->dtype();
    if (auto* tv = v->dynCast<TensorView>()) {
      op.buffer = &bufferOf(tv, e);
    } else {
      auto value = ee_.evaluate(v);
      LOOM_CHECK(value.has_value(), e->toString(), ": scalar ", v->toString(), " is not bound");
      op.scalar = detail::roundToDtype(detail::scalarToDouble(*value), v->dtype());
      op.int_scalar = isIntegralType(v->dtype()) ? detail::normalizeScalarInt(*value, v->dtype())
                                                 : detail::toInt64(op.scalar);
      op.complex_scalar = detail::roundComplex(detail::scalarToComplex(*value), v->dtype());
    }
    return op;
  }

  /// Runs fn(values) for every output element of a pointwise op and returns the results. With
  /// kComplex, the values and fn's result are complex numbers (ops on complex values).
  template <bool kComplex = false, typename Fn>
  Buffer pointwise(const ir::Expr* e, const TensorView* out, Fn&& fn) {
    std::vector<Operand> ops;
    for (ir::Val* in : e->inputs()) ops.push_back(operand(in, e));
    Buffer result{pointwiseShape(e, out), {}};
    result.data.resize(size_t(numelOf(result.shape)));
    std::vector<std::vector<int64_t>> strides;
    for (const Operand& op : ops) {
      std::vector<int64_t> s(result.shape.size(), 0);
      if (op.buffer != nullptr) {
        bool ok = stretchStrides(op.buffer->shape, result.shape, s);
        LOOM_ASSERT(ok, "operand shape [", join(op.buffer->shape), "] vs [", join(result.shape),
                    "] in ", e->toString());
      }
      strides.push_back(std::move(s));
    }
    using In = std::conditional_t<kComplex, detail::Complex, double>;
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
        const detail::Complex z = fn(vals);
        result.data[size_t(lin)] = z.real();
        result.imag[size_t(lin)] = z.imag();
      } else {
        result.data[size_t(lin)] = fn(vals);
      }
    });
    return result;
  }

  /// pointwise() in exact integer math: fn(values) on the operands as integers (integer tensors
  /// and scalars exactly), its results kept in `ints`.
  template <typename Fn>
  Buffer pointwiseInt(const ir::Expr* e, const TensorView* out, Fn&& fn) {
    std::vector<Operand> ops;
    for (ir::Val* in : e->inputs()) ops.push_back(operand(in, e));
    Buffer result{pointwiseShape(e, out), {}};
    result.data.resize(size_t(numelOf(result.shape)));
    result.ints.resize(result.data.size());
    std::vector<std::vector<int64_t>> strides;
    for (const Operand& op : ops) {
      std::vector<int64_t> s(result.shape.size(), 0);
      if (op.buffer != nullptr) {
        bool ok = stretchStrides(op.buffer->shape, result.shape, s);
        LOOM_ASSERT(ok, "operand shape [", join(op.buffer->shape), "] vs [", join(result.shape),
                    "] in ", e->toString());
      }
      strides.push_back(std::move(s));
    }
    std::vector<int64_t> vals(ops.size());
    forEachIndex(result.shape, strides, [&](int64_t lin, const std::vector<int64_t>& off) {
      for (size_t j = 0; j < ops.size(); ++j) vals[j] = ops[j].intAt(size_t(off[j]));
      result.ints[size_t(lin)] = fn(vals);
      result.data[size_t(lin)] = double(result.ints[size_t(lin)]);
    });
    return result;
  }

  /// A copy of `in` read through `strides` (and a start offset) into `shape`.
  static Buffer gather(const Buffer& in, const std::vector<int64_t>& shape,
                       const std::vector<int64_t>& strides) {
    Buffer out{shape, std::vector<double>(size_t(numelOf(shape)))};
    if (in.complex) out.makeComplex();
    forEachIndex(shape, {strides}, [&](int64_t lin, const std::vector<int64_t>& off) {
      out.copyElement(size_t(lin), in, size_t(off[0]));
    });
    return out;
  }

  void handle(ir::UnaryOp* e) override {
    auto* out = e->out()->as<TensorView>();
    DataType in_t = e->in()->dtype();
    DataType out_t = out->dtype();
    if (detail::usesComplexMath(in_t, out_t)) {
      define(out, pointwise<true>(e, out, [&](const std::vector<detail::Complex>& v) {
               return detail::applyComplexUnary(e->opType(), v[0], out_t, e);
             }));
      return;
    }
    if (detail::usesIntegerMath(e->opType(), in_t, out_t)) {
      define(out, pointwiseInt(e, out, [&](const std::vector<int64_t>& v) {
               return detail::wrapToDtype(detail::intUnary(e->opType(), v[0], e), out_t);
             }));
      return;
    }
    define(out, pointwise(e, out, [&](const std::vector<double>& v) {
             return detail::applyUnary(e->opType(), v[0], in_t, out_t, e);
           }));
  }

  void handle(ir::BinaryOp* e) override {
    auto* out = e->out()->as<TensorView>();
    DataType l = e->lhs()->dtype();
    DataType r = e->rhs()->dtype();
    DataType out_t = out->dtype();
    if (detail::usesComplexMath(l, r, out_t)) {
      define(out, pointwise<true>(e, out, [&](const std::vector<detail::Complex>& v) {
               return detail::applyComplexBinary(e->opType(), v[0], v[1], out_t);
             }));
      return;
    }
    if (detail::usesIntegerMath(e->opType(), l, r, out_t) && !isFloatingType(l) &&
        !isFloatingType(r)) {
      define(out, pointwiseInt(e, out, [&](const std::vector<int64_t>& v) {
               return detail::wrapToDtype(detail::intBinary(e->opType(), v[0], v[1], out_t), out_t);
             }));
      return;
    }
    define(out, pointwise(e, out, [&](const std::vector<double>& v) {
             return detail::applyBinary(e->opType(), v[0], v[1], l, r, out_t);
           }));
  }

  void handle(ir::TernaryOp* e) override {
    auto* out = e->out()->as<TensorView>();
    DataType out_t = out->dtype();
    if (isComplexType(out_t)) {  // where (ir::verify): the condition's real part selects
      LOOM_CHECK(e->opType() == ir::TernaryOpType::Where, e->toString(),
                 ": only where is defined for complex values");
      define(out, pointwise<true>(e, out, [&](const std::vector<detail::Complex>& v) {
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
               return std::min(std::max(v[0], v[1]), v[2]);
             }));
      return;
    }
    define(out, pointwise(e, out, [&](const std::vector<double>& v) {
             return detail::applyTernary(e->opType(), v[0], v[1], v[2], out_t);
           }));
  }

  void handle(ir::ReductionOp* e) override {
    const Buffer& in = bufferOf(e->in(), e);
    ReductionSpace space(e, e->out(), e->in(), in.shape, ee_);
    Buffer result{space.outShape(), {}};
    // The init, the input and the output have one dtype (ir::verify); the init as a kernel holds
    // it, rounded to that dtype.
    if (isComplexType(e->out()->dtype())) {
      defineComplexReduction(e, in, space);
      return;
    }
    if (isIntegralType(e->out()->dtype())) {
      defineIntReduction(e, in, space);
      return;
    }
    const double init = detail::roundToDtype(ee_.evaluateDouble(e->init()), e->init()->dtype());
    result.data.assign(size_t(numelOf(result.shape)), init);
    ir::ReductionOpType op = e->opType();
    space.forEach({rowMajorStrides(in.shape)}, [&](int64_t o, const std::vector<int64_t>& i) {
      double& acc = result.data[size_t(o)];
      double x = in.data[size_t(i[0])];
      switch (op) {
        case ir::ReductionOpType::Sum: acc += x; break;
        case ir::ReductionOpType::Prod: acc *= x; break;
        case ir::ReductionOpType::Max: acc = detail::floatBinary(ir::BinaryOpType::Max, acc, x); break;
        case ir::ReductionOpType::Min: acc = detail::floatBinary(ir::BinaryOpType::Min, acc, x); break;
      }
    });
    define(e->out(), std::move(result));
  }

  /// A reduction of integers, exact in int64 and wrapping as the kernels' accumulators do (the
  /// output's width applied by define()).
  void defineIntReduction(ir::ReductionOp* e, const Buffer& in, ReductionSpace& space) {
    auto init = ee_.evaluate(e->init());
    LOOM_CHECK(init.has_value(), e->toString(), ": the init is not bound");
    Buffer result{space.outShape(), {}};
    result.ints.assign(size_t(numelOf(result.shape)),
                       detail::normalizeScalarInt(*init, e->init()->dtype()));
    result.data.resize(result.ints.size());
    const ir::BinaryOpType op = e->opType() == ir::ReductionOpType::Sum    ? ir::BinaryOpType::Add
                                : e->opType() == ir::ReductionOpType::Prod ? ir::BinaryOpType::Mul
                                : e->opType() == ir::ReductionOpType::Max  ? ir::BinaryOpType::Max
                                                                           : ir::BinaryOpType::Min;
    space.forEach({rowMajorStrides(in.shape)}, [&](int64_t o, const std::vector<int64_t>& i) {
      int64_t& acc = result.ints[size_t(o)];
      acc = detail::intBinary(op, acc, in.intAt(size_t(i[0])));
    });
    define(e->out(), std::move(result));
  }

  /// A sum or product of complex values (ir::verify admits no other complex reduction).
  void defineComplexReduction(ir::ReductionOp* e, const Buffer& in, ReductionSpace& space) {
    auto init = ee_.evaluate(e->init());
    LOOM_CHECK(init.has_value(), e->toString(), ": the init is not bound");
    const detail::Complex init_value =
        detail::roundComplex(detail::scalarToComplex(*init), e->init()->dtype());
    std::vector<detail::Complex> acc(size_t(numelOf(space.outShape())), init_value);
    const ir::ReductionOpType op = e->opType();
    LOOM_CHECK(op == ir::ReductionOpType::Sum || op == ir::ReductionOpType::Prod, e->toString(),
               ": only sum and prod are defined for complex values");
    space.forEach({rowMajorStrides(in.shape)}, [&](int64_t o, const std::vector<int64_t>& i) {
      const detail::Complex x = in.at(size_t(i[0]));
      if (op == ir::ReductionOpType::Sum) {
        acc[size_t(o)] += x;
      } else {
        acc[size_t(o)] *= x;
      }
    });
    Buffer result{space.outShape(), {}};
    result.complex = true;
    for (const detail::Complex& z : acc) {
      result.data.push_back(z.real());
      result.imag.push_back(z.imag());
    }
    define(e->out(), std::move(result));
  }

  // Each row along the scan dim runs from the op's identity, in double; define() rounds every
  // prefix to the output dtype.
  void handle(ir::ScanOp* e) override {
    const Buffer& in = bufferOf(e->in(), e);
    Buffer out{in.shape, std::vector<double>(in.data.size())};
    const auto d = size_t(e->dim());
    LOOM_ASSERT(d < in.shape.size(), e->toString(), ": scan dim out of range");
    int64_t outer = 1, inner = 1;
    for (size_t k = 0; k < d; ++k) outer *= in.shape[k];
    for (size_t k = d + 1; k < in.shape.size(); ++k) inner *= in.shape[k];
    const int64_t len = in.shape[d];
    const ir::ReductionOpType op = e->opType();
    const double identity = op == ir::ReductionOpType::Sum    ? 0.0
                            : op == ir::ReductionOpType::Prod ? 1.0
                            : op == ir::ReductionOpType::Max  ? -HUGE_VAL
                                                              : HUGE_VAL;
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        double acc = identity;
        for (int64_t k = 0; k < len; ++k) {
          const auto at = size_t((o * len + k) * inner + i);
          const double x = in.data[at];
          switch (op) {
            case ir::ReductionOpType::Sum: acc += x; break;
            case ir::ReductionOpType::Prod: acc *= x; break;
            case ir::ReductionOpType::Max:
              acc = detail::floatBinary(ir::BinaryOpType::Max, acc, x);
              break;
            case ir::ReductionOpType::Min:
              acc = detail::floatBinary(ir::BinaryOpType::Min, acc, x);
              break;
          }
          out.data[at] = acc;
        }
      }
    }
    define(e->out(), std::move(out));
  }

  /// The Welford output that shows the reduction best: the first one that still has Reduction
  /// IDs (clearReductionIterDomains may have removed them from some siblings).
  static const TensorView* welfordReference(const ir::WelfordOp* e) {
    for (const TensorView* tv : {e->outAvg(), e->outM2(), e->outN()}) {
      if (tv->domain()->hasReduction()) return tv;
    }
    return e->outAvg();
  }

  void handle(ir::WelfordOp* e) override {
    auto* avg_in = e->inAvg()->dynCast<TensorView>();
    LOOM_CHECK(avg_in != nullptr, e->toString(), ": the avg input must be a tensor");
    const Buffer& x = bufferOf(avg_in, e);
    ReductionSpace space(e, welfordReference(e), avg_in, x.shape, ee_);
    const std::vector<int64_t>& out_shape = space.outShape();
    size_t n_out = size_t(numelOf(out_shape));
    auto x_strides = rowMajorStrides(x.shape);
    Welford init{ee_.evaluateDouble(e->initAvg()), ee_.evaluateDouble(e->initM2()),
                 ee_.evaluateDouble(e->initN())};
    std::vector<Welford> acc(n_out);

    if (e->hasRawInput()) {
      // Two passes in double (mean, then squared deviations with a compensation term), which is
      // stable for data with a large offset, e.g. 1e6 + small noise. Masked points (padding of
      // a non-divisible split) are not visited, so they do not count.
      std::vector<double> sum(n_out, 0.0), count(n_out, 0.0), dev(n_out, 0.0);
      space.forEach({x_strides}, [&](int64_t o, const std::vector<int64_t>& i) {
        sum[size_t(o)] += x.data[size_t(i[0])];
        count[size_t(o)] += 1.0;
      });
      for (size_t i = 0; i < n_out; ++i) acc[i].avg = count[i] > 0 ? sum[i] / count[i] : 0.0;
      space.forEach({x_strides}, [&](int64_t o, const std::vector<int64_t>& i) {
        double d = x.data[size_t(i[0])] - acc[size_t(o)].avg;
        acc[size_t(o)].m2 += d * d;
        dev[size_t(o)] += d;
      });
      for (size_t i = 0; i < n_out; ++i) {
        acc[i].n = count[i];
        if (count[i] > 0) acc[i].m2 -= dev[i] * dev[i] / count[i];
        Welford w = init;
        w.combine(acc[i].avg, acc[i].m2, acc[i].n);
        acc[i] = w;
      }
    } else {
      Operand m2 = operand(e->inM2(), e);
      Operand n = operand(e->inN(), e);
      std::vector<int64_t> m2_strides(x.shape.size(), 0), n_strides(x.shape.size(), 0);
      auto strideOf = [&](const Operand& op, std::vector<int64_t>& s, ir::Val* v) {
        if (op.buffer == nullptr) return;
        LOOM_CHECK(stretchStrides(op.buffer->shape, x.shape, s), e->toString(), ": ",
                   v->toString(), " has shape [", join(op.buffer->shape), "], avg has [",
                   join(x.shape), "]");
      };
      strideOf(m2, m2_strides, e->inM2());
      strideOf(n, n_strides, e->inN());
      std::fill(acc.begin(), acc.end(), init);
      space.forEach({x_strides, m2_strides, n_strides},
                    [&](int64_t o, const std::vector<int64_t>& i) {
                      double m2v = m2.buffer ? m2.buffer->data[size_t(i[1])] : m2.scalar;
                      double nv = n.buffer ? n.buffer->data[size_t(i[2])] : n.scalar;
                      acc[size_t(o)].combine(x.data[size_t(i[0])], m2v, nv);
                    });
    }
    Buffer avg{out_shape, {}}, m2{out_shape, {}}, count{out_shape, {}};
    for (const Welford& w : acc) {
      avg.data.push_back(w.avg);
      m2.data.push_back(w.m2);
      count.data.push_back(w.n);
    }
    define(e->outAvg(), std::move(avg));
    define(e->outM2(), std::move(m2));
    define(e->outN(), std::move(count));
  }

  void handle(ir::BroadcastOp* e) override {
    const Buffer& in = bufferOf(e->in(), e);
    const auto& flags = e->isBroadcastDim();
    auto out_ids = ir::TensorDomain::noReductions(e->out()->logical());
    LOOM_CHECK(flags.size() == out_ids.size(), e->toString(), ": ", flags.size(),
               " broadcast flags for ", out_ids.size(), " output dims");
    std::vector<int64_t> aligned, shape;
    size_t k = 0;
    for (size_t d = 0; d < flags.size(); ++d) {
      if (flags[d]) {
        aligned.push_back(1);
        auto known = ee_.evaluate(out_ids[d]->logicalExtent());
        shape.push_back(known ? detail::scalarToInt(*known) : 1);
      } else {
        LOOM_CHECK(k < in.shape.size(), e->toString(), ": more kept dims than input dims");
        aligned.push_back(in.shape[k]);
        shape.push_back(in.shape[k++]);
      }
    }
    LOOM_CHECK(k == in.shape.size(), e->toString(), ": ", k, " kept dims for an input of rank ",
               in.shape.size());
    std::vector<int64_t> strides;
    LOOM_ASSERT(stretchStrides(aligned, shape, strides), "broadcast shapes");
    define(e->out(), gather(in, shape, strides));
  }

  void handle(ir::SqueezeOp* e) override {
    const Buffer& in = bufferOf(e->in(), e);
    const auto& flags = e->isSqueezedDim();
    auto in_ids = ir::TensorDomain::noReductions(e->in()->logical());
    LOOM_CHECK(flags.size() == in.shape.size(), e->toString(), ": ", flags.size(),
               " squeeze flags for an input of rank ", in.shape.size());
    auto in_strides = rowMajorStrides(in.shape);
    std::vector<int64_t> shape, strides;
    for (size_t d = 0; d < flags.size(); ++d) {
      if (!flags[d]) {
        shape.push_back(in.shape[d]);
        strides.push_back(in_strides[d]);
        continue;
      }
      // An expanded broadcast holds one value repeated, so squeezing reads index 0.
      bool expanded = d < in_ids.size() && in_ids[d]->isBroadcast();
      LOOM_CHECK(in.shape[d] == 1 || expanded, e->toString(), ": cannot squeeze dimension ", d,
                 " of ", e->in()->toString(), " with size ", in.shape[d]);
    }
    define(e->out(), gather(in, shape, strides));
  }

  void handle(ir::ExpandOp* e) override {
    const Buffer& in = bufferOf(e->in(), e);
    std::vector<int64_t> shape = ee_.logicalSizes(e->out());
    std::vector<int64_t> strides;
    LOOM_CHECK(stretchStrides(in.shape, shape, strides), e->toString(), ": cannot expand [",
               join(in.shape), "] to [", join(shape), "]");
    define(e->out(), gather(in, shape, strides));
  }

  void handle(ir::ReshapeOp* e) override {
    // The dense row-major buffer reinterpreted with the new shape is the row-major reshape (a
    // dynamic reshape runs the same way, with the sizes bound now).
    Buffer b = bufferOf(e->in(), e);
    std::vector<int64_t> shape = checkedSizes(e, e->out(), "requested size");
    LOOM_CHECK(numelOf(shape) == numelOf(b.shape), "reshape: cannot reshape ", e->in()->toString(),
               " of shape [", join(b.shape), "] (", numelOf(b.shape), " elements) to shape [",
               join(shape), "] (", numelOf(shape), " elements) in ", e->toString());
    b.shape = std::move(shape);
    define(e->out(), std::move(b));
  }

  /// The logical sizes of `tv` (the output of `e`), each a UserError when negative.
  std::vector<int64_t> checkedSizes(const ir::Expr* e, const TensorView* tv, const char* what) {
    std::vector<int64_t> shape = ee_.logicalSizes(tv);
    for (size_t d = 0; d < shape.size(); ++d) {
      LOOM_CHECK(shape[d] >= 0, e->opName(), ": ", tv->toString(), " would have the negative ",
                 what, " ", shape[d], " at dimension ", d, " (sizes [", join(shape), "]) in ",
                 e->toString());
    }
    return shape;
  }

  /// For each logical dim of a slice or pad output (reductions skipped): the Resize's left width
  /// (0 for a dim that is its root ID) and the input dim's size.
  struct ResizedDims {
    std::vector<int64_t> left;
    std::vector<int64_t> in_size;
  };
  ResizedDims resizedDims(const ir::Expr* e, const TensorView* out, const Buffer& in) {
    const auto& root = out->root();
    auto logical = ir::TensorDomain::noReductions(out->logical());
    LOOM_CHECK(root.size() == in.shape.size() && logical.size() == root.size(), e->toString(),
               ": the output's root does not mirror the input [", join(in.shape), "]");
    ResizedDims r;
    for (size_t d = 0; d < logical.size(); ++d) {
      const ir::IterDomain* id = logical[d];
      r.in_size.push_back(in.shape[d]);
      if (id == root[d]) {
        r.left.push_back(0);
        continue;
      }
      auto* resize =
          id->definition() != nullptr ? id->definition()->dynCast<ir::Resize>() : nullptr;
      LOOM_CHECK(resize != nullptr && resize->in() == root[d], e->toString(), ": logical ",
                 id->toString(), " of ", out->toString(), " is neither root ID ",
                 root[d]->toString(), " nor a Resize of it");
      r.left.push_back(ee_.evaluateInt(resize->left()));
    }
    return r;
  }

  void handle(ir::SliceOp* e) override {
    const Buffer& in = bufferOf(e->in(), e);
    std::vector<int64_t> shape = checkedSizes(e, e->out(), "size");
    ResizedDims r = resizedDims(e, e->out(), in);
    auto strides = rowMajorStrides(in.shape);
    int64_t base = 0;
    for (size_t d = 0; d < shape.size(); ++d) {
      int64_t start = -r.left[d];
      LOOM_CHECK(start >= 0 && start + shape[d] <= r.in_size[d], "slice: dimension ", d, " of ",
                 e->out()->toString(), " reads [", start, ", ", start + shape[d], ") of ",
                 e->in()->toString(), ", whose size there is ", r.in_size[d], " (", e->toString(),
                 ")");
      base += start * strides[d];
    }
    Buffer out{shape, std::vector<double>(size_t(numelOf(shape)))};
    if (in.complex) out.makeComplex();
    forEachIndex(shape, {strides}, [&](int64_t lin, const std::vector<int64_t>& off) {
      out.copyElement(size_t(lin), in, size_t(base + off[0]));
    });
    define(e->out(), std::move(out));
  }

  void handle(ir::PadOp* e) override {
    const Buffer& in = bufferOf(e->in(), e);
    std::vector<int64_t> shape = checkedSizes(e, e->out(), "size");
    ResizedDims r = resizedDims(e, e->out(), in);
    const Operand value_op = operand(e->value(), e);
    const double value = value_op.scalar;
    auto in_strides = rowMajorStrides(in.shape);
    Buffer out{shape, std::vector<double>(size_t(numelOf(shape)), value)};
    if (in.complex) out.makeComplex(value_op.complex_scalar.imag());
    if (!in.ints.empty()) out.ints.assign(out.data.size(), value_op.int_scalar);
    std::vector<int64_t> idx(shape.size(), 0);
    for (size_t lin = 0; lin < out.data.size(); ++lin) {
      int64_t src = 0;
      bool inside = true;
      for (size_t d = 0; d < shape.size() && inside; ++d) {
        int64_t i = idx[d] - r.left[d];
        inside = i >= 0 && i < r.in_size[d];
        src += i * in_strides[d];
      }
      if (inside) out.copyElement(lin, in, size_t(src));
      for (size_t d = shape.size(); d-- > 0;) {
        if (++idx[d] < shape[d]) break;
        idx[d] = 0;
      }
    }
    define(e->out(), std::move(out));
  }

  void handle(ir::CatOp* e) override {
    const TensorView* out = e->out();
    std::vector<int64_t> shape = checkedSizes(e, out, "size");
    const auto dim = size_t(e->dim());
    LOOM_CHECK(dim < shape.size(), e->toString(), ": dim ", dim, " is out of range for ",
               out->toString(), " of rank ", shape.size());
    // Input k covers [begin[k], begin[k] + size[k]) along dim.
    std::vector<int64_t> begin, size;
    int64_t next = 0;
    for (size_t k = 0; k < e->numInputs(); ++k) {
      const ir::Resize* resize = e->inputResize(k);
      LOOM_CHECK(resize != nullptr, e->toString(), ": input ", e->in(k)->toString(),
                 " is not padded along dimension ", dim,
                 " (a CatOp reads each input's range "
                 "from the Resize of its PadOp)");
      const auto* pad = e->in(k)->definition();
      const TensorView* orig =
          pad != nullptr && pad->isA<ir::PadOp>() ? pad->as<ir::PadOp>()->in() : e->in(k);
      const Buffer& b = bufferOf(e->in(k), e);
      LOOM_CHECK(b.shape.size() == shape.size(), e->toString(), ": input ", e->in(k)->toString(),
                 " has rank ", b.shape.size(), " but ", out->toString(), " has rank ",
                 shape.size());
      for (size_t d = 0; d < shape.size(); ++d) {
        LOOM_CHECK(b.shape[d] == shape[d], "cat: input ", k, " (", orig->toString(), ") has size ",
                   d == dim ? "(padded) " : "", b.shape[d], " at dimension ", d, " but ",
                   out->toString(), " has size ", shape[d],
                   d == dim ? "" : " there; only the cat dimension may differ", " (", e->toString(),
                   ")");
      }
      begin.push_back(ee_.evaluateInt(resize->left()));
      size.push_back(ee_.extentOf(resize->in(), e->in(k)));
      LOOM_CHECK(begin.back() == next, e->toString(), ": input ", k, " starts at ", begin.back(),
                 " along dimension ", dim, " but the inputs before it end at ", next);
      next += size.back();
    }
    LOOM_CHECK(next == shape[dim], e->toString(), ": the inputs cover ", next,
               " elements along dimension ", dim, " but ", out->toString(), " has ", shape[dim]);
    // which[i]: the input that holds output index i along dim.
    std::vector<size_t> which(static_cast<size_t>(shape[dim]), 0);
    for (size_t k = 0; k < begin.size(); ++k) {
      for (int64_t i = begin[k]; i < begin[k] + size[k]; ++i) which[size_t(i)] = k;
    }
    std::vector<const Buffer*> ins;
    for (size_t k = 0; k < e->numInputs(); ++k) ins.push_back(&bufferOf(e->in(k), e));
    Buffer result{shape, std::vector<double>(size_t(numelOf(shape)))};
    if (isComplexType(out->dtype())) result.makeComplex();
    const int64_t dim_stride = rowMajorStrides(shape)[dim];
    for (size_t lin = 0; lin < result.data.size(); ++lin) {
      auto i = size_t((int64_t(lin) / dim_stride) % shape[dim]);
      result.copyElement(lin, *ins[which[i]], lin);
    }
    define(out, std::move(result));
  }

  void handle(ir::FullOp* e) override {
    std::vector<int64_t> shape = checkedSizes(e, e->out(), "size");
    const Operand value = operand(e->value(), e);
    Buffer b{shape, std::vector<double>(size_t(numelOf(shape)), value.scalar)};
    if (isComplexType(e->out()->dtype())) b.makeComplex(value.complex_scalar.imag());
    if (isIntegralType(e->out()->dtype())) b.ints.assign(b.data.size(), value.int_scalar);
    define(e->out(), std::move(b));
  }

  void handle(ir::IotaOp* e) override {
    std::vector<int64_t> shape = checkedSizes(e, e->out(), "length");
    LOOM_CHECK(shape.size() == 1, e->toString(), ": ", e->out()->toString(), " has rank ",
               shape.size(), "; iota makes 1-D tensors");
    const Operand start_op = operand(e->start(), e);
    const Operand step_op = operand(e->step(), e);
    double start = start_op.scalar;
    double step = step_op.scalar;
    // A device's shard of a longer iota starts at its index offset.
    const int64_t first = e->indexOffset() != nullptr ? ee_.evaluateInt(e->indexOffset()) : 0;
    Buffer b{shape, std::vector<double>(size_t(shape[0]))};
    for (int64_t i = 0; i < shape[0]; ++i) b.data[size_t(i)] = start + double(first + i) * step;
    if (isIntegralType(e->out()->dtype())) {  // start + i * step in int64, wrapping
      b.ints.resize(b.data.size());
      for (int64_t i = 0; i < shape[0]; ++i) {
        b.ints[size_t(i)] = detail::intBinary(
            ir::BinaryOpType::Add, start_op.int_scalar,
            detail::intBinary(ir::BinaryOpType::Mul, first + i, step_op.int_scalar));
      }
    }
    define(e->out(), std::move(b));
  }

  detail::DenseRef dense(const TensorView* tv, const ir::Expr* user) {
    const Buffer& b = bufferOf(tv, user);
    return {b.shape, b.data, tv->toString()};
  }

  void handle(ir::IndexSelectOp* e) override {
    std::vector<int64_t> shape = checkedSizes(e, e->out(), "size");
    std::vector<double> data = detail::indexSelect(dense(e->lookup(), e), dense(e->index(), e),
                                                   e->dim(), shape, e->opName());
    define(e->out(), Buffer{std::move(shape), std::move(data)});
  }

  void handle(ir::GatherOp* e) override {
    detail::DenseRef index = dense(e->index(), e);
    std::vector<double> data = detail::gather(dense(e->lookup(), e), index, e->dim(), e->opName());
    define(e->out(), Buffer{index.shape, std::move(data)});
  }

  void handle(ir::ScatterOp* e) override {
    detail::DenseRef self = dense(e->self(), e);
    std::vector<double> data = detail::scatter(self, dense(e->index(), e), dense(e->src(), e),
                                               e->dim(), e->accumulate(), e->opName());
    define(e->out(), Buffer{self.shape, std::move(data)});
  }

  // Sorts compare the elements as doubles (exact for every dtype but i64 values beyond 2^53).
  void handle(ir::ArgsortOp* e) override {
    const Buffer& in = bufferOf(e->in(), e);
    const int64_t n = in.shape.at(size_t(e->dim()));
    detail::SortedRows r = detail::sortRows(in.shape, in.data, e->dim(), e->descending(), n);
    define(e->out(), Buffer{std::move(r.shape), std::move(r.indices)});
  }

  void handle(ir::TopKOp* e) override {
    const Buffer& in = bufferOf(e->in(), e);
    const int64_t n = in.shape.at(size_t(e->dim()));
    const int64_t k = ee_.evaluateInt(e->k());
    LOOM_CHECK(k >= 0 && k <= n, "topk: k = ", k, " is outside [0, ", n,
               "], the size of dimension ", e->dim(), " of ", e->in()->toString());
    detail::SortedRows r = detail::sortRows(in.shape, in.data, e->dim(), e->largest(), k);
    define(e->values(), Buffer{r.shape, std::move(r.values)});
    define(e->indices(), Buffer{std::move(r.shape), std::move(r.indices)});
  }

  void handle(ir::RngOp* e) override {
    std::vector<int64_t> shape = checkedSizes(e, e->out(), "size");
    const auto seed = uint64_t(ee_.evaluateInt(e->seed()));
    const auto offset = uint64_t(ee_.evaluateInt(e->offset()));
    const double p0 = operand(e->param0(), e).scalar;
    const double p1 = operand(e->param1(), e).scalar;
    Buffer b{shape, std::vector<double>(size_t(numelOf(shape)))};
    std::vector<int64_t> offsets, global;  // a block of a larger draw (a device's shard)
    for (ir::Scalar* o : e->indexOffsets()) offsets.push_back(ee_.evaluateInt(o));
    for (ir::Scalar* g : e->globalExtents()) global.push_back(ee_.evaluateInt(g));
    for (size_t i = 0; i < b.data.size(); ++i) {
      const uint64_t index = e->hasIndexOffsets() ? rngBlockIndex(shape, offsets, global, i) : i;
      b.data[i] = rngSample(e->rngType(), e->out()->dtype(), seed, offset, index, p0, p1);
    }
    define(e->out(), std::move(b));
  }

  // Matmul and linear: each output element is its dot product over k, in double.
  void handleMatmul(ir::Expr* e) {
    std::vector<std::vector<int64_t>> sizes, strides;
    std::vector<const Buffer*> bufs;
    for (ir::Val* in : e->inputs()) {
      bufs.push_back(&bufferOf(in->as<TensorView>(), e));
      sizes.push_back(bufs.back()->shape);
      strides.push_back(rowMajorStrides(bufs.back()->shape));
    }
    const ir::MatmulGeometry g = ir::matmulGeometry(e, sizes, strides);
    Buffer b{g.outSizes, std::vector<double>(size_t(numelOf(g.outSizes)))};
    const ir::MatrixStrides c = g.denseOut();
    std::vector<int64_t> batch_shape = g.batch;
    forEachIndex(batch_shape, {g.a.batch, g.b.batch, c.batch},
                 [&](int64_t, const std::vector<int64_t>& off) {
                   for (int64_t i = 0; i < g.m; ++i) {
                     for (int64_t j = 0; j < g.n; ++j) {
                       double sum = g.hasBias ? bufs[2]->data[size_t(j * g.biasStride)] : 0.0;
                       for (int64_t p = 0; p < g.k; ++p) {
                         sum += bufs[0]->data[size_t(off[0] + i * g.a.row + p * g.a.col)] *
                                bufs[1]->data[size_t(off[1] + p * g.b.row + j * g.b.col)];
                       }
                       b.data[size_t(off[2] + i * c.row + j * c.col)] = sum;
                     }
                   }
                 });
    define(e->output(0)->as<TensorView>(), std::move(b));
  }
  // Attention is its composite (ops::sdpfaCompositeFusion): the node's tensors (already rounded
  // to their dtype) and Scalars run through that fusion here, so the node and the composite
  // cannot drift.
  void handleAttention(ir::Expr* e) {
    const size_t n = ir::attentionTensorInputs(e);
    std::vector<Argument> args;
    for (size_t i = 0; i < n; ++i) args.emplace_back(toTensor(e->input(i)));
    args.emplace_back(ee_.evaluateDouble(e->input(n)));
    args.emplace_back(ee_.evaluateInt(e->input(n + 1)) != 0);
    args.emplace_back(ee_.evaluateDouble(e->input(n + 2)));
    args.emplace_back(ee_.evaluateInt(e->input(n + 3)));
    args.emplace_back(ee_.evaluateInt(e->input(n + 4)));
    const double p = std::get<double>(args[n]);
    LOOM_CHECK(p >= 0.0 && p < 1.0, e->toString(), ": dropout_p must be in [0, 1), got ", p);
    const auto* q = e->input(e->isA<ir::SdpaFwdOp>() ? 0 : 1)->as<TensorView>();
    std::unique_ptr<ir::Fusion> composite = ops::sdpfaCompositeFusion(
        e->isA<ir::SdpaBwdOp>(), q->dtype(), int64_t(bufferOf(q, e).shape.size()));
    std::vector<Tensor> outs = Runner().run(*composite, args);
    for (size_t i = 0; i < outs.size(); ++i) {
      define(e->output(i)->as<TensorView>(), readTensor(outs[i]));
    }
  }
  void handle(ir::SdpaFwdOp* e) override { handleAttention(e); }
  void handle(ir::SdpaBwdOp* e) override { handleAttention(e); }

  void handle(ir::MatmulOp* e) override { handleMatmul(e); }
  void handle(ir::LinearOp* e) override { handleMatmul(e); }

  void handle(ir::LoadStoreOp* e) override {
    const Buffer& in = bufferOf(e->in(), e);
    const TensorView* out = e->out();
    if (!out->domain()->hasRoot()) {
      LOOM_CHECK(ir::TensorDomain::noReductions(out->logical()).size() == in.shape.size(),
                 e->toString(), ": rank changes without a root domain");
      define(out, in);
      return;
    }
    // Output logical dim i is root dim perm[i]; root dims follow the input's dims.
    const auto& root = out->root();
    auto logical = ir::TensorDomain::noReductions(out->logical());
    LOOM_CHECK(root.size() == in.shape.size() && logical.size() == root.size(), e->toString(),
               ": the output's root does not mirror the input");
    auto in_strides = rowMajorStrides(in.shape);
    std::vector<int64_t> shape, strides;
    for (const ir::IterDomain* id : logical) {
      auto it = std::find(root.begin(), root.end(), id);
      LOOM_CHECK(it != root.end(), e->toString(), ": logical ", id->toString(), " of ",
                 out->toString(), " is not a root ID; only permutations are supported");
      size_t p = size_t(it - root.begin());
      shape.push_back(in.shape[p]);
      strides.push_back(in_strides[p]);
    }
    define(out, gather(in, shape, strides));
  }

  void handle(ir::Split* /*e*/) override {}  // schedules do not change semantics
  void handle(ir::Merge* /*e*/) override {}
  void handle(ir::Resize* /*e*/) override {}  // read by SliceOp, PadOp and CatOp

  void handleDefault(ir::Expr* e) override {
    LOOM_THROW("the reference evaluator does not support ", e->toString());
  }

  ExpressionEvaluator ee_;
  std::unordered_map<const ir::Val*, Buffer> buffers_;
};

}  // namespace

std::vector<Tensor> evaluateFusion(const ir::Fusion& fusion, std::span<const Argument> inputs) {
  Runner runner;
  return runner.run(fusion, inputs);
}

}  // namespace loom::eval
