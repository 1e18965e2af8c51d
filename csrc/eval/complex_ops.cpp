// SPDX-License-Identifier: Apache-2.0
// Element semantics of the ops on complex values (see complex_ops.h).
#include "eval/complex_ops.h"

#include <cmath>

#include "eval/element_ops.h"
#include "loom/ir/base.h"
#include "loom/support/error.h"

namespace loom::eval::detail {
namespace {

using ir::BinaryOpType;
using ir::UnaryOpType;

Complex boolValue(bool b) { return {b ? 1.0 : 0.0, 0.0}; }

}  // namespace

bool usesComplexMath(DataType in, DataType out) { return isComplexType(in) || isComplexType(out); }

bool usesComplexMath(DataType lhs, DataType rhs, DataType out) {
  return isComplexType(lhs) || isComplexType(rhs) || isComplexType(out);
}

Complex roundComplex(Complex z, DataType dtype) {
  if (isComplexType(dtype)) {
    const DataType part = complexPartType(dtype);
    return {roundToDtype(z.real(), part), roundToDtype(z.imag(), part)};
  }
  return {roundToDtype(z.real(), dtype), 0.0};
}

Complex applyComplexUnary(UnaryOpType op, Complex x, DataType out, const ir::Expr* e) {
  Complex r;
  switch (op) {
    case UnaryOpType::Neg: r = -x; break;
    case UnaryOpType::Conj: r = std::conj(x); break;
    case UnaryOpType::Exp: r = std::exp(x); break;
    case UnaryOpType::Log: r = std::log(x); break;
    case UnaryOpType::Sqrt: r = std::sqrt(x); break;
    case UnaryOpType::Reciprocal: r = 1.0 / x; break;
    case UnaryOpType::Rsqrt: r = 1.0 / std::sqrt(x); break;
    case UnaryOpType::Sin: r = std::sin(x); break;
    case UnaryOpType::Cos: r = std::cos(x); break;
    case UnaryOpType::Tan: r = std::tan(x); break;
    case UnaryOpType::Sinh: r = std::sinh(x); break;
    case UnaryOpType::Cosh: r = std::cosh(x); break;
    case UnaryOpType::Tanh: r = std::tanh(x); break;
    case UnaryOpType::Asin: r = std::asin(x); break;
    case UnaryOpType::Acos: r = std::acos(x); break;
    case UnaryOpType::Atan: r = std::atan(x); break;
    case UnaryOpType::Asinh: r = std::asinh(x); break;
    case UnaryOpType::Acosh: r = std::acosh(x); break;
    case UnaryOpType::Atanh: r = std::atanh(x); break;
    case UnaryOpType::Log2: r = std::log(x) / std::log(2.0); break;
    case UnaryOpType::Log10: r = std::log10(x); break;
    case UnaryOpType::Sigmoid: {
      // NaN where e^-x has a NaN part or two infinite ones, as torch (and the kernels:
      // complex.cuh's cSigmoid).
      const Complex e = std::exp(-x);
      const bool undefined = std::isnan(e.real()) || std::isnan(e.imag()) ||
                             (std::isinf(e.real()) && std::isinf(e.imag()));
      r = undefined ? Complex(NAN, NAN) : 1.0 / (1.0 + e);
      break;
    }
    case UnaryOpType::Abs: r = std::hypot(x.real(), x.imag()); break;
    case UnaryOpType::Real: r = x.real(); break;
    case UnaryOpType::Imag: r = x.imag(); break;
    case UnaryOpType::IsNan: r = boolValue(std::isnan(x.real()) || std::isnan(x.imag())); break;
    case UnaryOpType::IsInf: r = boolValue(std::isinf(x.real()) || std::isinf(x.imag())); break;
    case UnaryOpType::IsFinite:
      r = boolValue(std::isfinite(x.real()) && std::isfinite(x.imag()));
      break;
    case UnaryOpType::IsReal: r = boolValue(x.imag() == 0.0); break;
    case UnaryOpType::Cast: r = x; break;  // real -> complex, or complex -> complex
    default:
      LOOM_THROW("the reference evaluator has no complex meaning for ", ir::opTypeName(op),
                 e != nullptr ? " in " + e->toString() : std::string());
  }
  return roundComplex(r, out);
}

Complex applyComplexBinary(BinaryOpType op, Complex a, Complex b, DataType out) {
  Complex r;
  switch (op) {
    case BinaryOpType::Add: r = a + b; break;
    case BinaryOpType::Sub: r = a - b; break;
    case BinaryOpType::Mul: r = a * b; break;
    case BinaryOpType::Div: r = a / b; break;
    case BinaryOpType::Eq: r = boolValue(a == b); break;
    case BinaryOpType::Ne: r = boolValue(a != b); break;
    default: LOOM_THROW("the reference evaluator has no complex meaning for ", ir::opTypeName(op));
  }
  return roundComplex(r, out);
}

Complex scalarToComplex(const ir::ScalarValue& v) {
  if (const auto* c = std::get_if<Complex>(&v)) return *c;
  return {scalarToDouble(v), 0.0};
}

}  // namespace loom::eval::detail
