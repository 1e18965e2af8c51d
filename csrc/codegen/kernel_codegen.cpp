// SPDX-License-Identifier: Apache-2.0
// Codegen: prints Kernel IR as CUDA C++ (see kernel_codegen.h).
#include "loom/codegen/kernel_codegen.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <optional>
#include <sstream>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "loom/codegen/runtime_library.h"
#include "loom/lower/kir_walk.h"
#include "loom/support/hash.h"

namespace loom::codegen {

std::string_view cTypeName(DataType dtype) {
  switch (dtype) {
    case DataType::Bool: return "bool";
    case DataType::Int32: return "int";
    case DataType::Int64: return "long long";
    case DataType::Float16: return "__half";
    case DataType::BFloat16: return "__nv_bfloat16";
    case DataType::Float32: return "float";
    case DataType::Float64: return "double";
    case DataType::ComplexFloat: return "loom::Complex<float>";
    case DataType::ComplexDouble: return "loom::Complex<double>";
    // NVRTC has no <cstdint>: the built-in types of each width.
    case DataType::Int8: return "signed char";
    case DataType::Int16: return "short";
    case DataType::UInt8: return "unsigned char";
    case DataType::UInt16: return "unsigned short";
    case DataType::UInt32: return "unsigned";
    case DataType::UInt64: return "unsigned long long";
    case DataType::Float8_e4m3fn: return "loom::Float8_e4m3fn";
    case DataType::Float8_e5m2: return "loom::Float8_e5m2";
  }
  LOOM_UNREACHABLE();
}

namespace {

// What the printing functions need to know about the kernel being generated, made once by
// generateKernel and passed down explicitly.
struct Writer {
  // The kernel's index type (Kernel::indexType): loop indices, index constants and Tensor
  // sizes/strides use it.
  DataType indexType = DataType::Int64;
  // Vars declared with the index type (loop indices and const index variables); every other Int64
  // Var is a long long.
  std::unordered_set<const kir::Var*> indexVars;
  // isLongLongData's answers: an expression may be tens of thousands deep, so each value is
  // decided once, bottom-up.
  mutable std::unordered_map<const kir::Value*, bool> longLong;
};

std::string indexTypeName(const Writer& wr) { return std::string(cTypeName(wr.indexType)); }

std::string constant(const Writer& wr, const kir::Const* c) {
  return scalarLiteral(c->dtype(), c->value, wr.indexType);
}

// True when `v` is Int64 data (a long long) in an Int32-index kernel, where Int64 index math is
// int: a load, a cast, an accumulator or scalar parameter, or math over one of those.
bool isLongLongData(const Writer& wr, const kir::Value* v) {
  if (wr.indexType != DataType::Int32 || v->dtype() != DataType::Int64) return false;
  if (auto it = wr.longLong.find(v); it != wr.longLong.end()) return it->second;
  std::unordered_map<const kir::Value*, bool>& memo = wr.longLong;
  for (const kir::Value* x : kir::postOrder(const_cast<kir::Value*>(v))) {
    if (memo.count(x) != 0) continue;
    bool r = false;
    if (wr.indexType == DataType::Int32 && x->dtype() == DataType::Int64) {
      switch (x->kind()) {
        case kir::NodeKind::Load: r = true; break;
        case kir::NodeKind::Var: r = wr.indexVars.count(x->as<kir::Var>()) == 0; break;
        case kir::NodeKind::UnaryExpr:
        case kir::NodeKind::BinaryExpr:
        case kir::NodeKind::TernaryExpr:
          r = x->isA<kir::UnaryExpr>() && x->as<kir::UnaryExpr>()->op == ir::UnaryOpType::Cast;
          for (const kir::Value* in : kir::operandsOf(x)) r = r || memo.at(in);
          break;
        default: break;  // constants (either), thread indices and tensor sizes (index type)
      }
    }
    memo[x] = r;
  }
  return memo.at(v);
}

// Expressions are written as pieces (kir::writePieces), so their depth costs no recursion.
using Piece = kir::TextPiece;
using Pieces = kir::TextPieces;

Piece lit(std::string text) { return {std::move(text), nullptr}; }
Piece arg(const kir::Value* v) { return {{}, v}; }

Pieces wrap(std::string before, Pieces inner, std::string after) {
  inner.insert(inner.begin(), lit(std::move(before)));
  inner.push_back(lit(std::move(after)));
  return inner;
}

// An operand of an op whose operands must agree in type (the runtime's loom_max(T, T),
// loom_ceil_div, the loom_fmod overloads): with `long_long` (another operand is Int64 data in an
// Int32-index kernel), an Int64 constant prints as long long instead of int.
Piece operand(const kir::Value* v, bool long_long) {
  auto* c = v->dynCast<kir::Const>();
  if (long_long && c != nullptr && c->dtype() == DataType::Int64) {
    return lit(scalarLiteral(DataType::Int64, c->value, DataType::Int64));
  }
  return arg(v);
}

// Fusion inputs are read through loom::loadInput/loadVectorInput and fusion outputs written through
// loom::storeOutput/storeVectorOutput, whose cache hints LOOM_INPUT_LOAD_HINT and
// LOOM_OUTPUT_STORE_HINT select when the kernel is compiled (runtime/types.cuh; plain accesses by
// default). A parameter that is both (an input forwarded as an output) and global intermediates
// stay plain: the read-only path must never see memory the kernel writes.
bool isHintedInput(const kir::Buffer* b) {
  return b->kind == kir::BufferKind::Param && b->isFusionInput && !b->isFusionOutput;
}
bool isHintedOutput(const kir::Buffer* b) {
  return b->kind == kir::BufferKind::Param && b->isFusionOutput && !b->isFusionInput;
}
// A bool parameter the caller filled: its bytes may be other than 0 and 1 (torch reads any
// non-zero byte as true), so it is read byte-wise (loom::loadBoolInput). Bools the kernel wrote
// itself are always 0 or 1.
bool isCallerBool(const kir::Buffer* b) {
  return b->kind == kir::BufferKind::Param && b->isFusionInput && b->dtype == DataType::Bool;
}

// A unary op whose operand or result is complex: the runtime's Complex math (complex.cuh).
Pieces complexUnary(const kir::UnaryExpr* u) {
  using Op = ir::UnaryOpType;
  const Piece x = arg(u->in);
  auto call = [&](const char* name) { return Pieces{lit(std::string(name) + "("), x, lit(")")}; };
  switch (u->op) {
    case Op::Neg: return {lit("(-"), x, lit(")")};
    case Op::Conj: return call("loom::cConj");
    case Op::Exp: return call("loom::cExp");
    case Op::Log: return call("loom::cLog");
    case Op::Sqrt: return call("loom::cSqrt");
    case Op::Reciprocal: return call("loom::cReciprocal");
    case Op::Rsqrt: return call("loom::cRsqrt");
    case Op::Sin: return call("loom::cSin");
    case Op::Cos: return call("loom::cCos");
    case Op::Tan: return call("loom::cTan");
    case Op::Sinh: return call("loom::cSinh");
    case Op::Cosh: return call("loom::cCosh");
    case Op::Tanh: return call("loom::cTanh");
    case Op::Asin: return call("loom::cAsin");
    case Op::Acos: return call("loom::cAcos");
    case Op::Atan: return call("loom::cAtan");
    case Op::Asinh: return call("loom::cAsinh");
    case Op::Acosh: return call("loom::cAcosh");
    case Op::Atanh: return call("loom::cAtanh");
    case Op::Log2: return call("loom::cLog2");
    case Op::Log10: return call("loom::cLog10");
    case Op::Sigmoid: return call("loom::cSigmoid");
    case Op::Abs: return call("loom::cAbs");
    case Op::Real: return call("loom::cReal");
    case Op::Imag: return call("loom::cImag");
    case Op::IsNan: return call("loom::cIsNan");
    case Op::IsInf: return call("loom::cIsInf");
    case Op::IsFinite: return call("loom::cIsFinite");
    case Op::IsReal: return call("loom::cIsReal");
    case Op::Cast: {
      // A real value becomes the real part (16-bit types widen to float first); complex types
      // convert part by part.
      const std::string type(cTypeName(u->dtype()));
      const std::string part(cTypeName(complexPartType(u->dtype())));
      if (isComplexType(u->in->dtype())) return wrap(type + "(", {x}, ")");
      return wrap(type + "(static_cast<" + part + ">(", {x}, "))");
    }
    default: break;
  }
  LOOM_UNREACHABLE("unary op ", ir::opTypeName(u->op), " on complex values (ir::verify)");
}

Pieces unary(const kir::UnaryExpr* u) {
  using Op = ir::UnaryOpType;
  if (isComplexType(u->in->dtype()) || isComplexType(u->dtype())) return complexUnary(u);
  const Piece x = arg(u->in);
  bool f32 = u->in->dtype() != DataType::Float64;
  auto fn = [&](std::string_view name) {
    return Pieces{lit(std::string(name) + (f32 ? "f(" : "(")), x, lit(")")};
  };
  const std::string type(cTypeName(u->dtype()));
  auto cast = [&](Pieces v) { return wrap("static_cast<" + type + ">(", std::move(v), ")"); };
  const bool float_in = isFloatingType(u->in->dtype());
  auto tmpl = [&](const char* name) {
    return Pieces{lit(std::string(name) + "<" + type + ">("), x, lit(")")};
  };
  switch (u->op) {
    // Integers negate in unsigned: -INT_MIN is undefined in C++, it wraps here (docs/ops.md).
    case Op::Neg: return float_in ? Pieces{lit("(-"), x, lit(")")} : tmpl("loom_wrap_neg");
    case Op::Abs: return isFloatingType(u->dtype()) ? fn("fabs") : tmpl("loom_wrap_abs");
    case Op::Reciprocal: return {lit(f32 ? "(1.0f / " : "(1.0 / "), x, lit(")")};
    // Rounding an integer (or bool) is the identity; the builtins take floating operands only.
    case Op::Floor: return isFloatingType(u->in->dtype()) ? fn("floor") : cast({x});
    case Op::Ceil: return isFloatingType(u->in->dtype()) ? fn("ceil") : cast({x});
    case Op::Sigmoid: return {lit("loom_sigmoid("), x, lit(")")};
    case Op::Silu: return {lit("loom_silu("), x, lit(")")};
    case Op::Round:
      return isFloatingType(u->in->dtype()) ? Pieces{lit("loom_round("), x, lit(")")} : cast({x});
    case Op::Sign: return {lit("loom_sign("), x, lit(")")};
    case Op::Relu: return {lit("loom_max("), x, lit(", (" + type + ")0)")};
    case Op::IsNan: return {lit("("), x, lit(" != "), x, lit(")")};
    case Op::IsInf:
      return isFloatingType(u->in->dtype()) ? Pieces{lit("isinf("), x, lit(")")}
                                            : Pieces{lit("false")};
    case Op::LogicalNot: return {lit("(!"), x, lit(")")};
    case Op::Trunc: return float_in ? fn("trunc") : cast({x});
    case Op::Frac: return float_in ? Pieces{lit("loom_frac("), x, lit(")")} : cast({lit("0")});
    // The tests take any operand; integers and Bool are finite, real, and have no sign bit unless
    // negative.
    case Op::Signbit:
      return float_in ? Pieces{lit("(signbit("), x, lit(") != 0)")}
                      : Pieces{lit("("), x, lit(" < 0)")};
    case Op::IsFinite:
      return float_in ? Pieces{lit("(isfinite("), x, lit(") != 0)")} : Pieces{lit("true")};
    case Op::IsNegInf:
      return float_in ? Pieces{lit("(isinf("), x, lit(") && "), x, lit(" < 0)")}
                      : Pieces{lit("false")};
    case Op::IsPosInf:
      return float_in ? Pieces{lit("(isinf("), x, lit(") && "), x, lit(" > 0)")}
                      : Pieces{lit("false")};
    case Op::IsReal: return {lit("true")};
    case Op::Real:
    case Op::Imag:
    case Op::Conj: break;  // complex operands only (complexUnary)
    case Op::BitwiseNot:
      return u->dtype() == DataType::Bool ? Pieces{lit("(!"), x, lit(")")} : cast({lit("~"), x});
    case Op::Cast: {
      const DataType from = u->in->dtype();
      const DataType to = u->dtype();
      // Floats to integers truncate toward zero, NaN giving 0 (docs/ops.md, "Integer types";
      // data_type.h, floatToInteger): Int32 and Int64 saturate (loom::truncToInt32/64,
      // runtime/types.cuh, on both backends), UInt64 has its own, the narrower types wrap the
      // Int64 conversion. The 16-bit floating types widen to float first (exactly).
      if (isIntegralType(to) && isFloatingType(from)) {
        Pieces v = isReducedPrecision(from) ? wrap("static_cast<float>(", {x}, ")") : Pieces{x};
        if (to == DataType::Int32) return wrap("loom::truncToInt32(", std::move(v), ")");
        if (to == DataType::Int64) return wrap("loom::truncToInt64(", std::move(v), ")");
        if (to == DataType::UInt64) return wrap("loom::truncToUInt64(", std::move(v), ")");
        return cast(wrap("loom::truncToInt64(", std::move(v), ")"));
      }
      // The 8-bit floats convert from float as torch does: a double or an integer is rounded to
      // float first (round to nearest), then to 8 bits (float8.h). Their constructors take float.
      Pieces v{x};
      if (isFloat8Type(to)) {
        if (from != DataType::Float32 && !isReducedPrecision(from)) {
          v = wrap("static_cast<float>(", std::move(v), ")");
        }
        return cast(std::move(v));
      }
      // The 16-bit types convert from float: a double or an integer is rounded to float to odd
      // first, so that the one rounding to 16 bits is that of the value itself.
      if (isReducedPrecision(to) && !isFloatingType(from) && from != DataType::Bool) {
        v = wrap("loom::roundToOddFloat(static_cast<double>(", std::move(v), "))");
      } else if (isReducedPrecision(to) && from == DataType::Float64) {
        v = wrap("loom::roundToOddFloat(", std::move(v), ")");
      } else if (isReducedPrecision(to) && from == DataType::Bool) {
        v = wrap("static_cast<float>(", std::move(v), ")");
      }
      return cast(std::move(v));
    }
    default: break;
  }
  // Every other floating function is the CUDA math function of the op's name (op_types.h), with
  // CUDA's f suffix on float: a CUDA builtin, or one the runtime library adds under CUDA's name
  // (math.cuh: digamma); the host backend's emulation supplies the builtins its C library lacks
  // (cuda_emulation.h: erfinv, erfcinv, erfcx).
  LOOM_ASSERT(ir::isFloatOnlyOp(u->op), "unary op ", ir::opTypeName(u->op), " has no kernel form");
  return fn(ir::opTypeName(u->op));
}

Pieces binary(const Writer& wr, const kir::BinaryExpr* b) {
  using Op = ir::BinaryOpType;
  const bool long_long = isLongLongData(wr, b->lhs) || isLongLongData(wr, b->rhs);
  const Piece l = operand(b->lhs, long_long);
  const Piece r = operand(b->rhs, long_long);
  auto infix = [&](const char* op) {
    return Pieces{lit("("), l, lit(std::string(" ") + op + " "), r, lit(")")};
  };
  if (isComplexType(b->lhs->dtype())) {
    // add, sub, mul, div, eq, ne (ir::verify): loom::Complex's operators (complex.cuh).
    switch (b->op) {
      case Op::Add: return infix("+");
      case Op::Sub: return infix("-");
      case Op::Mul: return infix("*");
      case Op::Div: return infix("/");
      case Op::Eq: return infix("==");
      case Op::Ne: return infix("!=");
      default: LOOM_UNREACHABLE("binary op ", ir::opTypeName(b->op), " on complex values");
    }
  }
  auto call = [&](const char* name) {
    return Pieces{lit(std::string(name) + "("), l, lit(", "), r, lit(")")};
  };
  bool f32 = b->dtype() != DataType::Float64;
  const std::string type(cTypeName(b->dtype()));
  // Explicit template arguments: the operands convert to the op's type (no deduction to fail).
  auto tmpl = [&](const char* name) {
    return Pieces{lit(std::string(name) + "<" + type + ">("), l, lit(", "), r, lit(")")};
  };
  if (b->total && isIntegralType(b->dtype())) {
    // Integer math of the fusion's own values: defined for every operand (math.cuh): division
    // total, overflow wrapping as two's complement (index math stays plain: it never overflows).
    switch (b->op) {
      case Op::Div: return call("loom_div");
      case Op::Mod:
      case Op::Fmod: return call("loom_fmod");
      case Op::CeilDiv: return call("loom_ceil_div_total");
      case Op::Add: return tmpl("loom_wrap_add");
      case Op::Sub: return tmpl("loom_wrap_sub");
      case Op::Mul: return tmpl("loom_wrap_mul");
      default: break;
    }
  }
  const bool is_bool = b->dtype() == DataType::Bool;
  switch (b->op) {
    case Op::Atan2: return call(f32 ? "atan2f" : "atan2");
    case Op::Remainder: return call("loom_remainder");
    case Op::Nextafter: return call(f32 ? "nextafterf" : "nextafter");
    case Op::Gcd: return tmpl("loom_gcd");
    case Op::BitwiseAnd:
      return is_bool ? infix("&&") : wrap("static_cast<" + type + ">", infix("&"), "");
    case Op::BitwiseOr:
      return is_bool ? infix("||") : wrap("static_cast<" + type + ">", infix("|"), "");
    case Op::BitwiseXor:
      return is_bool ? infix("!=") : wrap("static_cast<" + type + ">", infix("^"), "");
    case Op::Lshift: return tmpl("loom_shl");
    case Op::Rshift: return tmpl("loom_shr");
    case Op::LogicalRshift: return tmpl("loom_lshr");
    default: break;
  }
  switch (b->op) {
    case Op::Add: return infix("+");
    case Op::Sub: return infix("-");
    case Op::Mul: return infix("*");
    case Op::Div: return infix("/");
    case Op::Mod: return isFloatingType(b->dtype()) ? call("loom_fmod") : infix("%");
    case Op::Pow:
      // Integers: an exact (wrapping) power, as the reference computes it; floats: pow.
      if (isIntegralType(b->dtype())) return call("loom_ipow");
      return call(f32 ? "powf" : "pow");
    case Op::Fmod: return call("loom_fmod");
    case Op::Max: return call("loom_max");
    case Op::Min: return call("loom_min");
    case Op::Eq: return infix("==");
    case Op::Ne: return infix("!=");
    case Op::Lt: return infix("<");
    case Op::Le: return infix("<=");
    case Op::Gt: return infix(">");
    case Op::Ge: return infix(">=");
    case Op::LogicalAnd: return infix("&&");
    case Op::LogicalOr: return infix("||");
    case Op::Atan2:
    case Op::Remainder:
    case Op::Nextafter:
    case Op::Gcd:
    case Op::BitwiseAnd:
    case Op::BitwiseOr:
    case Op::BitwiseXor:
    case Op::Lshift:
    case Op::Rshift:
    case Op::LogicalRshift: break;  // above
    case Op::CeilDiv:
      // Floats: ceil of the true quotient, as the evaluator computes it ((a + b - 1) / b is
      // only right for integers).
      if (isFloatingType(b->dtype())) {
        return {lit(f32 ? "ceilf(" : "ceil("), l, lit(" / "), r, lit(")")};
      }
      return call("loom_ceil_div");
  }
  LOOM_UNREACHABLE();
}

// The pieces of one value: leaves are all text; others name their operands.
Pieces piecesOf(const Writer& wr, const kir::Value* v) {
  switch (v->kind()) {
    case kir::NodeKind::Const: return {lit(constant(wr, v->as<kir::Const>()))};
    case kir::NodeKind::Var: return {lit(v->as<kir::Var>()->name)};
    case kir::NodeKind::NamedScalar:
      return {lit("((" + indexTypeName(wr) + ")" + v->as<kir::NamedScalar>()->name + ")")};
    case kir::NodeKind::TensorSize: {
      auto* t = v->as<kir::TensorSize>();
      return {lit(t->buffer->name + (t->isStride ? ".stride[" : ".size[") + std::to_string(t->dim) +
                  "]")};
    }
    case kir::NodeKind::UnaryExpr: return unary(v->as<kir::UnaryExpr>());
    case kir::NodeKind::BinaryExpr: return binary(wr, v->as<kir::BinaryExpr>());
    case kir::NodeKind::TernaryExpr: {
      auto* t = v->as<kir::TernaryExpr>();
      const bool long_long =
          isLongLongData(wr, t->a) || isLongLongData(wr, t->b) || isLongLongData(wr, t->c);
      const Piece a = operand(t->a, long_long), b = operand(t->b, long_long),
                  c = operand(t->c, long_long);
      switch (t->op) {
        case ir::TernaryOpType::Where: return {lit("("), a, lit(" ? "), b, lit(" : "), c, lit(")")};
        case ir::TernaryOpType::Clamp:
          return {lit("loom_min(loom_max("), a, lit(", "), b, lit("), "), c, lit(")")};
        case ir::TernaryOpType::Lerp:
          return {lit("("), a, lit(" + "), c, lit(" * ("), b, lit(" - "), a, lit("))")};
      }
      LOOM_UNREACHABLE();
    }
    case kir::NodeKind::Load: {
      auto* l = v->as<kir::Load>();
      const char* wrapper = isCallerBool(l->buffer)    ? "loom::loadBoolInput(&"
                            : isHintedInput(l->buffer) ? "loom::loadInput(&"
                                                       : "";
      const bool wrapped = *wrapper != '\0';
      return {lit(wrapper + l->buffer->name + "["), arg(l->index), lit(wrapped ? "])" : "]")};
    }
    case kir::NodeKind::Call: {
      auto* c = v->as<kir::Call>();
      Pieces pieces{lit(c->fn + "(")};
      for (size_t i = 0; i < c->args.size(); ++i) {
        if (i > 0) pieces.push_back(lit(", "));
        pieces.push_back(arg(c->args[i]));
      }
      pieces.push_back(lit(")"));
      return pieces;
    }
    case kir::NodeKind::Misalignment: {
      auto* m = v->as<kir::Misalignment>();
      return {lit("((" + indexTypeName(wr) + ")loom::misalignment<" + std::to_string(m->width) +
                  ">(&" + m->buffer->name + "["),
              arg(m->index), lit("]))")};
    }
    default: LOOM_UNREACHABLE("not a value");
  }
}

std::string expr(const Writer& wr, const kir::Value* v) {
  std::ostringstream os;
  kir::writePieces(os, v, [&wr](const kir::Value* x) { return piecesOf(wr, x); });
  return os.str();
}

std::string_view reduceFunctor(ir::ReductionOpType op) {
  switch (op) {
    case ir::ReductionOpType::Sum: return "loom::Sum{}";
    case ir::ReductionOpType::Prod: return "loom::Prod{}";
    case ir::ReductionOpType::Max: return "loom::Max{}";
    case ir::ReductionOpType::Min: return "loom::Min{}";
  }
  LOOM_UNREACHABLE();
}

std::string parallelIndex(ir::ParallelType p) {
  switch (p) {
    case ir::ParallelType::BIDx: return "blockIdx.x";
    case ir::ParallelType::BIDy: return "blockIdx.y";
    case ir::ParallelType::BIDz: return "blockIdx.z";
    case ir::ParallelType::TIDx: return "threadIdx.x";
    case ir::ParallelType::TIDy: return "threadIdx.y";
    case ir::ParallelType::TIDz: return "threadIdx.z";
    default: LOOM_UNREACHABLE("not a thread or block type");
  }
}

// The runtime's block extent along a thread type.
std::string blockDimName(ir::ParallelType p) {
  switch (p) {
    case ir::ParallelType::TIDx: return "loom::blockDimX()";
    case ir::ParallelType::TIDy: return "loom::blockDimY()";
    case ir::ParallelType::TIDz: return "loom::blockDimZ()";
    default: LOOM_UNREACHABLE("not a thread type");
  }
}

void stmts(const Writer& wr, std::ostringstream& os, const kir::Scope& scope, int indent);

std::string welfordType(const kir::Var* avg, const kir::Var* n) {
  return "loom::Welford<" + std::string(cTypeName(avg->dtype())) + ", " +
         std::string(cTypeName(n->dtype())) + ">";
}

// Indentation stops growing at this depth: a loop nest tens of thousands deep would otherwise
// make the kernel text quadratic in its depth.
constexpr int kMaxIndent = 32;

std::string padOf(int indent) { return std::string(size_t(std::min(indent, kMaxIndent)) * 2, ' '); }

// The opening line(s) of a loop or an if; stmts(wr, ) writes the body and the closing brace.
void openScope(const Writer& wr, std::ostringstream& os, const kir::Stmt* s, int indent) {
  const std::string pad = padOf(indent);
  if (auto* f = s->dynCast<kir::ForLoop>()) {
    const std::string& i = f->index->name;
    if (f->isParallel()) {
      os << pad << "{\n"
         << padOf(indent + 1) << "const " << indexTypeName(wr) << " " << i << " = ("
         << indexTypeName(wr) << ")" << parallelIndex(f->ptype) << ";\n";
      return;
    }
    // A bulk loop's iterations are shared among the threads of its free thread types (lower:
    // loop_nests): each starts at its index over them and steps by their count.
    if (f->ptype == ir::ParallelType::Bulk && !f->sharedBy.empty()) {
      const std::string t = indexTypeName(wr);
      std::string index, count;
      for (auto p = f->sharedBy.rbegin(); p != f->sharedBy.rend(); ++p) {
        const std::string dim = blockDimName(*p);
        index = index.empty() ? parallelIndex(*p)
                              : parallelIndex(*p) + " + " + dim + " * (" + index + ")";
        count = count.empty() ? dim : dim + " * " + count;
      }
      os << pad << "for (" << t << " " << i << " = " << expr(wr, f->start) << " + (" << t << ")("
         << index << "); " << i << " < " << expr(wr, f->stop) << "; " << i << " += (" << t << ")("
         << count << ")) {\n";
      return;
    }
    // Vectorize loops left by the vectorize pass (math on registers) are unrolled too.
    if (f->ptype == ir::ParallelType::Unroll || f->ptype == ir::ParallelType::Vectorize) {
      os << pad << "#pragma unroll\n";
    }
    os << pad << "for (" << indexTypeName(wr) << " " << i << " = " << expr(wr, f->start) << "; "
       << i << " < " << expr(wr, f->stop) << "; ++" << i << ") {\n";
    return;
  }
  os << pad << "if (" << expr(wr, s->as<kir::IfThenElse>()->cond) << ") {\n";
}

// A statement without a body.
void stmt(const Writer& wr, std::ostringstream& os, const kir::Stmt* s, int indent) {
  std::string pad = padOf(indent);
  switch (s->kind()) {
    case kir::NodeKind::Allocate: {
      auto* a = s->as<kir::Allocate>();
      if (a->buffer->kind == kir::BufferKind::Shared) {
        // A view of the dynamic shared buffer after the reduction scratch (loom_smem_tensors).
        // One of symbolic size follows every constant-size one (Kernel::dynamicShared).
        os << pad << cTypeName(a->buffer->dtype) << "* " << a->buffer->name
           << " = reinterpret_cast<" << cTypeName(a->buffer->dtype)
           << "*>(loom_smem + ";
        if (a->buffer->dynamicSmemOffset != nullptr) {
          os << "loom_smem_dynamic + (" << expr(wr, a->buffer->dynamicSmemOffset) << "));\n";
        } else {
          os << "loom_smem_tensors + " << a->buffer->smemOffset << ");\n";
        }
        return;
      }
      LOOM_ASSERT(a->buffer->kind == kir::BufferKind::Local,
                  "only local allocations are generated");
      os << pad << cTypeName(a->buffer->dtype) << " " << a->buffer->name << "["
         << expr(wr, a->buffer->size) << "];\n";
      return;
    }
    case kir::NodeKind::DeclareVar: {
      auto* d = s->as<kir::DeclareVar>();
      if (d->constIndex) {
        os << pad << "const " << indexTypeName(wr) << " " << d->var->name << " = "
           << expr(wr, d->init) << ";\n";
        return;
      }
      os << pad << cTypeName(d->var->dtype()) << " " << d->var->name << " = "
         << "static_cast<" << cTypeName(d->var->dtype()) << ">(" << expr(wr, d->init) << ");\n";
      return;
    }
    case kir::NodeKind::Store: {
      auto* st = s->as<kir::Store>();
      os << pad;
      if (st->buffer && isHintedOutput(st->buffer)) {
        os << "loom::storeOutput(&" << st->buffer->name << "[" << expr(wr, st->index)
           << "], static_cast<" << cTypeName(st->buffer->dtype) << ">(" << expr(wr, st->value)
           << "));\n";
        return;
      }
      if (st->buffer) {
        os << st->buffer->name << "[" << expr(wr, st->index) << "]";
      } else {
        os << st->var->name;
      }
      std::string_view t = cTypeName(st->buffer ? st->buffer->dtype : st->var->dtype());
      os << " = static_cast<" << t << ">(" << expr(wr, st->value) << ");\n";
      return;
    }
    case kir::NodeKind::BlockSync: os << pad << "__syncthreads();\n"; return;
    case kir::NodeKind::BlockReduce: {
      auto* b = s->as<kir::BlockReduce>();
      std::string_view t = cTypeName(b->acc->dtype());
      os << pad << b->acc->name << " = loom::blockReduce<" << (b->x ? "true" : "false") << ", "
         << (b->y ? "true" : "false") << ", " << (b->z ? "true" : "false") << ">(" << b->acc->name
         << ", " << reduceFunctor(b->op) << ", static_cast<" << t << ">(" << expr(wr, b->init)
         << "), reinterpret_cast<" << t << "*>(loom_smem));\n";
      return;
    }
    case kir::NodeKind::Welford: {
      // The accumulators are three scalars; the runtime helpers take a loom::Welford triple.
      auto* w = s->as<kir::Welford>();
      std::string_view t = cTypeName(w->avg->dtype());
      std::string wt = welfordType(w->avg, w->n);
      os << pad << "{\n"
         << pad << "  " << wt << " w = {" << w->avg->name << ", " << w->m2->name << ", "
         << w->n->name << "};\n"
         << pad << "  w = ";
      switch (w->mode) {
        case kir::WelfordMode::Update:
          os << "loom::welfordUpdate(w, static_cast<" << t << ">(" << expr(wr, w->in[0]) << "));\n";
          break;
        case kir::WelfordMode::Combine:
          os << "loom::welfordCombine(w, " << wt << "{static_cast<" << t << ">("
             << expr(wr, w->in[0]) << "), static_cast<" << t << ">(" << expr(wr, w->in[1])
             << "), static_cast<" << cTypeName(w->n->dtype()) << ">(" << expr(wr, w->in[2])
             << ")});\n";
          break;
        case kir::WelfordMode::Block:
          os << "loom::blockWelford<" << (w->x ? "true" : "false") << ", "
             << (w->y ? "true" : "false") << ", " << (w->z ? "true" : "false")
             << ">(w, reinterpret_cast<" << wt << "*>(loom_smem));\n";
          break;
      }
      os << pad << "  " << w->avg->name << " = w.avg;\n"
         << pad << "  " << w->m2->name << " = w.m2;\n"
         << pad << "  " << w->n->name << " = w.n;\n"
         << pad << "}\n";
      return;
    }
    case kir::NodeKind::GridReduce: {
      auto* g = s->as<kir::GridReduce>();
      std::string dims = std::string("<") + (g->x ? "true" : "false") + ", " +
                         (g->y ? "true" : "false") + ", " + (g->z ? "true" : "false") + ">";
      std::string buffers = "gw" + std::to_string(g->work) + ", gs" + std::to_string(g->work);
      if (g->entrance != nullptr) buffers += ", (unsigned)(" + expr(wr, g->entrance) + ")";
      // An all-reduce returns nothing: every block holds the result (`last` is true everywhere).
      const std::string call = g->all ? "loom::gridAll" : std::string(g->last->name) + " = loom::grid";
      const std::string after = g->all ? " " + g->last->name + " = true;" : "";
      if (g->isWelford()) {
        std::string wt = welfordType(g->welford[0], g->welford[2]);
        os << pad << "{\n"
           << pad << "  " << wt << " w = {" << g->welford[0]->name << ", " << g->welford[1]->name
           << ", " << g->welford[2]->name << "};\n"
           << pad << "  " << call << "Welford" << dims << "(w, w, " << buffers << ");" << after
           << "\n";
        for (int k = 0; k < 3; ++k) {
          os << pad << "  " << g->welford[k]->name << " = w."
             << (k == 0   ? "avg"
                 : k == 1 ? "m2"
                          : "n")
             << ";\n";
        }
        os << pad << "}\n";
        return;
      }
      std::string_view t = cTypeName(g->acc->dtype());
      os << pad << call << "Reduce" << dims << "(" << g->acc->name << ", " << g->acc->name << ", "
         << reduceFunctor(g->op) << ", static_cast<" << t << ">(" << expr(wr, g->init) << "), "
         << buffers << ");" << after << "\n";
      return;
    }
    case kir::NodeKind::Comment: os << pad << "// " << s->as<kir::Comment>()->text << "\n"; return;
    case kir::NodeKind::VectorCopy: {
      // Parameter sides move as one vector access; local sides (registers) element by element.
      auto* v = s->as<kir::VectorCopy>();
      std::string t(cTypeName(v->dst->dtype));
      std::string w = std::to_string(v->width);
      os << pad << "{\n" << pad << "  loom::Array<" << t << ", " << w << "> v;\n";
      if (isCallerBool(v->src)) {
        os << pad << "  loom::loadBoolVectorInput(v, &" << v->src->name << "["
           << expr(wr, v->srcIndex) << "]);\n";
      } else if (v->src->kind == kir::BufferKind::Param) {
        os << pad << "  loom::loadVector" << (isHintedInput(v->src) ? "Input" : "") << "(v, &"
           << v->src->name << "[" << expr(wr, v->srcIndex) << "]);\n";
      } else {
        os << pad << "  #pragma unroll\n"
           << pad << "  for (int k = 0; k < " << w << "; ++k) v[k] = " << v->src->name << "["
           << expr(wr, v->srcIndex) << " + k];\n";
      }
      if (v->dst->kind == kir::BufferKind::Param) {
        os << pad << "  loom::storeVector" << (isHintedOutput(v->dst) ? "Output" : "") << "(&"
           << v->dst->name << "[" << expr(wr, v->dstIndex) << "], v);\n";
      } else {
        os << pad << "  #pragma unroll\n"
           << pad << "  for (int k = 0; k < " << w << "; ++k) " << v->dst->name << "["
           << expr(wr, v->dstIndex) << " + k] = v[k];\n";
      }
      os << pad << "}\n";
      return;
    }
    case kir::NodeKind::SortRow: {
      // The row's pointers are taken at their bases; the runtime steps by the strides.
      auto* r = s->as<kir::SortRow>();
      auto at = [&](const kir::SortRow::Row& x) {
        return "&" + x.buffer->name + "[" + expr(wr, x.base) + "], " + expr(wr, x.stride);
      };
      const std::string index_type = indexTypeName(wr);
      if (r->blockRow > 0) {
        // Every thread of the block calls it; the keys and indices live in the shared tensors.
        const std::string head = "<" + std::string(cTypeName(r->in.buffer->dtype)) + ", " +
                                 index_type + ", " +
                                 std::to_string(r->blockRow) + ">(";
        const std::string smem =
            "loom_smem + loom_smem_tensors + " + std::to_string(r->smemOffset);
        if (r->isTopK()) {
          os << pad << "loom::topkRowBlock" << head << at(r->in) << ", " << expr(wr, r->n) << ", "
             << expr(wr, r->k) << ", " << at(r->values) << ", " << at(r->indices) << ", "
             << (r->descending ? "true" : "false") << ", " << smem << ");\n";
        } else {
          os << pad << "loom::argsortRowBlock" << head << at(r->in) << ", " << expr(wr, r->n)
             << ", " << at(r->indices) << ", " << (r->descending ? "true" : "false") << ", "
             << smem << ");\n";
        }
        return;
      }
      if (r->isTopK()) {
        os << pad << "loom::topkRow<" << cTypeName(r->in.buffer->dtype) << ", " << index_type
           << ">(" << at(r->in) << ", " << expr(wr, r->n) << ", " << expr(wr, r->k) << ", "
           << at(r->values) << ", " << at(r->indices) << ", " << (r->descending ? "true" : "false")
           << ");\n";
      } else {
        os << pad << "loom::argsortRow<" << cTypeName(r->in.buffer->dtype) << ", " << index_type
           << ">(" << at(r->in) << ", " << expr(wr, r->n) << ", " << at(r->indices) << ", "
           << (r->descending ? "true" : "false") << ");\n";
      }
      return;
    }
    case kir::NodeKind::ScatterAdd: {
      auto* a = s->as<kir::ScatterAdd>();
      if (isReducedPrecision(a->out->dtype)) {
        // The f32 sums: self's parameter (named by its tensor, as every parameter) and the
        // kernel's "gacc" scratch (lowering, appendAtomicScatters).
        os << pad << "loom::scatterAddAtomicWide(" << a->out->name << ", "
           << a->expr->as<ir::ScatterOp>()->self()->toString() << ", " << a->index->name << ", "
           << a->src->name << ", " << a->dim << ", gacc, " << a->sync << ", loom_index_error, "
           << a->site << ");\n";
        return;
      }
      os << pad << "loom::scatterAddAtomic(" << a->out->name << ", " << a->index->name << ", "
         << a->src->name << ", " << a->dim << ", " << a->sync << ", loom_index_error, " << a->site
         << ");\n";
      return;
    }
    case kir::NodeKind::TensorOp: LOOM_UNREACHABLE("codegen of a kernel that was not indexed");
    default: LOOM_UNREACHABLE("not a statement");
  }
}

// Writes `root` with an explicit stack of open scopes: a loop nest may be tens of thousands deep.
void stmts(const Writer& wr, std::ostringstream& os, const kir::Scope& root, int indent) {
  struct Open {
    const kir::Scope* scope;
    int indent;
    const kir::IfThenElse* ite = nullptr;  ///< the if whose then-branch this is
    size_t next = 0;
  };
  std::vector<Open> stack{{&root, indent}};
  while (!stack.empty()) {
    Open& o = stack.back();
    if (o.next == o.scope->size()) {
      if (stack.size() == 1) return;
      const std::string pad = padOf(o.indent - 1);
      if (o.ite != nullptr && !o.ite->elseBody.empty()) {
        os << pad << "} else {\n";
        o = {&o.ite->elseBody, o.indent};
        continue;
      }
      os << pad << "}\n";
      stack.pop_back();
      continue;
    }
    const kir::Stmt* s = (*o.scope)[o.next++];
    const int at = o.indent;
    if (auto* f = s->dynCast<kir::ForLoop>()) {
      openScope(wr, os, s, at);
      stack.push_back({&f->body, at + 1});
    } else if (auto* ite = s->dynCast<kir::IfThenElse>()) {
      openScope(wr, os, s, at);
      stack.push_back({&ite->thenBody, at + 1, ite});
    } else {
      stmt(wr, os, s, at);
    }
  }
}

void collectIndexVars(const kir::Scope& scope, std::unordered_set<const kir::Var*>& out) {
  kir::forEachStmt(scope, [&](const kir::Stmt* s) {
    if (auto* f = s->dynCast<kir::ForLoop>()) {
      out.insert(f->index);
    } else if (auto* d = s->dynCast<kir::DeclareVar>(); d != nullptr && d->constIndex) {
      out.insert(d->var);
    }
  });
}

}  // namespace

// NVRTC parses every function body it is given, instantiated or not, so the grid-reduction part
// of the runtime (the largest file, with atomics and fences) is left out of kernels that do not
// use it. The other files are small and used by most kernels; see docs/cuda-backend.md.
std::string runtimeLibraryFor(const kir::Kernel& kernel) {
  const bool grid = !kernel.gridScratch.empty();
  bool sorts = false;
  bool scatters = false;
  kir::forEachStmt(kernel.body, [&](const kir::Stmt* s) {
    sorts |= s->isA<kir::SortRow>();
    scatters |= s->isA<kir::ScatterAdd>();
  });
  std::string out;
  out.reserve(runtimeLibrarySource().size());
  for (const RuntimeFile& f : runtimeLibraryFiles()) {
    // Files only some kernels use stay out of the others (less for NVRTC to parse).
    // The attention files and their argument structs are for fusedAttentionKernel() alone.
    if ((!grid && f.name == "grid.cuh") || (!sorts && f.name == "sort.cuh") ||
        (!scatters && f.name == "scatter.cuh") || f.name == "attention_params.cuh" ||
        f.name == "attention.cuh" || f.name == "mma.cuh" || f.name == "attention_mma.cuh" ||
        f.name == "attention_bwd_mma.cuh") {
      continue;
    }
    out += "// ---- runtime/";
    out += f.name;
    out += " ----\n";
    out += f.text;
  }
  return out;
}

namespace {

// The launch dims in the order TIDx, TIDy, TIDz, BIDx, BIDy, BIDz, with their macros, and the
// extent of each that lowering fixes (kir::constantLaunchExtent), computed once per kernel for
// both the defines and the bounds.
constexpr std::array<std::pair<ir::ParallelType, const char*>, 6> kLaunchDims = {
    {{ir::ParallelType::TIDx, "LOOM_BLOCK_DIM_X"},
     {ir::ParallelType::TIDy, "LOOM_BLOCK_DIM_Y"},
     {ir::ParallelType::TIDz, "LOOM_BLOCK_DIM_Z"},
     {ir::ParallelType::BIDx, "LOOM_GRID_DIM_X"},
     {ir::ParallelType::BIDy, "LOOM_GRID_DIM_Y"},
     {ir::ParallelType::BIDz, "LOOM_GRID_DIM_Z"}}};
using LaunchExtents = std::array<std::optional<int64_t>, kLaunchDims.size()>;

LaunchExtents constantLaunchExtents(const kir::Kernel& kernel) {
  LaunchExtents out;
  for (size_t d = 0; d < kLaunchDims.size(); ++d) {
    out[d] = kir::constantLaunchExtent(kernel, kLaunchDims[d].first);
  }
  return out;
}

std::string launchDefines(const LaunchExtents& extents) {
  std::string out;
  for (size_t d = 0; d < kLaunchDims.size(); ++d) {
    // 0 is not launched at all; the executor says so.
    if (!extents[d] || *extents[d] < 1) continue;
    out += "#define ";
    out += kLaunchDims[d].second;
    out += " " + std::to_string(*extents[d]) + "u\n";
  }
  return out;
}

std::string launchBounds(const LaunchExtents& extents, int64_t multiprocessors,
                         bool bound_block_threads = false) {
  std::optional<int64_t> threads = 1;
  std::optional<int64_t> blocks = 1;
  for (size_t d = 0; d < kLaunchDims.size(); ++d) {
    std::optional<int64_t>& product = ir::isThreadDim(kLaunchDims[d].first) ? threads : blocks;
    if (!extents[d] || *extents[d] < 1) {
      product.reset();
    } else if (product) {
      *product *= *extents[d];
    }
  }
  if (multiprocessors > 0 && threads && blocks && *blocks <= multiprocessors) {
    return "__launch_bounds__(" + std::to_string(*threads) + ", 1) ";
  }
  if (bound_block_threads && threads) return "__launch_bounds__(" + std::to_string(*threads) + ") ";
  return "";
}

// `__maxnreg__(N)` for CodegenOptions::maxRegisters, N lowered (to a multiple of 8, the
// allocation unit) so that a block of the kernel's constant thread count fits the 64K registers
// of an SM when `bound_block_threads` asks for it.
std::string maxRegisters(const LaunchExtents& extents, int64_t registers,
                         bool bound_block_threads) {
  int64_t threads = 1;  // 0: known at launch only
  for (size_t d = 0; d < kLaunchDims.size(); ++d) {
    if (!ir::isThreadDim(kLaunchDims[d].first)) continue;
    threads = extents[d] && *extents[d] >= 1 ? threads * *extents[d] : 0;
  }
  if (bound_block_threads && threads > 0) {
    registers = std::min(registers, std::max<int64_t>(65536 / threads / 8 * 8, 16));
  }
  return "__maxnreg__(" + std::to_string(registers) + ") ";
}

}  // namespace

std::string launchDefines(const kir::Kernel& kernel) {
  return launchDefines(constantLaunchExtents(kernel));
}

std::string launchBounds(const kir::Kernel& kernel, int64_t multiprocessors) {
  return launchBounds(constantLaunchExtents(kernel), multiprocessors);
}

GeneratedKernel generateKernel(kir::Kernel& kernel, const CodegenOptions& options) {
  LOOM_ASSERT(kernel.indexType == DataType::Int32 || kernel.indexType == DataType::Int64,
              "index type ", dataTypeName(kernel.indexType));
  Writer wr;
  wr.indexType = kernel.indexType;
  collectIndexVars(kernel.body, wr.indexVars);
  std::ostringstream body;
  body << "(";
  for (size_t i = 0; i < kernel.params.size(); ++i) {
    const kir::Buffer* b = kernel.params[i];
    body << (i ? ", " : "") << "loom::Tensor<" << cTypeName(b->dtype) << ", " << b->rank
         << (kernel.indexType == DataType::Int32 ? ", int> " : "> ") << b->name;
  }
  for (size_t i = 0; i < kernel.scalarParams.size(); ++i) {
    const kir::Var* v = kernel.scalarParams[i].second;
    body << (i || !kernel.params.empty() ? ", " : "") << cTypeName(v->dtype()) << " " << v->name;
  }
  size_t nargs = kernel.params.size() + kernel.scalarParams.size();
  for (const kir::Kernel::GridScratch& g : kernel.gridScratch) {
    body << (nargs++ ? ", " : "") << g.ctype << "* " << g.name;
  }
  if (!kernel.indexChecks.empty()) body << (nargs++ ? ", " : "") << "long long* loom_index_error";
  body << ") {\n";
  const bool shared_tensors = kernel.sharedTensorBytes > 0 || !kernel.dynamicShared.empty();
  if (!kernel.blockReduceTypes.empty() || shared_tensors) {
    body << "  extern __shared__ __align__(16) char loom_smem[];\n";
  }
  if (shared_tensors) {
    // Shared tensors follow the block-reduction scratch (threads * largest reduced element),
    // rounded up to 16 bytes; the executor sizes the launch the same way.
    size_t elem = 0;
    for (DataType t : kernel.blockReduceTypes) elem = std::max(elem, dataTypeSize(t));
    elem = std::max(elem, size_t(kernel.blockReduceBytes));
    body << "  const long long loom_smem_tensors = ((long long)loom::blockThreadCount() * " << elem
         << " + 15) / 16 * 16;\n";
    if (!kernel.dynamicShared.empty()) {
      body << "  const long long loom_smem_dynamic = loom_smem_tensors + " << kernel.sharedTensorBytes
           << ";\n";
    }
  }
  stmts(wr, body, kernel.body, 1);
  body << "}\n";
  std::string text = body.str();
  const LaunchExtents extents = constantLaunchExtents(kernel);
  const std::string defines = launchDefines(extents);
  const std::string bounds =
      options.maxRegisters > 0
          ? maxRegisters(extents, options.maxRegisters, options.boundBlockThreads)
          : launchBounds(extents, options.multiprocessors, options.boundBlockThreads);
  GeneratedKernel g;
  g.name = fmt::format("loom_kernel_{:016x}", Hasher().str(defines).str(bounds).str(text).digest());
  kernel.name = g.name;
  const std::string function = "extern \"C\" __global__ void " + bounds + g.name + text;
  g.kernelText = defines + function;
  g.source = defines;
  g.source += runtimeLibraryFor(kernel);
  g.source += "\n";
  g.source += function;
  return g;
}

}  // namespace loom::codegen
