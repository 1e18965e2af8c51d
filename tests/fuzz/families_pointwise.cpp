// SPDX-License-Identifier: Apache-2.0
// The pointwise op families: unary, predicates, binary (scalar operands too), comparisons,
// logical ops, where, clamp, lerp, casts, a small tensor against a larger one, fan-out.
#include <algorithm>

#include "fuzz/generator_internal.h"

namespace loom::fuzz::detail {

bool Generator::famUnaryFloat() {
  int t = pick();
  if (t < 0) return false;
  static const Un ops_list[] = {Un::Exp,     Un::Exp2,       Un::Log, Un::Log2, Un::Sqrt,
                                Un::Rsqrt,   Un::Reciprocal, Un::Sin, Un::Cos,  Un::Tanh,
                                Un::Sigmoid, Un::Silu,       Un::Erf, Un::Gelu, Un::GeluTanh};
  Un u = ops_list[rng_.below(std::size(ops_list))];
  return unaryOp(u, t) >= 0;
}

bool Generator::famUnaryKeep() {
  int t = pick();
  if (t < 0) return false;
  static const Un ops_list[] = {Un::Neg,  Un::Abs,   Un::Relu, Un::Floor,
                                Un::Ceil, Un::Round, Un::Sign};
  return unaryOp(ops_list[rng_.below(std::size(ops_list))], t) >= 0;
}

bool Generator::famPredicate() {
  int t = pick();
  if (t < 0) return false;
  static const Un ops_list[] = {Un::IsNan, Un::IsInf, Un::LogicalNot};
  return unaryOp(ops_list[rng_.below(std::size(ops_list))], t) >= 0;
}

bool Generator::famUnaryMath() {
  int t = pick();
  if (t < 0) return false;
  static const Un ops_list[] = {Un::Atan,  Un::Erfc,    Un::Asinh,
                                Un::Trunc, Un::Signbit, Un::IsFinite};
  return unaryOp(ops_list[rng_.below(std::size(ops_list))], t) >= 0;
}

bool Generator::famBinary() {
  int a = pick();
  if (a < 0) return false;
  static const Bin ops_list[] = {Bin::Add, Bin::Sub,  Bin::Mul,     Bin::Div,
                                 Bin::Pow, Bin::Fmod, Bin::Maximum, Bin::Minimum};
  static const double weights[] = {4, 3, 4, 2, 1, 1, 2, 2};
  Bin b = ops_list[rng_.weighted(weights)];
  Opnd x = tensorOpnd(a), y;
  int p = rng_.chance(0.35) ? -1 : partner(a);
  y = p >= 0 ? tensorOpnd(p) : randomScalar(ts_[size_t(a)].tv->dtype(), false);
  if (y.tensor < 0 && rng_.chance(0.2)) std::swap(x, y);
  return binaryOp(b, x, y) >= 0;
}

bool Generator::famSpecialScalar() {
  int a = pick();
  if (a < 0) return false;
  static const Bin ops_list[] = {Bin::Add,     Bin::Sub, Bin::Mul, Bin::Div, Bin::Maximum,
                                 Bin::Minimum, Bin::Eq,  Bin::Lt,  Bin::Ge,  Bin::Ne};
  Bin b = ops_list[rng_.below(std::size(ops_list))];
  Opnd y = randomScalar(ts_[size_t(a)].tv->dtype(), true);
  Opnd x = tensorOpnd(a);
  if (rng_.chance(0.25)) std::swap(x, y);
  int r = binaryOp(b, x, y);
  if (r >= 0) c_.features.insert("special-scalar");
  return r >= 0;
}

bool Generator::famCompare() {
  auto exact = [](const GenTensor& t) { return t.num.exact; };
  int a = pick(exact);
  if (a < 0) return false;
  static const Bin ops_list[] = {Bin::Eq, Bin::Ne, Bin::Lt, Bin::Le, Bin::Gt, Bin::Ge};
  Bin b = ops_list[rng_.below(std::size(ops_list))];
  int p = rng_.chance(0.4) ? -1 : partner(a, exact);
  Opnd y = p >= 0 ? tensorOpnd(p) : randomScalar(ts_[size_t(a)].tv->dtype(), true);
  Opnd x = tensorOpnd(a);
  if (y.tensor < 0 && rng_.chance(0.2)) std::swap(x, y);
  return binaryOp(b, x, y) >= 0;
}

bool Generator::famLogical() {
  auto ok = [](const GenTensor& t) { return t.num.exact; };
  int a = pick(ok);
  if (a < 0) return false;
  int p = rng_.chance(0.3) ? -1 : partner(a, ok);
  Opnd y = p >= 0 ? tensorOpnd(p) : constant(rng_.chance(0.5));
  return binaryOp(rng_.chance(0.5) ? Bin::And : Bin::Or, tensorOpnd(a), y) >= 0;
}

bool Generator::famWhere() {
  int c = pick([](const GenTensor& t) { return t.tv->dtype() == DataType::Bool; });
  if (c < 0) {
    // Make a condition first.
    int a = pick([](const GenTensor& t) { return t.num.exact; });
    if (a < 0) return false;
    c = binaryOp(rng_.chance(0.5) ? Bin::Gt : Bin::Le, tensorOpnd(a), constant(0.0));
    if (c < 0) return false;
  }
  int a = rng_.chance(0.25) ? -1 : partner(c);
  int b = rng_.chance(0.35) ? -1 : partner(c);
  DataType dt = a >= 0 ? ts_[size_t(a)].tv->dtype() : DataType::Float32;
  Opnd x = a >= 0 ? tensorOpnd(a) : randomScalar(dt, true);
  Opnd y = b >= 0 ? tensorOpnd(b) : randomScalar(dt, true);
  return whereOp(tensorOpnd(c), x, y) >= 0;
}

bool Generator::famClamp() {
  int t = pick();
  if (t < 0) return false;
  DataType dt = ts_[size_t(t)].tv->dtype();
  if (dt == DataType::Bool) return false;
  Opnd lo, hi;
  if (rng_.chance(0.2)) {
    int p = partner(t);
    int q = partner(t);
    if (p < 0 || q < 0) return false;
    lo = tensorOpnd(p);
    hi = tensorOpnd(q);
  } else {
    static const std::vector<std::pair<double, double>> bounds = {
        {-1, 1}, {0, 4}, {-0.5, 0.25}, {0.5, 2}, {-3, 7}, {2, -2}, {-100, 100}, {1, 8}};
    auto [l, h] = rng_.pick(bounds);
    lo = constantOfCategory(dt, l);
    hi = constantOfCategory(dt, h);
  }
  return clampOp(tensorOpnd(t), lo, hi) >= 0;
}

bool Generator::famLerp() {
  int a = pick([](const GenTensor& t) { return t.num.mag <= 8; });
  if (a < 0) return false;
  int b = rng_.chance(0.3) ? -1 : partner(a, [](const GenTensor& t) { return t.num.mag <= 8; });
  Opnd y = b >= 0 ? tensorOpnd(b) : constant(rng_.pick(std::vector<double>{1.0, -0.5, 2.0}));
  Opnd w;
  int c = rng_.chance(0.3) ? partner(a, [](const GenTensor& t) { return t.num.mag <= 2; }) : -1;
  w = c >= 0 ? tensorOpnd(c) : constant(rng_.pick(std::vector<double>{0.25, 0.5, 0.75, 1.5, -0.5}));
  return lerpOp(tensorOpnd(a), y, w) >= 0;
}

bool Generator::famCast() {
  int t = pick();
  if (t < 0) return false;
  static const DataType types[] = {DataType::Bool,    DataType::Int32,    DataType::Int64,
                                   DataType::Float16, DataType::BFloat16, DataType::Float32,
                                   DataType::Float64};
  return castOp(t, types[rng_.below(std::size(types))]) >= 0;
}

bool Generator::famBroadcastCombine() {
  int s = pick([](const GenTensor& g) {
    return g.dims.size() < 4 || std::any_of(g.dims.begin(), g.dims.end(), [](const GenDim& d) {
             return d.kind == DimKind::Bcast;
           });
  });
  if (s < 0) return false;
  int64_t small = numel(ts_[size_t(s)].dims);
  int l = partner(s, [&](const GenTensor& g) {
    return numel(g.dims) > small || g.dims.size() > ts_[size_t(s)].dims.size();
  });
  if (l < 0) return false;
  static const Bin ops_list[] = {Bin::Add, Bin::Mul, Bin::Sub, Bin::Maximum};
  Bin b = ops_list[rng_.below(4)];
  return rng_.chance(0.5) ? binaryOp(b, tensorOpnd(s), tensorOpnd(l)) >= 0
                          : binaryOp(b, tensorOpnd(l), tensorOpnd(s)) >= 0;
}

bool Generator::famFanOut() {
  int t = pick([](const GenTensor& g) { return g.input < 0; });
  if (t < 0) return false;
  static const Un first[] = {Un::Neg, Un::Abs, Un::Relu, Un::Tanh, Un::Sigmoid, Un::Exp};
  int a = unaryOp(first[rng_.below(std::size(first))], t);
  int b = binaryOp(rng_.chance(0.5) ? Bin::Mul : Bin::Add, tensorOpnd(t),
                   randomScalar(ts_[size_t(t)].tv->dtype(), false));
  if (a >= 0 || b >= 0) c_.features.insert("fan-out");
  return a >= 0 || b >= 0;
}

}  // namespace loom::fuzz::detail
