// SPDX-License-Identifier: Apache-2.0
// loom._C.ops: one function per Loom op, taking the fusion first (the ops run under a FusionGuard
// of it; nothing is global) and Loom's argument forms. python/loom/direct/ops.py gives them
// nvFuser's names and keywords; docs/ops.md says what each op computes.
#include "loom/ops/ops.h"

#include <Python.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <string>
#include <tuple>

#include "bindings.h"
#include "convert.h"
#include "ir_helpers.h"
#include "loom/ir/builder.h"
#include "loom/ir/scalar.h"

namespace loom::python {

namespace {

using ir::Scalar;
using ir::TensorView;

/// The fusion an op builds in: not executed yet, and made current while the op runs.
class OpScope {
 public:
  OpScope(PyFusion& f, const char* op) : guard_(f.fusion.get()) {
    checkMutable(f.fusion.get(), op);
  }

 private:
  ir::FusionGuard guard_;
};

void checkOwned(const PyFusion& f, const ir::Val* v, const char* op, const char* arg) {
  LOOM_CHECK(v->fusion() == f.fusion.get(), op, ": argument ", arg, " (", v->toString(),
             ") belongs to another fusion");
}

ops::Operand operand(const PyFusion& f, nb::handle h, const char* op, const char* arg) {
  if (nb::isinstance<TensorView>(h)) {
    auto* tv = nb::cast<TensorView*>(h);
    checkOwned(f, tv, op, arg);
    return tv;
  }
  if (nb::isinstance<Scalar>(h)) {
    auto* s = nb::cast<Scalar*>(h);
    checkOwned(f, s, op, arg);
    return s;
  }
  ir::ScalarValue v = numberFromPython(h, std::string(op) + ": argument " + arg);
  if (const bool* b = std::get_if<bool>(&v)) return *b;
  if (const int64_t* i = std::get_if<int64_t>(&v)) return *i;
  if (const double* d = std::get_if<double>(&v)) return *d;
  if (const auto* c = std::get_if<std::complex<double>>(&v)) return *c;
  LOOM_CHECK_TYPE(false, op, ": argument ", arg,
                  " must be a TensorView, a Scalar or a Python number, got ", pyTypeName(h));
  LOOM_UNREACHABLE();
}

TensorView* tensor(const PyFusion& f, nb::handle h, const char* op, const char* arg) {
  LOOM_CHECK_TYPE(nb::isinstance<TensorView>(h), op, ": argument ", arg,
                  " must be a TensorView, got ", pyTypeName(h));
  auto* tv = nb::cast<TensorView*>(h);
  checkOwned(f, tv, op, arg);
  return tv;
}

/// A Python list of ints and integer Scalars.
ops::SizeList sizeList(const PyFusion& f, nb::handle h, const char* op, const char* arg) {
  std::vector<ops::Size> sizes;
  for (nb::handle e : h) {
    if (nb::isinstance<Scalar>(e)) {
      auto* s = nb::cast<Scalar*>(e);
      checkOwned(f, s, op, arg);
      sizes.emplace_back(s);
    } else {
      LOOM_CHECK_TYPE(PyLong_Check(e.ptr()) && !PyBool_Check(e.ptr()), op, ": every entry of ", arg,
                      " must be an int or an integer Scalar, got ", pyTypeName(e));
      sizes.emplace_back(
          int64FromPython(e, std::string(op) + ": " + arg + " entry", int64_t(sizes.size())));
    }
  }
  return ops::SizeList(std::move(sizes));
}

ops::Size size(const PyFusion& f, nb::handle h, const char* op, const char* arg) {
  if (nb::isinstance<Scalar>(h)) {
    auto* s = nb::cast<Scalar*>(h);
    checkOwned(f, s, op, arg);
    return ops::Size(s);
  }
  LOOM_CHECK_TYPE(PyLong_Check(h.ptr()) && !PyBool_Check(h.ptr()), op, ": ", arg,
                  " must be an int or an integer Scalar, got ", pyTypeName(h));
  return ops::Size(int64FromPython(h, std::string(op) + ": " + arg));
}

constexpr auto kKeep = nb::keep_alive<0, 1>();

template <TensorView* (*Op)(TensorView*)>
void defUnary(nb::module_& m, const char* name) {
  m.def(
      name,
      [name](PyFusion& f, nb::handle x) {
        OpScope scope(f, name);
        return Op(tensor(f, x, name, "x"));
      },
      kKeep, nb::rv_policy::reference);
}

template <TensorView* (*Op)(ops::Operand, ops::Operand)>
void defBinary(nb::module_& m, const char* name) {
  m.def(
      name,
      [name](PyFusion& f, nb::handle a, nb::handle b) {
        OpScope scope(f, name);
        ops::Operand x = operand(f, a, name, "a");
        ops::Operand y = operand(f, b, name, "b");
        LOOM_CHECK(x.isTensor() || y.isTensor(), name,
                   ": Loom's ops need a TensorView operand; arithmetic on Scalars alone is not "
                   "supported");
        return Op(x, y);
      },
      kKeep, nb::rv_policy::reference);
}

template <TensorView* (*Op)(ops::Operand, ops::Operand, ops::Operand)>
void defTernary(nb::module_& m, const char* name) {
  m.def(
      name,
      [name](PyFusion& f, nb::handle a, nb::handle b, nb::handle c) {
        OpScope scope(f, name);
        ops::Operand x = operand(f, a, name, "1");
        ops::Operand y = operand(f, b, name, "2");
        ops::Operand z = operand(f, c, name, "3");
        LOOM_CHECK(x.isTensor() || y.isTensor() || z.isTensor(), name,
                   ": Loom's ops need a TensorView operand; Scalars alone are not supported");
        return Op(x, y, z);
      },
      kKeep, nb::rv_policy::reference);
}

template <TensorView* (*Op)(TensorView*, const std::vector<int64_t>&, bool)>
void defReduction(nb::module_& m, const char* name) {
  m.def(
      name,
      [name](PyFusion& f, nb::handle x, const std::vector<int64_t>& axes, bool keepdim) {
        OpScope scope(f, name);
        return Op(tensor(f, x, name, "x"), axes, keepdim);
      },
      kKeep, nb::rv_policy::reference);
}

template <TensorView* (*Op)(TensorView*, std::optional<int64_t>, bool)>
void defArgReduction(nb::module_& m, const char* name) {
  m.def(
      name,
      [name](PyFusion& f, nb::handle x, std::optional<int64_t> dim, bool keepdim) {
        OpScope scope(f, name);
        return Op(tensor(f, x, name, "x"), dim, keepdim);
      },
      kKeep, nb::rv_policy::reference);
}

template <TensorView* (*Op)(TensorView*, int64_t)>
void defScan(nb::module_& m, const char* name) {
  m.def(
      name,
      [name](PyFusion& f, nb::handle x, int64_t dim) {
        OpScope scope(f, name);
        return Op(tensor(f, x, name, "x"), dim);
      },
      kKeep, nb::rv_policy::reference);
}

nb::object refOrNone(TensorView* tv, nb::handle fobj) {
  return tv == nullptr ? nb::none() : nb::object(nodeRef(tv, fobj));
}

ops::LossReduction lossReduction(const std::string& r, const char* op) {
  if (r == "mean") return ops::LossReduction::Mean;
  if (r == "sum") return ops::LossReduction::Sum;
  if (r == "none") return ops::LossReduction::None;
  LOOM_CHECK(false, op, ": reduction must be 'mean', 'sum' or 'none', got '", r, "'");
  LOOM_UNREACHABLE();
}

// Backward and loss composites (docs/ops.md, "Backward and loss composites").
void bindBackwardOps(nb::module_& m) {
  m.def(
      "softmax_backward",
      [](PyFusion& f, nb::handle g, nb::handle y, int64_t dim) {
        OpScope scope(f, "softmax_backward");
        return ops::softmaxBackward(tensor(f, g, "softmax_backward", "grad"),
                                    tensor(f, y, "softmax_backward", "y"), dim);
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "log_softmax_backward",
      [](PyFusion& f, nb::handle g, nb::handle y, int64_t dim) {
        OpScope scope(f, "log_softmax_backward");
        return ops::logSoftmaxBackward(tensor(f, g, "log_softmax_backward", "grad"),
                                       tensor(f, y, "log_softmax_backward", "y"), dim);
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "layer_norm_backward",
      [](nb::handle fobj, nb::handle g, nb::handle x, int64_t n, nb::handle mean, nb::handle rstd,
         nb::handle w, bool has_bias) {
        PyFusion& f = nb::cast<PyFusion&>(fobj);
        ops::NormBackwardResult r;
        {
          const char* op = "layer_norm_backward";
          OpScope scope(f, op);
          r = ops::layerNormBackward(tensor(f, g, op, "grad"), tensor(f, x, op, "x"), n,
                                     tensor(f, mean, op, "mean"), tensor(f, rstd, op, "rstd"),
                                     w.is_none() ? nullptr : tensor(f, w, op, "weight"), has_bias);
        }
        return nb::make_tuple(nodeRef(r.grad_input, fobj), refOrNone(r.grad_weight, fobj),
                              refOrNone(r.grad_bias, fobj));
      },
      nb::arg("fusion"), nb::arg("grad"), nb::arg("x"), nb::arg("normalized_ndims"),
      nb::arg("mean"), nb::arg("rstd"), nb::arg("weight").none(), nb::arg("has_bias"));
  m.def(
      "rms_norm_backward",
      [](nb::handle fobj, nb::handle g, nb::handle x, int64_t n, nb::handle w, double eps) {
        PyFusion& f = nb::cast<PyFusion&>(fobj);
        ops::NormBackwardResult r;
        {
          const char* op = "rms_norm_backward";
          OpScope scope(f, op);
          r = ops::rmsNormBackward(tensor(f, g, op, "grad"), tensor(f, x, op, "x"), n,
                                   w.is_none() ? nullptr : tensor(f, w, op, "weight"), eps);
        }
        return nb::make_tuple(nodeRef(r.grad_input, fobj), refOrNone(r.grad_weight, fobj));
      },
      nb::arg("fusion"), nb::arg("grad"), nb::arg("x"), nb::arg("normalized_ndims"),
      nb::arg("weight").none(), nb::arg("eps"));
  m.def(
      "gelu_backward",
      [](PyFusion& f, nb::handle g, nb::handle x, bool tanh_approximation) {
        OpScope scope(f, "gelu_backward");
        return ops::geluBackward(
            tensor(f, g, "gelu_backward", "grad"), tensor(f, x, "gelu_backward", "x"),
            tanh_approximation ? ops::GeluApproximation::Tanh : ops::GeluApproximation::None);
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "silu_backward",
      [](PyFusion& f, nb::handle g, nb::handle x) {
        OpScope scope(f, "silu_backward");
        return ops::siluBackward(tensor(f, g, "silu_backward", "grad"),
                                 tensor(f, x, "silu_backward", "x"));
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "cross_entropy",
      [](PyFusion& f, nb::handle x, nb::handle t, int64_t ignore_index,
         const std::string& reduction) {
        const char* op = "cross_entropy";
        OpScope scope(f, op);
        return ops::crossEntropy(tensor(f, x, op, "logits"), tensor(f, t, op, "target"),
                                 ignore_index, lossReduction(reduction, op));
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "cross_entropy_backward",
      [](PyFusion& f, nb::handle g, nb::handle x, nb::handle t, int64_t ignore_index,
         const std::string& reduction) {
        const char* op = "cross_entropy_backward";
        OpScope scope(f, op);
        return ops::crossEntropyBackward(tensor(f, g, op, "grad"), tensor(f, x, op, "logits"),
                                         tensor(f, t, op, "target"), ignore_index,
                                         lossReduction(reduction, op));
      },
      kKeep, nb::rv_policy::reference);
}

// Random numbers (docs/ops.md, "Random numbers"): seed and offset are ints or integer Scalars.
void bindRandomOps(nb::module_& m) {
  m.def(
      "uniform",
      [](PyFusion& f, nb::handle low, nb::handle high, nb::handle shape, nb::handle seed,
         nb::handle offset, DataType dtype) {
        OpScope scope(f, "uniform");
        return ops::uniform(sizeList(f, shape, "uniform", "shape"),
                            operand(f, low, "uniform", "minval"),
                            operand(f, high, "uniform", "maxval"),
                            operand(f, seed, "uniform", "rng_seed"),
                            operand(f, offset, "uniform", "rng_offset"), dtype);
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "normal",
      [](PyFusion& f, nb::handle mean, nb::handle std, nb::handle shape, nb::handle seed,
         nb::handle offset, DataType dtype) {
        OpScope scope(f, "normal");
        return ops::normal(sizeList(f, shape, "normal", "shape"),
                           operand(f, mean, "normal", "mean"), operand(f, std, "normal", "std"),
                           operand(f, seed, "normal", "rng_seed"),
                           operand(f, offset, "normal", "rng_offset"), dtype);
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "rand_like",
      [](PyFusion& f, nb::handle x, nb::handle seed, nb::handle offset) {
        OpScope scope(f, "rand_like");
        return ops::randLike(tensor(f, x, "rand_like", "arg"),
                             operand(f, seed, "rand_like", "rng_seed"),
                             operand(f, offset, "rand_like", "rng_offset"));
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "randn_like",
      [](PyFusion& f, nb::handle x, nb::handle seed, nb::handle offset) {
        OpScope scope(f, "randn_like");
        return ops::randnLike(tensor(f, x, "randn_like", "arg"),
                              operand(f, seed, "randn_like", "rng_seed"),
                              operand(f, offset, "randn_like", "rng_offset"));
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "bernoulli",
      [](PyFusion& f, nb::handle p, nb::handle seed, nb::handle offset) {
        OpScope scope(f, "bernoulli");
        return ops::bernoulli(tensor(f, p, "bernoulli", "arg"),
                              operand(f, seed, "bernoulli", "rng_seed"),
                              operand(f, offset, "bernoulli", "rng_offset"));
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "dropout",
      [](nb::handle fobj, nb::handle x, nb::handle p, nb::handle seed, nb::handle offset) {
        PyFusion& f = nb::cast<PyFusion&>(fobj);
        ops::DropoutResult r;
        {
          OpScope scope(f, "dropout");
          r = ops::dropout(tensor(f, x, "dropout", "arg"), operand(f, p, "dropout", "p"),
                           operand(f, seed, "dropout", "rng_seed"),
                           operand(f, offset, "dropout", "rng_offset"));
        }
        return nb::make_tuple(nodeRef(r.output, fobj), nodeRef(r.mask, fobj));
      },
      nb::arg("fusion"), nb::arg("arg"), nb::arg("p"), nb::arg("rng_seed"),
      nb::arg("rng_offset"));
}

// Sorting, select, tril, stride_order, segment_set and ceilDiv (issue 36).
void bindSortAndLayoutOps(nb::module_& m) {
  m.def(
      "argsort",
      [](PyFusion& f, nb::handle x, int64_t dim, bool descending) {
        OpScope scope(f, "argsort");
        return ops::argsort(tensor(f, x, "argsort", "arg"), dim, descending);
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "topk",
      [](nb::handle fobj, nb::handle x, nb::handle k, int64_t dim, bool largest) {
        PyFusion& f = nb::cast<PyFusion&>(fobj);
        ops::TopKResult r;
        {
          OpScope scope(f, "topk");
          r = ops::topk(tensor(f, x, "topk", "arg"), size(f, k, "topk", "k"), dim, largest);
        }
        return nb::make_tuple(nodeRef(r.values, fobj), nodeRef(r.indices, fobj));
      },
      nb::arg("fusion"), nb::arg("x"), nb::arg("k"), nb::arg("dim"), nb::arg("largest"));
  m.def(
      "select",
      [](PyFusion& f, nb::handle x, nb::handle index, int64_t dim) {
        OpScope scope(f, "select");
        return ops::select(tensor(f, x, "select", "arg"), dim, size(f, index, "select", "index"));
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "tril",
      [](PyFusion& f, nb::handle x, int64_t diagonal) {
        OpScope scope(f, "tril");
        return ops::tril(tensor(f, x, "tril", "arg"), diagonal);
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "stride_order",
      [](PyFusion& f, nb::handle x, nb::handle order) {
        OpScope scope(f, "stride_order");
        return ops::strideOrder(tensor(f, x, "stride_order", "arg"),
                                int64ListFromPython(order, "stride_order: stride_order"));
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "segment_set",
      [](PyFusion& f, nb::handle x) {
        OpScope scope(f, "segment_set");
        return ops::segmentSet(tensor(f, x, "segment_set", "arg"));
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "ceil_div",
      [](nb::handle fobj, nb::handle a, nb::handle b) -> nb::object {
        PyFusion& f = nb::cast<PyFusion&>(fobj);
        ir::Val* out = nullptr;
        {
          OpScope scope(f, "ceilDiv");
          ops::Operand x = operand(f, a, "ceilDiv", "lhs");
          ops::Operand y = operand(f, b, "ceilDiv", "rhs");
          out = x.isTensor() || y.isTensor() ? static_cast<ir::Val*>(ops::ceilDiv(x, y))
                                             : ops::scalarCeilDiv(x, y);
        }
        return nodeRef(out, fobj);
      },
      nb::arg("fusion"), nb::arg("lhs"), nb::arg("rhs"));
}

}  // namespace

void bindOps(nb::module_& parent) {
  nb::module_ m =
      parent.def_submodule("ops", "Loom's ops; loom.direct gives them nvFuser's names.");

  defUnary<&ops::neg>(m, "neg");
  defUnary<&ops::abs>(m, "abs");
  defUnary<&ops::exp>(m, "exp");
  defUnary<&ops::exp2>(m, "exp2");
  defUnary<&ops::log>(m, "log");
  defUnary<&ops::log2>(m, "log2");
  defUnary<&ops::sqrt>(m, "sqrt");
  defUnary<&ops::rsqrt>(m, "rsqrt");
  defUnary<&ops::reciprocal>(m, "reciprocal");
  defUnary<&ops::sin>(m, "sin");
  defUnary<&ops::cos>(m, "cos");
  defUnary<&ops::tanh>(m, "tanh");
  defUnary<&ops::sigmoid>(m, "sigmoid");
  defUnary<&ops::relu>(m, "relu");
  defUnary<&ops::silu>(m, "silu");
  defUnary<&ops::erf>(m, "erf");
  defUnary<&ops::floor>(m, "floor");
  defUnary<&ops::ceil>(m, "ceil");
  defUnary<&ops::round>(m, "round");
  defUnary<&ops::sign>(m, "sign");
  defUnary<&ops::isNan>(m, "isnan");
  defUnary<&ops::isInf>(m, "isinf");
  defUnary<&ops::logicalNot>(m, "logical_not");
  defUnary<&ops::set>(m, "set");
  m.def(
      "gelu",
      [](PyFusion& f, nb::handle x, bool tanh_approximation) {
        OpScope scope(f, "gelu");
        return ops::gelu(tensor(f, x, "gelu", "x"), tanh_approximation
                                                        ? ops::GeluApproximation::Tanh
                                                        : ops::GeluApproximation::None);
      },
      kKeep, nb::rv_policy::reference);

  defBinary<&ops::add>(m, "add");
  defBinary<&ops::sub>(m, "sub");
  defBinary<&ops::mul>(m, "mul");
  // nvFuser's div is C++'s operator / (integers truncate); truediv is true division.
  defBinary<&ops::cDiv>(m, "div");
  defBinary<&ops::div>(m, "truediv");
  defBinary<&ops::pow>(m, "pow");
  defBinary<&ops::fmod>(m, "fmod");
  defBinary<&ops::maximum>(m, "maximum");
  defBinary<&ops::minimum>(m, "minimum");
  defBinary<&ops::eq>(m, "eq");
  defBinary<&ops::ne>(m, "ne");
  defBinary<&ops::lt>(m, "lt");
  defBinary<&ops::le>(m, "le");
  defBinary<&ops::gt>(m, "gt");
  defBinary<&ops::ge>(m, "ge");
  defBinary<&ops::logicalAnd>(m, "logical_and");
  defBinary<&ops::logicalOr>(m, "logical_or");

  // Arithmetic on Scalars and numbers alone (fd.ops.<op> when no operand is a tensor).
  m.def(
      "scalar_binary",
      [](PyFusion& f, const std::string& name, nb::handle a, nb::handle b) {
        OpScope scope(f, name.c_str());
        // nvFuser's div truncates integers; truediv is the IR's Div (true division).
        if (name == "div") {
          return ops::scalarCDiv(operand(f, a, "div", "a"), operand(f, b, "div", "b"));
        }
        std::optional<ir::BinaryOpType> op =
            ir::parseBinaryOpType(name == "truediv" ? std::string("div") : name);
        LOOM_CHECK(op.has_value(), "fd.ops.", name, " has no scalar form");
        return ops::scalarBinary(*op, operand(f, a, name.c_str(), "a"),
                                 operand(f, b, name.c_str(), "b"));
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "scalar_unary",
      [](PyFusion& f, const std::string& name, nb::handle a) {
        OpScope scope(f, name.c_str());
        std::optional<ir::UnaryOpType> op = ir::parseUnaryOpType(name);
        LOOM_CHECK(op.has_value() && *op != ir::UnaryOpType::Cast, "fd.ops.", name,
                   " has no scalar form");
        return ops::scalarUnary(*op, operand(f, a, name.c_str(), "x"));
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "scalar_cast",
      [](PyFusion& f, nb::handle a, DataType dtype) {
        OpScope scope(f, "cast");
        return ops::scalarCast(operand(f, a, "cast", "x"), dtype);
      },
      kKeep, nb::rv_policy::reference);

  // nvFuser's further elementwise ops (issue 36).
  defUnary<&ops::acos>(m, "acos");
  defUnary<&ops::acosh>(m, "acosh");
  defUnary<&ops::asin>(m, "asin");
  defUnary<&ops::asinh>(m, "asinh");
  defUnary<&ops::atan>(m, "atan");
  defUnary<&ops::atanh>(m, "atanh");
  defUnary<&ops::cosh>(m, "cosh");
  defUnary<&ops::sinh>(m, "sinh");
  defUnary<&ops::tan>(m, "tan");
  defUnary<&ops::erfc>(m, "erfc");
  defUnary<&ops::erfinv>(m, "erfinv");
  defUnary<&ops::erfcinv>(m, "erfcinv");
  defUnary<&ops::expm1>(m, "expm1");
  defUnary<&ops::log10>(m, "log10");
  defUnary<&ops::log1p>(m, "log1p");
  defUnary<&ops::lgamma>(m, "lgamma");
  defUnary<&ops::trunc>(m, "trunc");
  defUnary<&ops::frac>(m, "frac");
  defUnary<&ops::signbit>(m, "signbit");
  defUnary<&ops::isFinite>(m, "isfinite");
  defUnary<&ops::isNegInf>(m, "isneginf");
  defUnary<&ops::isPosInf>(m, "isposinf");
  defUnary<&ops::isReal>(m, "isreal");
  defUnary<&ops::bitwiseNot>(m, "bitwise_not");
  // Complex numbers (issue 36).
  defUnary<&ops::real>(m, "real");
  defUnary<&ops::imag>(m, "imag");
  defUnary<&ops::conj>(m, "conj");
  defBinary<&ops::mod>(m, "mod");
  defBinary<&ops::remainder>(m, "remainder");
  defBinary<&ops::atan2>(m, "atan2");
  defBinary<&ops::nextafter>(m, "nextafter");
  defBinary<&ops::gcd>(m, "gcd");
  defBinary<&ops::bitwiseAnd>(m, "bitwise_and");
  defBinary<&ops::bitwiseOr>(m, "bitwise_or");
  defBinary<&ops::bitwiseXor>(m, "bitwise_xor");
  defBinary<&ops::bitwiseLeftShift>(m, "bitwise_left_shift");
  defBinary<&ops::bitwiseRightShift>(m, "bitwise_right_shift");
  defBinary<&ops::logicalRightShift>(m, "logical_right_shift");
  m.def(
      "addcmul",
      [](PyFusion& f, nb::handle a, nb::handle b, nb::handle c, nb::handle value) {
        OpScope scope(f, "addcmul");
        return ops::addcmul(operand(f, a, "addcmul", "1"), operand(f, b, "addcmul", "2"),
                            operand(f, c, "addcmul", "3"), operand(f, value, "addcmul", "value"));
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "threshold",
      [](PyFusion& f, nb::handle x, nb::handle th, nb::handle value) {
        OpScope scope(f, "threshold");
        return ops::threshold(tensor(f, x, "threshold", "x"), operand(f, th, "threshold", "2"),
                              operand(f, value, "threshold", "3"));
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "triu",
      [](PyFusion& f, nb::handle x, int64_t diagonal) {
        OpScope scope(f, "triu");
        return ops::triu(tensor(f, x, "triu", "x"), diagonal);
      },
      kKeep, nb::rv_policy::reference);

  defTernary<&ops::where>(m, "where");
  defTernary<&ops::clamp>(m, "clamp");
  defTernary<&ops::lerp>(m, "lerp");

  m.def(
      "cast",
      [](PyFusion& f, nb::handle x, DataType dtype) {
        OpScope scope(f, "cast");
        return ops::cast(tensor(f, x, "cast", "x"), dtype);
      },
      kKeep, nb::rv_policy::reference);

  defReduction<&ops::sum>(m, "sum");
  defReduction<&ops::prod>(m, "prod");
  defReduction<&ops::max>(m, "max");
  defReduction<&ops::min>(m, "min");
  defReduction<&ops::mean>(m, "mean");
  defArgReduction<&ops::argmax>(m, "argmax");
  defArgReduction<&ops::argmin>(m, "argmin");
  defScan<&ops::cumsum>(m, "cumsum");
  defScan<&ops::cumprod>(m, "cumprod");
  defScan<&ops::cummax>(m, "cummax");
  defScan<&ops::cummin>(m, "cummin");
  m.def(
      "variance",
      [](PyFusion& f, nb::handle x, const std::vector<int64_t>& axes, double correction,
         bool keepdim) {
        OpScope scope(f, "var");
        return ops::variance(tensor(f, x, "var", "x"), axes, correction, keepdim);
      },
      kKeep, nb::rv_policy::reference);
  m.def("var_mean", [](nb::handle fobj, nb::handle x, const std::vector<int64_t>& axes,
                       double correction, bool keepdim) {
    PyFusion& f = nb::cast<PyFusion&>(fobj);
    ops::VarMeanResult r;
    {
      OpScope scope(f, "var_mean");
      r = ops::varMean(tensor(f, x, "var_mean", "x"), axes, correction, keepdim);
    }
    return nb::make_tuple(nodeRef(r.var, fobj), nodeRef(r.mean, fobj));
  });
  m.def("welford", [](nb::handle fobj, nb::handle x, const std::vector<int64_t>& axes) {
    PyFusion& f = nb::cast<PyFusion&>(fobj);
    ops::WelfordResult r;
    {
      OpScope scope(f, "welford");
      r = ops::welford(tensor(f, x, "welford", "x"), axes);
    }
    return nb::make_tuple(nodeRef(r.avg, fobj), nodeRef(r.m2, fobj), nodeRef(r.n, fobj));
  });

  m.def(
      "broadcast",
      [](PyFusion& f, nb::handle x, const std::vector<bool>& is_broadcast_dim) {
        OpScope scope(f, "broadcast");
        return ops::broadcast(tensor(f, x, "broadcast", "x"), is_broadcast_dim);
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "broadcast_in_dim",
      [](PyFusion& f, nb::handle x, nb::handle shape, nb::handle broadcast_dims) {
        OpScope scope(f, "broadcast_in_dim");
        return ops::broadcastInDim(tensor(f, x, "broadcast_in_dim", "x"),
                                   int64ListFromPython(shape, "broadcast_in_dim: shape"),
                                   int64ListFromPython(broadcast_dims, "broadcast_in_dim: dims"));
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "squeeze",
      [](PyFusion& f, nb::handle x, const std::vector<int64_t>& dims, bool squeeze_expanded) {
        OpScope scope(f, "squeeze");
        return ops::squeeze(tensor(f, x, "squeeze", "x"), dims, squeeze_expanded);
      },
      nb::arg("fusion"), nb::arg("x"), nb::arg("dims"), nb::arg("squeeze_expanded") = false, kKeep,
      nb::rv_policy::reference);
  m.def(
      "unsqueeze",
      [](PyFusion& f, nb::handle x, int64_t dim) {
        OpScope scope(f, "unsqueeze");
        return ops::unsqueeze(tensor(f, x, "unsqueeze", "x"), dim);
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "expand",
      [](PyFusion& f, nb::handle x, nb::handle sizes) {
        OpScope scope(f, "expand");
        ops::SizeList s = sizeList(f, sizes, "expand", "shape");
        TensorView* in = tensor(f, x, "expand", "x");
        if (auto c = s.constants()) return ops::expand(in, *c);
        return ops::expand(in, s);
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "permute",
      [](PyFusion& f, nb::handle x, const std::vector<int64_t>& dims) {
        OpScope scope(f, "permute");
        return ops::permute(tensor(f, x, "permute", "x"), dims);
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "transpose",
      [](PyFusion& f, nb::handle x, int64_t dim0, int64_t dim1) {
        OpScope scope(f, "transpose");
        return ops::transpose(tensor(f, x, "transpose", "x"), dim0, dim1);
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "reshape",
      [](PyFusion& f, nb::handle x, nb::handle new_shape) {
        OpScope scope(f, "reshape");
        return ops::reshape(tensor(f, x, "reshape", "x"),
                            sizeList(f, new_shape, "reshape", "new_shape"));
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "slice",
      [](PyFusion& f, nb::handle x, nb::handle starts, nb::handle stops,
         const std::vector<int64_t>& steps) {
        OpScope scope(f, "slice");
        return ops::slice(tensor(f, x, "slice", "x"), sizeList(f, starts, "slice", "start_indices"),
                          sizeList(f, stops, "slice", "end_indices"), steps);
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "pad",
      [](PyFusion& f, nb::handle x, nb::handle widths, nb::handle value) {
        OpScope scope(f, "pad");
        TensorView* in = tensor(f, x, "pad", "x");
        ops::SizeList w = sizeList(f, widths, "pad", "pad_widths");
        if (value.is_none()) return ops::pad(in, w);
        return ops::pad(in, w, operand(f, value, "pad", "value"));
      },
      nb::arg("fusion"), nb::arg("x"), nb::arg("pad_widths"), nb::arg("value").none(), kKeep,
      nb::rv_policy::reference);
  m.def(
      "cat",
      [](PyFusion& f, nb::handle xs, int64_t dim) {
        OpScope scope(f, "cat");
        std::vector<TensorView*> tvs;
        for (nb::handle h : xs) tvs.push_back(tensor(f, h, "cat", "tensors"));
        return ops::cat(tvs, dim);
      },
      kKeep, nb::rv_policy::reference);

  m.def(
      "index_select",
      [](PyFusion& f, nb::handle x, nb::handle index, int64_t dim) {
        OpScope scope(f, "index_select");
        return ops::indexSelect(tensor(f, x, "index_select", "arg"), dim,
                                tensor(f, index, "index_select", "index"));
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "gather",
      [](PyFusion& f, nb::handle x, nb::handle index, int64_t dim, bool exact) {
        const char* op = exact ? "take_along_axis" : "gather";
        OpScope scope(f, op);
        TensorView* in = tensor(f, x, op, "arg");
        TensorView* idx = tensor(f, index, op, "index");
        return exact ? ops::takeAlongAxis(in, idx, dim) : ops::gather(in, dim, idx);
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "scatter",
      [](PyFusion& f, nb::handle x, nb::handle index, nb::handle src, int64_t dim, bool add) {
        const char* op = add ? "scatter_add" : "scatter";
        OpScope scope(f, op);
        TensorView* in = tensor(f, x, op, "arg");
        TensorView* idx = tensor(f, index, op, "index");
        TensorView* s = tensor(f, src, op, "src");
        return add ? ops::scatterAdd(in, dim, idx, s) : ops::scatter(in, dim, idx, s);
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "embedding",
      [](PyFusion& f, nb::handle input, nb::handle weight, std::optional<int64_t> padding_idx,
         std::optional<double> max_norm) {
        OpScope scope(f, "embedding_fwd");
        return ops::embedding(tensor(f, input, "embedding_fwd", "input"),
                              tensor(f, weight, "embedding_fwd", "weight"), padding_idx, max_norm);
      },
      kKeep, nb::rv_policy::reference);

  m.def(
      "full",
      [](PyFusion& f, nb::handle shape, nb::handle value, DataType dtype) {
        OpScope scope(f, "full");
        return ops::full(sizeList(f, shape, "full", "shape"),
                         operand(f, value, "full", "fill_value"), dtype);
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "iota",
      [](PyFusion& f, nb::handle length, nb::handle start, nb::handle step, DataType dtype) {
        OpScope scope(f, "iota");
        return ops::iota(size(f, length, "iota", "length"), operand(f, start, "iota", "start"),
                         operand(f, step, "iota", "step"), dtype);
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "arange",
      [](PyFusion& f, nb::handle start, nb::handle end, nb::handle step,
         std::optional<DataType> dtype) {
        OpScope scope(f, "arange");
        return ops::arange(operand(f, start, "arange", "start"), operand(f, end, "arange", "end"),
                           operand(f, step, "arange", "step"), dtype);
      },
      kKeep, nb::rv_policy::reference);

  m.def(
      "softmax",
      [](PyFusion& f, nb::handle x, int64_t dim) {
        OpScope scope(f, "softmax");
        return ops::softmax(tensor(f, x, "softmax", "x"), dim);
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "log_softmax",
      [](PyFusion& f, nb::handle x, int64_t dim) {
        OpScope scope(f, "log_softmax");
        return ops::logSoftmax(tensor(f, x, "log_softmax", "x"), dim);
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "layer_norm",
      [](nb::handle fobj, nb::handle x, int64_t normalized_ndims, nb::handle w, nb::handle b,
         double eps) {
        PyFusion& f = nb::cast<PyFusion&>(fobj);
        ops::LayerNormResult r;
        {
          OpScope scope(f, "layer_norm");
          r = ops::layerNorm(tensor(f, x, "layer_norm", "x"), normalized_ndims,
                             w.is_none() ? nullptr : tensor(f, w, "layer_norm", "weight"),
                             b.is_none() ? nullptr : tensor(f, b, "layer_norm", "bias"), eps);
        }
        return nb::make_tuple(nodeRef(r.y, fobj), nodeRef(r.mean, fobj), nodeRef(r.rstd, fobj));
      },
      nb::arg("fusion"), nb::arg("x"), nb::arg("normalized_ndims"), nb::arg("weight").none(),
      nb::arg("bias").none(), nb::arg("eps"));
  m.def(
      "rms_norm",
      [](PyFusion& f, nb::handle x, int64_t normalized_ndims, nb::handle w, double eps) {
        OpScope scope(f, "rms_norm");
        return ops::rmsNorm(tensor(f, x, "rms_norm", "x"), normalized_ndims,
                            tensor(f, w, "rms_norm", "weight"), eps);
      },
      kKeep, nb::rv_policy::reference);

  m.def(
      "matmul",
      [](PyFusion& f, nb::handle a, nb::handle b) {
        OpScope scope(f, "matmul");
        return ops::matmul(tensor(f, a, "matmul", "arg1"), tensor(f, b, "matmul", "arg2"));
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "linear",
      [](nb::handle fobj, nb::handle x, nb::handle w, nb::handle b) {
        PyFusion& f = nb::cast<PyFusion&>(fobj);
        ir::TensorView* out = nullptr;
        {
          OpScope scope(f, "linear");
          out = ops::linear(tensor(f, x, "linear", "arg1"), tensor(f, w, "linear", "arg2"),
                            b.is_none() ? nullptr : tensor(f, b, "linear", "bias"));
        }
        return nodeRef(out, fobj);
      },
      nb::arg("fusion"), nb::arg("arg1"), nb::arg("arg2"), nb::arg("bias").none());

  bindRandomOps(m);
  bindBackwardOps(m);

  // Inputs.
  m.def(
      "define_tensor",
      [](PyFusion& f, nb::handle shape, DataType dtype, const ir::Contiguity& contiguity,
         nb::handle stride_order) {
        OpScope scope(f, "define_tensor");
        ops::TensorBuilder b;
        b.shape(int64ListFromPython(shape, "define_tensor: shape")).dtype(dtype);
        if (!contiguity.empty()) b.contiguity(contiguity);
        std::vector<int64_t> order =
            int64ListFromPython(stride_order, "define_tensor: stride_order");
        if (!order.empty()) b.strideOrder(order);
        TensorView* tv = b.build();
        f.fusion->addInput(tv);
        return tv;
      },
      kKeep, nb::rv_policy::reference);
  m.def(
      "define_scalar",
      [](PyFusion& f, DataType dtype, nb::handle value) -> Scalar* {
        OpScope scope(f, "define_scalar");
        if (value.is_none()) {
          LOOM_CHECK(!isComplexType(dtype), "define_scalar: a ", dtype,
                     " scalar input is not supported (complex values cannot be given at run "
                     "time); give its value here (define_scalar(1+2j, dtype=...)), or define a "
                     "0-dim complex tensor");
          Scalar* s = ir::IrBuilder::symbolic(dtype);
          f.fusion->addInput(s);
          return s;
        }
        ir::ScalarValue v = numberFromPython(value, "define_scalar: value");
        LOOM_CHECK(!std::holds_alternative<std::monostate>(v),
                   "define_scalar: value must be a Python number or None, got ", pyTypeName(value));
        return ir::IrBuilder::constant(v, dtype);
      },
      nb::arg("fusion"), nb::arg("dtype"), nb::arg("value").none(), kKeep,
      nb::rv_policy::reference);

  bindSortAndLayoutOps(m);
}

}  // namespace loom::python
