// SPDX-License-Identifier: Apache-2.0
// Pointwise op builders (unary, binary, where, clamp, lerp, cast) with their numeric rules:
// which operands an op accepts and what is known of its result.
#include <algorithm>
#include <array>
#include <set>

#include "fuzz/generator_internal.h"

namespace loom::fuzz::detail {
namespace {

const char* unName(Un u) {
  static const char* names[] = {
      "exp",         "exp2", "log",     "log2",  "sqrt",  "rsqrt",   "reciprocal", "sin",
      "cos",         "tanh", "sigmoid", "silu",  "erf",   "gelu",    "gelu_tanh",  "neg",
      "abs",         "relu", "floor",   "ceil",  "round", "sign",    "isnan",      "isinf",
      "logical_not", "atan", "erfc",    "asinh", "trunc", "signbit", "isfinite"};
  return names[size_t(u)];
}
const char* binName(Bin b) {
  static const char* names[] = {"add",     "sub",     "mul",         "div",       "pow", "fmod",
                                "maximum", "minimum", "eq",          "ne",        "lt",  "le",
                                "gt",      "ge",      "logical_and", "logical_or"};
  return names[size_t(b)];
}

}  // namespace

// ---- Pointwise builders ---------------------------------------------------------------------

int Generator::pointwise(std::string_view what, const std::vector<Opnd>& operands, DataType compute,
                         const Rule& rule, const Build& build) {
  std::vector<int> tensors;
  for (const Opnd& o : operands) {
    if (o.tensor >= 0) tensors.push_back(o.tensor);
  }
  if (tensors.empty()) return -1;
  auto shape = broadcastShape(tensors);
  if (!shape || !fits(*shape)) return -1;
  std::optional<Result> res = rule(compute);
  if (!res) return -1;
  double tol = res->tol;
  if (tol < 0) {
    tol = 1.0;
    for (const Opnd& o : operands) tol = std::max(tol, errScale(o));
  }
  if (tol > kMaxTolScale) return -1;
  if (res->keepsZeroSign && isFloatingType(compute)) {
    for (const Opnd& o : operands) res->num.zsign = res->num.zsign || o.num.zsign;
  } else {
    res->num.zsign = false;
  }
  // Reduction sizes: those of the operand with the largest.
  std::vector<int> red;
  for (int t : tensors) {
    if (redProduct(ts_[size_t(t)].red) > redProduct(red)) red = ts_[size_t(t)].red;
  }
  std::vector<Operand> args;
  for (const Opnd& o : operands) args.emplace_back(o.val);
  TensorView* out = build(args);
  commitShape(tensors);
  // Shapes again after unification (classes may have merged).
  shape = broadcastShape(tensors);
  std::set<int> distinct(tensors.begin(), tensors.end());
  if (distinct.size() >= 2) {
    c_.features.insert("fan-in");
    for (int t : distinct) {
      if (numel(ts_[size_t(t)].dims) < numel(*shape) || ts_[size_t(t)].dims.size() < shape->size())
        c_.features.insert("broadcast-against-larger");
    }
  }
  for (int t : tensors) ++ts_[size_t(t)].uses;
  int idx = adopt(out, *shape, res->num, red, tol);
  std::ostringstream os;
  os << name(idx) << " = " << what << "(";
  for (size_t i = 0; i < operands.size(); ++i) {
    os << (i ? ", " : "");
    if (operands[i].tensor >= 0) {
      os << name(operands[i].tensor);
    } else if (operands[i].isConst) {
      os << numText(operands[i].value);
    } else {
      os << operands[i].val->toString();
    }
  }
  os << ")";
  note(os.str());
  return idx;
}

int Generator::unaryOp(Un u, int t) {
  const GenTensor& x = ts_[size_t(t)];
  const DataType dt = x.tv->dtype();
  if (u == Un::Neg && dt == DataType::Bool) return -1;
  const bool floating = u <= Un::GeluTanh || u == Un::Atan || u == Un::Erfc || u == Un::Asinh;
  std::array<Operand, 1> ops_arr{Operand(x.tv)};
  const DataType ct =
      ops::computeType(ops_arr, floating ? PromotionKind::IntToFloat : PromotionKind::Default);
  const Num in = x.num;
  auto rule = [&, u, in](DataType compute) -> std::optional<Result> {
    Result r;
    Num& o = r.num;
    o = in;
    o.product = false;
    const bool fl = isFloatingType(compute);
    const double lim = maxFinite(compute);
    switch (u) {
      case Un::Exp:
      case Un::Exp2: {
        if (!in.exact && in.mag > 4) return std::nullopt;
        double m =
            u == Un::Exp ? std::exp(std::min(in.mag, 1000.0)) : std::exp2(std::min(in.mag, 1000.0));
        o.exact = false;
        o.mag = m > lim ? kInf : m;
        o.special = in.special || m > lim;
        o.minAbs = std::isfinite(m) && m < 1e30 ? 1.0 / m : 0.0;
        return r;
      }
      case Un::Log:
      case Un::Log2:
        if (!in.exact) return std::nullopt;
        o = Num{false, 800.0, true, 0.0, false};
        return r;
      case Un::Sqrt:
        if (!in.exact) return std::nullopt;
        o = Num{true, std::sqrt(in.mag), true, std::sqrt(in.minAbs), false};
        return r;
      case Un::Rsqrt:
        if (!in.exact || in.zsign) return std::nullopt;
        o = Num{false, in.minAbs > 0 ? 1.0 / std::sqrt(in.minAbs) : kInf, true,
                std::isfinite(in.mag) && in.mag > 0 ? 1.0 / std::sqrt(in.mag) : 0.0, false};
        return r;
      case Un::Reciprocal:
        if (!in.exact || in.zsign) return std::nullopt;
        o = Num{true, in.minAbs > 0 ? 1.0 / in.minAbs : kInf, in.special || in.minAbs == 0,
                std::isfinite(in.mag) && in.mag > 0 ? 1.0 / in.mag : 0.0, false};
        return r;
      case Un::Sin:
      case Un::Cos:
        if (!in.exact && in.mag > 4) return std::nullopt;
        o = Num{false, 1.0, in.special, 0.0, false};
        return r;
      case Un::Tanh:
      case Un::Sigmoid:
      case Un::Erf:
        if (!in.exact && in.mag > 64) return std::nullopt;
        o = Num{false, 1.0, in.special, 0.0, false};
        return r;
      case Un::Silu:
        if (!in.exact && in.mag > 16) return std::nullopt;
        o = Num{false, in.mag, in.special, 0.0, false};
        return r;
      case Un::Gelu:
      case Un::GeluTanh:
        if (!in.exact && in.mag > 8) return std::nullopt;
        o = Num{false, in.mag, in.special || in.mag > 1e12, 0.0, false};
        return r;
      case Un::Neg: return r;
      case Un::Abs: r.keepsZeroSign = false; return r;
      case Un::Relu:
        o.minAbs = 0;
        r.keepsZeroSign = false;
        return r;
      case Un::Floor:
      case Un::Ceil:
      case Un::Round:
        if (fl && !in.exact) return std::nullopt;
        o.mag = in.mag + 1;
        o.minAbs = 0;
        return r;
      case Un::Sign:
        if (fl && !in.exact) return std::nullopt;
        o.mag = 1;
        o.minAbs = 0;
        return r;
      case Un::IsNan:
      case Un::IsInf: o = Num{}; return r;
      case Un::LogicalNot:
        if (isFloatingType(dt) && !in.exact) return std::nullopt;
        o = Num{};
        return r;
      case Un::Atan:
      case Un::Erfc:
        if (!in.exact && in.mag > 64) return std::nullopt;
        o = Num{false, 2.0, in.special, 0.0, false};
        return r;
      case Un::Asinh:
        if (!in.exact && in.mag > 64) return std::nullopt;
        o = Num{false, std::isfinite(in.mag) ? std::asinh(in.mag) : kInf, in.special, 0.0, false};
        return r;
      case Un::Trunc:
        if (fl && !in.exact) return std::nullopt;
        o.minAbs = 0;
        r.keepsZeroSign = false;
        return r;
      case Un::Signbit:
        // The sign of a NaN or of an uncertain zero may differ between implementations.
        if (!in.exact || in.special || in.zsign) return std::nullopt;
        o = Num{};
        return r;
      case Un::IsFinite: o = Num{}; return r;
    }
    return std::nullopt;
  };
  auto build = [u](const std::vector<Operand>& a) -> TensorView* {
    TensorView* x = a[0].tensor();
    switch (u) {
      case Un::Exp: return ops::exp(x);
      case Un::Exp2: return ops::exp2(x);
      case Un::Log: return ops::log(x);
      case Un::Log2: return ops::log2(x);
      case Un::Sqrt: return ops::sqrt(x);
      case Un::Rsqrt: return ops::rsqrt(x);
      case Un::Reciprocal: return ops::reciprocal(x);
      case Un::Sin: return ops::sin(x);
      case Un::Cos: return ops::cos(x);
      case Un::Tanh: return ops::tanh(x);
      case Un::Sigmoid: return ops::sigmoid(x);
      case Un::Silu: return ops::silu(x);
      case Un::Erf: return ops::erf(x);
      case Un::Gelu: return ops::gelu(x, ops::GeluApproximation::None);
      case Un::GeluTanh: return ops::gelu(x, ops::GeluApproximation::Tanh);
      case Un::Neg: return ops::neg(x);
      case Un::Abs: return ops::abs(x);
      case Un::Relu: return ops::relu(x);
      case Un::Floor: return ops::floor(x);
      case Un::Ceil: return ops::ceil(x);
      case Un::Round: return ops::round(x);
      case Un::Sign: return ops::sign(x);
      case Un::IsNan: return ops::isNan(x);
      case Un::IsInf: return ops::isInf(x);
      case Un::LogicalNot: return ops::logicalNot(x);
      case Un::Atan: return ops::atan(x);
      case Un::Erfc: return ops::erfc(x);
      case Un::Asinh: return ops::asinh(x);
      case Un::Trunc: return ops::trunc(x);
      case Un::Signbit: return ops::signbit(x);
      case Un::IsFinite: return ops::isFinite(x);
    }
    return nullptr;
  };
  return pointwise(unName(u), {tensorOpnd(t)}, ct, rule, build);
}

int Generator::binaryOp(Bin b, const Opnd& x, const Opnd& y) {
  if (x.tensor < 0 && y.tensor < 0) return -1;
  const bool logical = b == Bin::And || b == Bin::Or;
  const bool comparison = b >= Bin::Eq && b <= Bin::Ge;
  PromotionKind kind = b == Bin::Div ? PromotionKind::IntToFloat
                       : comparison  ? PromotionKind::Comparison
                                     : PromotionKind::Default;
  std::array<Operand, 2> ops_arr{Operand(x.val), Operand(y.val)};
  const DataType ct = logical ? DataType::Bool : ops::computeType(ops_arr, kind);
  const Num p = x.num, q = y.num;
  const double ex = errScale(x), ey = errScale(y);
  auto dtypeOf = [](const Opnd& o) { return o.val->dtype(); };
  const bool x_float = isFloatingType(dtypeOf(x)), y_float = isFloatingType(dtypeOf(y));
  auto rule = [&](DataType compute) -> std::optional<Result> {
    Result r;
    Num& o = r.num;
    const bool fl = isFloatingType(compute);
    const bool boolean = compute == DataType::Bool;
    const double lim = maxFinite(compute);
    o.exact = p.exact && q.exact;
    o.special = p.special || q.special;
    o.minAbs = 0;
    switch (b) {
      case Bin::Add:
      case Bin::Sub:
        o.mag = p.mag + q.mag;
        // a * b + c may be contracted to one FMA (NVRTC does by default): not bit-exact.
        if (p.product || q.product) o.exact = false;
        if (fl) {
          if (!o.exact && o.mag > kInexactMag) return std::nullopt;
          if (o.mag > lim) o.special = true;
        } else if (!boolean && o.mag > intLimit(compute)) {
          return std::nullopt;
        }
        break;
      case Bin::Mul:
        o.mag = mulBound(p.mag, q.mag);
        o.minAbs = p.minAbs * q.minAbs;
        o.product = true;
        if (fl) {
          if (!o.exact && o.mag > kInexactMag) return std::nullopt;
          if (o.mag > lim) o.special = true;
          if ((p.special && q.mag == 0) || (q.special && p.mag == 0)) o.special = true;
        } else if (!boolean && o.mag > intLimit(compute)) {
          return std::nullopt;
        }
        r.tol = std::max({1.0, ex * std::max(1.0, q.mag), ey * std::max(1.0, p.mag)});
        break;
      case Bin::Div: {
        // Always floating (true division).
        if (y.isConst) {
          double v = std::fabs(y.value);
          if (!p.exact && !(v >= 1.0 / 16)) return std::nullopt;
          o.mag = (v > 0 && std::isfinite(v)) ? p.mag / v : (v == 0 ? kInf : 0.0);
          o.special = o.special || v == 0 || !std::isfinite(o.mag);
          o.minAbs = std::isfinite(v) && v > 0 ? p.minAbs / v : 0.0;
          r.tol = std::max(1.0, ex / std::min(1.0, std::max(v, 1e-300)));
        } else {
          // A denominator must be exact or bounded away from 0 (else errors are amplified).
          bool safe_den = q.minAbs >= 0.5;
          if (q.zsign && !safe_den) return std::nullopt;
          if (!q.exact && !safe_den) return std::nullopt;
          if (!p.exact && !safe_den) return std::nullopt;
          o.mag = q.minAbs > 0 ? p.mag / q.minAbs : kInf;
          o.special = o.special || q.minAbs == 0;
          o.minAbs = std::isfinite(q.mag) && q.mag > 0 ? p.minAbs / q.mag : 0.0;
          r.tol = std::max({1.0, ex / std::min(1.0, std::max(q.minAbs, 1e-300)),
                            safe_den ? ey * p.mag / (q.minAbs * q.minAbs) : 0.0});
        }
        if (r.tol > kMaxTolScale) return std::nullopt;
        break;
      }
      case Bin::Pow:
        if (fl) {
          // Small constant integer exponents keep errors small; any other power must be exact.
          bool small_exp =
              y.isConst && (y.value == 0 || y.value == 1 || y.value == 2 || y.value == 3);
          if ((p.zsign || q.zsign) && !small_exp) return std::nullopt;
          if (!(p.exact && q.exact) && !(small_exp && p.mag <= 2)) return std::nullopt;
          o.exact = false;
          o.mag = small_exp ? std::pow(std::max(p.mag, 1.0), y.value) : kInf;
          o.special = o.special || !small_exp || o.mag > lim;
        } else if (boolean) {
          o.mag = 1;
        } else {
          // Integer powers are exact and wrap (loom_ipow); the result must stay in range, where
          // the reference holds it exactly. A negative exponent gives 0, 1 or -1.
          if (x.tensor < 0) return std::nullopt;
          const double e = y.isConst ? y.value : q.mag;
          o.mag = e < 0 ? 1.0 : std::pow(std::max(p.mag, 1.0), e);
          if (!(o.mag <= intLimit(compute))) return std::nullopt;
          if (!y.isConst) c_.features.insert("int-pow-by-tensor");
        }
        break;
      case Bin::Fmod:
        if (fl) {
          if (!(p.exact && q.exact)) return std::nullopt;
          o.mag = p.mag;
          o.special = true;
        } else {
          // Integer remainders are defined for every divisor (docs/ops.md: by 0 gives 0), so a
          // tensor divisor, zeros included, is fine: the result is no larger than the dividend.
          if (boolean || x.tensor < 0) return std::nullopt;
          if (y.isConst) {
            if (std::fabs(y.value) > intLimit(compute)) return std::nullopt;
            o.mag = y.value == 0 ? p.mag : std::min(p.mag, std::fabs(y.value));
            if (y.value == 0) c_.features.insert("int-remainder-by-zero");
          } else {
            o.mag = p.mag;
            c_.features.insert("int-remainder-by-tensor");
          }
        }
        break;
      case Bin::Maximum:
      case Bin::Minimum:
        o.mag = std::max(p.mag, q.mag);
        if (boolean) o.mag = 1;
        break;
      case Bin::Eq:
      case Bin::Ne:
      case Bin::Lt:
      case Bin::Le:
      case Bin::Gt:
      case Bin::Ge:
        if (!(p.exact && q.exact)) return std::nullopt;
        o = Num{};
        r.tol = 1;
        break;
      case Bin::And:
      case Bin::Or:
        if ((x_float && !p.exact) || (y_float && !q.exact)) return std::nullopt;
        o = Num{};
        r.tol = 1;
        break;
    }
    if (boolean && !comparison && !logical) {
      o.mag = 1;
      o.minAbs = 0;
    }
    return r;
  };
  auto build = [b](const std::vector<Operand>& a) -> TensorView* {
    switch (b) {
      case Bin::Add: return ops::add(a[0], a[1]);
      case Bin::Sub: return ops::sub(a[0], a[1]);
      case Bin::Mul: return ops::mul(a[0], a[1]);
      case Bin::Div: return ops::div(a[0], a[1]);
      case Bin::Pow: return ops::pow(a[0], a[1]);
      case Bin::Fmod: return ops::fmod(a[0], a[1]);
      case Bin::Maximum: return ops::maximum(a[0], a[1]);
      case Bin::Minimum: return ops::minimum(a[0], a[1]);
      case Bin::Eq: return ops::eq(a[0], a[1]);
      case Bin::Ne: return ops::ne(a[0], a[1]);
      case Bin::Lt: return ops::lt(a[0], a[1]);
      case Bin::Le: return ops::le(a[0], a[1]);
      case Bin::Gt: return ops::gt(a[0], a[1]);
      case Bin::Ge: return ops::ge(a[0], a[1]);
      case Bin::And: return ops::logicalAnd(a[0], a[1]);
      case Bin::Or: return ops::logicalOr(a[0], a[1]);
    }
    return nullptr;
  };
  return pointwise(binName(b), {x, y}, ct, rule, build);
}

int Generator::whereOp(const Opnd& cond, const Opnd& a, const Opnd& b) {
  if (cond.val->dtype() != DataType::Bool) return -1;
  std::array<Operand, 2> ops_arr{Operand(a.val), Operand(b.val)};
  const DataType ct = ops::computeType(ops_arr, PromotionKind::Default);
  const Num p = a.num, q = b.num;
  auto rule = [&](DataType compute) -> std::optional<Result> {
    Result r;
    r.num.exact = p.exact && q.exact;
    r.num.mag = std::max(p.mag, q.mag);
    r.num.special = p.special || q.special;
    r.num.minAbs = std::min(p.minAbs, q.minAbs);
    if (!r.num.exact && r.num.mag > kInexactMag) return std::nullopt;
    if (compute == DataType::Bool) r.num.mag = 1;
    return r;
  };
  auto build = [](const std::vector<Operand>& o) { return ops::where(o[0], o[1], o[2]); };
  return pointwise("where", {cond, a, b}, ct, rule, build);
}

int Generator::clampOp(const Opnd& x, const Opnd& lo, const Opnd& hi) {
  std::array<Operand, 3> ops_arr{Operand(x.val), Operand(lo.val), Operand(hi.val)};
  const DataType ct = ops::computeType(ops_arr, PromotionKind::Default);
  const Num p = x.num, l = lo.num, h = hi.num;
  const bool const_bounds = lo.isConst && hi.isConst;
  const double lv = lo.value, hv = hi.value;
  auto rule = [&](DataType compute) -> std::optional<Result> {
    Result r;
    r.num.exact = p.exact && l.exact && h.exact;
    r.num.special = p.special || l.special || h.special;
    r.num.mag = std::max(l.mag, h.mag);
    if (l.special || h.special) r.num.mag = std::max(r.num.mag, p.mag);
    if (!r.num.exact && r.num.mag > kInexactMag) return std::nullopt;
    if (const_bounds && lv > 0 && lv <= hv && !isIntegralType(compute)) r.num.minAbs = lv;
    if (const_bounds && isIntegralType(compute) && lv >= 1 && lv <= hv) r.num.minAbs = lv;
    if (compute == DataType::Bool) r.num.mag = 1;
    return r;
  };
  auto build = [](const std::vector<Operand>& o) { return ops::clamp(o[0], o[1], o[2]); };
  return pointwise("clamp", {x, lo, hi}, ct, rule, build);
}

int Generator::lerpOp(const Opnd& a, const Opnd& b, const Opnd& w) {
  std::array<Operand, 3> ops_arr{Operand(a.val), Operand(b.val), Operand(w.val)};
  const DataType ct = ops::computeType(ops_arr, PromotionKind::IntToFloat);
  const Num p = a.num, q = b.num, s = w.num;
  const double e = std::max({errScale(a), errScale(b), errScale(w)});
  auto rule = [&](DataType) -> std::optional<Result> {
    if (p.mag > 8 || q.mag > 8 || s.mag > 2) return std::nullopt;
    if (!s.exact && (p.mag + q.mag) > 8) return std::nullopt;
    Result r;
    r.num.exact = false;
    r.num.mag = p.mag + s.mag * (p.mag + q.mag);
    r.num.special = p.special || q.special || s.special;
    r.tol = std::max(1.0, e * std::max(1.0, s.mag) * 2);
    return r;
  };
  auto build = [](const std::vector<Operand>& o) { return ops::lerp(o[0], o[1], o[2]); };
  return pointwise("lerp", {a, b, w}, ct, rule, build);
}

std::optional<Num> castNum(const Num& in, DataType from, DataType to) {
  if (from == to) return in;
  Num o = in;
  o.product = false;
  // Truncation and != 0 are discontinuous: only exact values convert to integers and Bool. NaN,
  // infinities and values out of range saturate (NaN: 0), and integers narrow by wrapping
  // (docs/text-format.md, "Types"), so any exact value converts.
  if (isFloatingType(from) && !isFloatingType(to) && !in.exact) return std::nullopt;
  const bool saturates = isFloatingType(from) && isIntegralType(to) &&
                         (in.special || !(in.mag < intLimit(to)));
  if (to == DataType::Bool) {
    o = Num{};
  } else if (isIntegralType(to)) {
    // A saturated Int64 is 2^63 - 1 (or -2^63), past what integer math here keeps exact.
    o.mag = saturates && to == DataType::Int64 ? 0x1p63 : std::min(in.mag, intLimit(to));
    o.zsign = false;
    o.special = false;
  } else if (in.mag > maxFinite(to)) {
    o.special = true;
  }
  if (isFloatingType(to) && !o.exact && in.mag > kInexactMag) return std::nullopt;
  return o;
}

int Generator::castOp(int t, DataType to) {
  GenTensor x = ts_[size_t(t)];
  const DataType from = x.tv->dtype();
  if (from == to) return -1;
  std::optional<Num> cast_num = castNum(x.num, from, to);
  if (!cast_num) return -1;
  const Num o = *cast_num;
  if (isFloatingType(from) && isIntegralType(to) && (x.num.special || !(x.num.mag < intLimit(to)))) {
    c_.features.insert("cast-saturates");
  }
  if (from == DataType::Int64 && to == DataType::Int32 && !(x.num.mag <= kInt32Limit)) {
    c_.features.insert("cast-wraps");
  }
  TensorView* out = ops::cast(x.tv, to);
  ++ts_[size_t(t)].uses;
  int idx = adopt(out, x.dims, o, x.red, x.tol);
  note(name(idx) + " = cast(" + name(t) + ", " + std::string(dataTypeName(to)) + ")");
  return idx;
}

int Generator::bounded(int t, double limit, double bound, bool clamp_inf) {
  const GenTensor& x = ts_[size_t(t)];
  if (x.num.mag <= limit && !(clamp_inf && x.num.special)) return t;
  DataType dt = x.tv->dtype();
  Opnd lo = constantOfCategory(dt, -bound), hi = constantOfCategory(dt, bound);
  return clampOp(tensorOpnd(t), lo, hi);
}

}  // namespace loom::fuzz::detail
