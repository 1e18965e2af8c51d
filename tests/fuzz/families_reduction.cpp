// SPDX-License-Identifier: Apache-2.0
// Reductions (the builder and its axes) and the families built on them: reduce, welford,
// softmax, layerNorm, rmsNorm, biasGelu, normalization-like patterns, outer reductions.
#include <algorithm>

#include "fuzz/generator_internal.h"
#include "loom/ir/builder.h"

namespace loom::fuzz::detail {
namespace {

const char* redName(Red r) {
  static const char* names[] = {"sum", "prod", "max", "min", "mean"};
  return names[size_t(r)];
}

}  // namespace

// ---- Reductions -------------------------------------------------------------------------------

std::vector<int64_t> Generator::randomAxes(int64_t rank, bool allow_all) {
  if (rank == 0) return {};
  if (allow_all && rng_.chance(0.12)) return {};
  std::vector<int64_t> axes;
  double r = rng_.uniform();
  if (r < 0.45) {
    axes.push_back(rank - 1);
  } else if (r < 0.65) {
    axes.push_back(0);
  } else {
    for (int64_t d = 0; d < rank; ++d) {
      if (rng_.chance(0.5)) axes.push_back(d);
    }
    if (axes.empty()) axes.push_back(int64_t(rng_.below(uint64_t(rank))));
  }
  return axes;
}

std::vector<int64_t> Generator::spell(const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<int64_t> out = axes;
  if (rng_.chance(0.2)) {
    for (int64_t& a : out) a -= rank;
  }
  if (out.size() > 1 && rng_.chance(0.3)) std::reverse(out.begin(), out.end());
  return out;
}

int Generator::reduceOp(Red r, int t, std::vector<int64_t> axes, bool keepdim) {
  {
    const GenTensor& x = ts_[size_t(t)];
    const auto rank = int64_t(x.dims.size());
    if (rank == 0 && !axes.empty()) return -1;
    std::vector<bool> reduced(size_t(rank), axes.empty());
    for (int64_t a : axes) reduced[size_t(a)] = true;
    double n_max = 1;
    for (int64_t d = 0; d < rank; ++d) {
      if (reduced[size_t(d)]) n_max *= double(maxValue(x.dims[size_t(d)]));
    }
    const DataType dt = x.tv->dtype();
    const bool float_like = isFloatingType(dt) || r == Red::Mean;
    // Bound the input first where the reduction needs it.
    if ((r == Red::Sum || r == Red::Mean) && float_like) {
      t = bounded(t, kReduceMag, rng_.chance(0.5) ? 4.0 : 1.0);
    } else if (r == Red::Sum && !float_like && dt != DataType::Bool) {
      if (x.num.mag * n_max > kInt64Limit) t = bounded(t, 0, 7.0);
    } else if (r == Red::Prod) {
      if (float_like) {
        // Infinities too: inf times a product that underflows in Float32 (but not in the
        // reference's Float64) is NaN in one and inf in the other.
        t = bounded(t, 1.0, 1.0, /*clamp_inf=*/true);
      } else if (dt != DataType::Bool && std::pow(std::max(x.num.mag, 1.0), n_max) > kInt64Limit) {
        t = bounded(t, 1.0, 1.0);
      }
    }
    if (t < 0) return -1;
  }
  const GenTensor& x = ts_[size_t(t)];
  const auto rank = int64_t(x.dims.size());
  std::vector<bool> reduced(size_t(rank), axes.empty());
  for (int64_t a : axes) reduced[size_t(a)] = true;
  std::vector<GenDim> dims;
  std::vector<int> red = x.red;
  double n_max = 1;
  bool may_be_empty = false;
  bool outer = rank >= 2 && reduced[0];
  for (int64_t d = 0; d < rank; ++d) {
    const GenDim& g = x.dims[size_t(d)];
    if (!reduced[size_t(d)]) {
      dims.push_back(g);
      continue;
    }
    if (keepdim) dims.push_back({DimKind::Bcast, -1});
    if (g.kind != DimKind::Bcast) red.push_back(g.cls);
    n_max *= double(maxValue(g));
    may_be_empty = may_be_empty || mayBeZero(g);
  }
  const DataType dt = x.tv->dtype();
  Num o = x.num;
  o.product = false;
  o.minAbs = 0;
  double tol = std::max(errScale(tensorOpnd(t)), std::max(1.0, std::min(x.num.mag, kReduceMag)));
  switch (r) {
    case Red::Sum:
      if (isFloatingType(dt)) {
        o.exact = false;
        o.mag = n_max * x.num.mag;
      } else {
        o.exact = true;
        o.mag = n_max * (dt == DataType::Bool ? 1.0 : x.num.mag);
        tol = 1;
      }
      break;
    case Red::Mean:
      o.exact = false;
      o.special = x.num.special || may_be_empty;
      break;
    case Red::Prod:
      if (isFloatingType(dt)) {
        o.exact = false;
        o.mag = 1;
      } else {
        o.exact = true;
        o.mag = dt == DataType::Bool ? 1.0 : std::pow(std::max(x.num.mag, 1.0), n_max);
        tol = 1;
      }
      break;
    case Red::Max:
    case Red::Min:
      tol = std::max(1.0, errScale(tensorOpnd(t)));
      if (isFloatingType(dt)) o.zsign = true;
      if (may_be_empty) {
        if (isFloatingType(dt)) {
          o.special = true;
        } else if (dt != DataType::Bool) {
          o.mag = dt == DataType::Int32 ? 0x1p31 : 0x1p63;
        }
      }
      break;
  }
  if (tol > kMaxTolScale) return -1;
  std::vector<int64_t> spelled = spell(axes, rank);
  TensorView* out = nullptr;
  // A third of the floating sums (not keepdim) start at the init 1.5 instead of 0: the
  // reference adds it once, kernels must too (reduction_inits.h). Chosen without a random draw,
  // so the other seeds' fusions stay as they were.
  const bool with_init = r == Red::Sum && isFloatingType(dt) && !keepdim && ts_.size() % 3 == 1;
  if (with_init) o.mag += 1.5;
  switch (r) {
    case Red::Sum: out = ops::sum(x.tv, spelled, keepdim); break;
    case Red::Prod: out = ops::prod(x.tv, spelled, keepdim); break;
    case Red::Max: out = ops::max(x.tv, spelled, keepdim); break;
    case Red::Min: out = ops::min(x.tv, spelled, keepdim); break;
    case Red::Mean: out = ops::mean(x.tv, spelled, keepdim); break;
  }
  if (with_init) {
    if (auto* sum = out->definition()->dynCast<ir::ReductionOp>()) {
      ir::TensorView* in = sum->in();
      c_.fusion->removeExpr(sum);
      ir::IrBuilder::create<ir::ReductionOp>(
          ir::ReductionOpType::Sum, ir::IrBuilder::constant(ir::ScalarValue(1.5), out->dtype()),
          out, in);
      c_.features.insert("reduction-init");
    }
  }
  ++ts_[size_t(t)].uses;
  if (outer) c_.features.insert("outer-reduction");
  if (isReducedPrecision(dt)) c_.features.insert("16-bit-reduction");
  if (rank > 0) c_.features.insert("reduction");
  int idx = adopt(out, dims, o, red, tol);
  note(name(idx) + " = " + redName(r) + "(" + name(t) + ", " + shapeText(spelled) +
       (keepdim ? ", keepdim" : "") + ")");
  return idx;
}

bool Generator::famReduce() {
  int t = -1;
  if (rng_.chance(0.3)) {
    t = pick([](const GenTensor& g) { return isReducedPrecision(g.tv->dtype()); });
  }
  if (t < 0) t = pick();
  if (t < 0) return false;
  static const Red kinds[] = {Red::Sum, Red::Prod, Red::Max, Red::Min, Red::Mean};
  static const double weights[] = {4, 1, 2, 2, 2};
  Red r = kinds[rng_.weighted(weights)];
  const auto rank = int64_t(ts_[size_t(t)].dims.size());
  return reduceOp(r, t, randomAxes(rank, true), rng_.chance(0.35)) >= 0;
}

bool Generator::famWelford() {
  int t = pick([](const GenTensor& g) { return !g.dims.empty(); });
  if (t < 0) return false;
  t = bounded(t, 4.0, 4.0);
  if (t < 0) return false;
  const GenTensor x = ts_[size_t(t)];
  const auto rank = int64_t(x.dims.size());
  std::vector<int64_t> axes = randomAxes(rank, false);
  std::vector<bool> reduced(size_t(rank), false);
  for (int64_t a : axes) reduced[size_t(a)] = true;
  double n_max = 1;
  bool may_be_empty = false;
  std::vector<int> red = x.red;
  for (int64_t d = 0; d < rank; ++d) {
    if (!reduced[size_t(d)]) continue;
    const GenDim& g = x.dims[size_t(d)];
    n_max *= double(maxValue(g));
    may_be_empty = may_be_empty || mayBeZero(g);
    if (g.kind != DimKind::Bcast) red.push_back(g.cls);
  }
  const double m = x.num.mag;
  const double tol = std::max({errScale(tensorOpnd(t)) * 2 * std::max(1.0, m), m * m, 1.0});
  if (tol > kMaxTolScale) return false;
  auto dims_for = [&](bool keepdim) {
    std::vector<GenDim> dims;
    for (int64_t d = 0; d < rank; ++d) {
      if (!reduced[size_t(d)]) {
        dims.push_back(x.dims[size_t(d)]);
      } else if (keepdim) {
        dims.push_back({DimKind::Bcast, -1});
      }
    }
    return dims;
  };
  Num mean_num{false, m, x.num.special || may_be_empty, 0.0, false};
  // var = m2 / max(N - correction, 0): inf or NaN when N <= correction.
  Num var_num{false, 4 * m * m + 1, true, 0.0, false};
  std::vector<int64_t> spelled = spell(axes, rank);
  double r = rng_.uniform();
  ++ts_[size_t(t)].uses;
  if (rank >= 2 && reduced[0]) c_.features.insert("outer-reduction");
  c_.features.insert("welford");
  if (r < 0.35) {
    ops::WelfordResult w = ops::welford(x.tv, spelled);
    auto dims = dims_for(false);
    int a = adopt(w.avg, dims, mean_num, red, tol);
    int m2 = adopt(w.m2, dims, Num{false, n_max * 4 * m * m, x.num.special, 0.0, false}, red, tol);
    int n = adopt(w.n, dims, Num{true, n_max, false, 0.0, false}, {}, 1.0);
    note(name(a) + ", " + name(m2) + ", " + name(n) + " = welford(" + name(t) + ", " +
         shapeText(spelled) + ")");
    return true;
  }
  double correction = rng_.pick(std::vector<double>{0.0, 1.0, 1.0, 2.0});
  bool keepdim = rng_.chance(0.35);
  if (r < 0.7) {
    ops::VarMeanResult vm = ops::varMean(x.tv, spelled, correction, keepdim);
    auto dims = dims_for(keepdim);
    int v = adopt(vm.var, dims, var_num, red, tol);
    int mu = adopt(vm.mean, dims, mean_num, red, tol);
    note(name(v) + ", " + name(mu) + " = var_mean(" + name(t) + ", " + shapeText(spelled) +
         ", correction " + numText(correction) + (keepdim ? ", keepdim" : "") + ")");
    return true;
  }
  TensorView* v = ops::variance(x.tv, spelled, correction, keepdim);
  int vi = adopt(v, dims_for(keepdim), var_num, red, tol);
  note(name(vi) + " = variance(" + name(t) + ", " + shapeText(spelled) + ", correction " +
       numText(correction) + (keepdim ? ", keepdim" : "") + ")");
  return true;
}

bool Generator::famSoftmax() {
  int t = pick([](const GenTensor& g) { return !g.dims.empty(); });
  if (t < 0) return false;
  if (!ts_[size_t(t)].num.exact) t = bounded(t, kReduceMag, 4.0);
  if (t < 0) return false;
  const GenTensor x = ts_[size_t(t)];
  const auto rank = int64_t(x.dims.size());
  int64_t d = rng_.chance(0.6) ? rank - 1 : int64_t(rng_.below(uint64_t(rank)));
  int64_t spelled = rng_.chance(0.3) ? d - rank : d;
  const GenDim& g = x.dims[size_t(d)];
  std::vector<int> red = x.red;
  if (g.kind != DimKind::Bcast) red.push_back(g.cls);
  double tol = std::max(1.0, errScale(tensorOpnd(t)) * 2);
  if (tol > kMaxTolScale) return false;
  bool log = rng_.chance(0.4);
  TensorView* out = log ? ops::logSoftmax(x.tv, spelled) : ops::softmax(x.tv, spelled);
  Num o;
  o.exact = false;
  o.special = x.num.special || (log && mayBeZero(g));
  o.mag = log ? 2 * std::min(x.num.mag, 1e30) + std::log(double(maxValue(g)) + 1) + 1 : 1.0;
  ++ts_[size_t(t)].uses;
  if (rank >= 2 && d == 0) c_.features.insert("outer-reduction");
  if (isReducedPrecision(x.tv->dtype())) c_.features.insert("16-bit-reduction");
  c_.features.insert("normalization");
  int idx = adopt(out, x.dims, o, red, tol);
  note(name(idx) + " = " + (log ? "log_softmax(" : "softmax(") + name(t) + ", " +
       std::to_string(spelled) + ")");
  return true;
}

int Generator::normParam(int t, int64_t n) {
  const GenTensor x = ts_[size_t(t)];
  std::vector<GenDim> want(x.dims.end() - n, x.dims.end());
  auto matches = [&](const GenTensor& g) {
    if (int64_t(g.dims.size()) != n || g.num.mag > 4 || !g.num.exact) return false;
    for (int64_t i = 0; i < n; ++i) {
      const GenDim& a = g.dims[size_t(i)];
      const GenDim& b = want[size_t(i)];
      if ((a.kind == DimKind::Bcast) != (b.kind == DimKind::Bcast)) return false;
      if (a.kind != DimKind::Bcast && value(a) != value(b)) return false;
      if (a.kind == DimKind::Expanded || b.kind == DimKind::Expanded) return false;
    }
    return true;
  };
  int p = pick(matches);
  if (p >= 0 && rng_.chance(0.7)) {
    for (int64_t i = 0; i < n; ++i) {
      if (want[size_t(i)].kind != DimKind::Bcast)
        unify(ts_[size_t(p)].dims[size_t(i)].cls, want[size_t(i)].cls);
    }
    return p;
  }
  if (tensor_inputs_ >= opts_.maxTensorInputs) return -1;
  if (std::any_of(want.begin(), want.end(),
                  [](const GenDim& d) { return d.kind == DimKind::Expanded; }))
    return -1;
  int64_t elems = 1;
  for (const GenDim& d : want) elems *= std::max<int64_t>(1, value(d));
  if (elems > opts_.maxInputNumel) return -1;
  std::vector<int> classes;
  for (const GenDim& d : want) classes.push_back(d.kind == DimKind::Bcast ? -1 : d.cls);
  static const DataType types[] = {DataType::Float32, DataType::Float16, DataType::BFloat16,
                                   DataType::Float64};
  int w = addTensorInput(classes, types[rng_.below(4)], false);
  // Keep weights well conditioned: an input weight of Wide or Special values is clamped.
  if (ts_[size_t(w)].num.mag > 4 || ts_[size_t(w)].num.special) {
    w = clampOp(tensorOpnd(w), constant(-2.0), constant(2.0));
    if (w >= 0 && ts_[size_t(w)].num.special) return -1;
  }
  return w;
}

bool Generator::famLayerNorm() {
  int t = pick([](const GenTensor& g) { return !g.dims.empty(); });
  if (t < 0) return false;
  t = bounded(t, kReduceMag, 4.0);
  if (t < 0) return false;
  const auto rank = int64_t(ts_[size_t(t)].dims.size());
  int64_t n = rng_.chance(0.6) ? 1 : rng_.range(1, rank);
  int w = rng_.chance(0.6) ? normParam(t, n) : -1;
  int b = rng_.chance(0.5) ? normParam(t, n) : -1;
  const GenTensor x = ts_[size_t(t)];
  double eps = rng_.pick(std::vector<double>{0.1, 0.5});
  std::vector<int> red = x.red;
  double n_max = 1;
  std::vector<GenDim> stat_dims = x.dims;
  for (int64_t d = rank - n; d < rank; ++d) {
    const GenDim& g = x.dims[size_t(d)];
    if (g.kind != DimKind::Bcast) red.push_back(g.cls);
    n_max *= double(maxValue(g));
    stat_dims[size_t(d)] = {DimKind::Bcast, -1};
  }
  double wmag = w >= 0 ? ts_[size_t(w)].num.mag : 1.0;
  double bmag = b >= 0 ? ts_[size_t(b)].num.mag : 0.0;
  double amp = 1.0 / std::sqrt(eps);
  double tol =
      std::max(errScale(tensorOpnd(t)), std::max(1.0, x.num.mag)) * amp * std::max(1.0, wmag);
  if (tol > kMaxTolScale) return false;
  ops::LayerNormResult r = ops::layerNorm(x.tv, n, w >= 0 ? ts_[size_t(w)].tv : nullptr,
                                          b >= 0 ? ts_[size_t(b)].tv : nullptr, eps);
  ++ts_[size_t(t)].uses;
  if (w >= 0) ++ts_[size_t(w)].uses;
  if (b >= 0) ++ts_[size_t(b)].uses;
  Num y{false, std::min(std::sqrt(n_max), 2 * x.num.mag * amp) * wmag + bmag, x.num.special, 0.0,
        false};
  int yi = adopt(r.y, x.dims, y, red, tol);
  std::string outs = name(yi);
  if (rng_.chance(0.4)) {
    int mi = adopt(r.mean, stat_dims, Num{false, x.num.mag, x.num.special, 0.0, false}, red, tol);
    int ri = adopt(r.rstd, stat_dims, Num{false, amp, x.num.special, 0.0, false}, red, tol);
    outs += ", " + name(mi) + ", " + name(ri);
  }
  c_.features.insert("normalization");
  if (isReducedPrecision(x.tv->dtype())) c_.features.insert("16-bit-reduction");
  note(outs + " = layer_norm(" + name(t) + ", " + std::to_string(n) + ", " +
       (w >= 0 ? name(w) : "none") + ", " + (b >= 0 ? name(b) : "none") + ", eps " + numText(eps) +
       ")");
  return true;
}

bool Generator::famRmsNorm() {
  int t = pick([](const GenTensor& g) { return !g.dims.empty(); });
  if (t < 0) return false;
  t = bounded(t, kReduceMag, 4.0);
  if (t < 0) return false;
  const auto rank = int64_t(ts_[size_t(t)].dims.size());
  int64_t n = rng_.chance(0.6) ? 1 : rng_.range(1, rank);
  int w = rng_.chance(0.6) ? normParam(t, n) : -1;
  const GenTensor x = ts_[size_t(t)];
  double eps = rng_.pick(std::vector<double>{0.5, 1.0});
  std::vector<int> red = x.red;
  double n_max = 1;
  for (int64_t d = rank - n; d < rank; ++d) {
    const GenDim& g = x.dims[size_t(d)];
    if (g.kind != DimKind::Bcast) red.push_back(g.cls);
    n_max *= double(maxValue(g));
  }
  double wmag = w >= 0 ? ts_[size_t(w)].num.mag : 1.0;
  double amp = 1.0 / std::sqrt(eps);
  double tol =
      std::max(errScale(tensorOpnd(t)), std::max(1.0, x.num.mag)) * amp * 2 * std::max(1.0, wmag);
  if (tol > kMaxTolScale) return false;
  TensorView* out = ops::rmsNorm(x.tv, n, w >= 0 ? ts_[size_t(w)].tv : nullptr, eps);
  ++ts_[size_t(t)].uses;
  if (w >= 0) ++ts_[size_t(w)].uses;
  Num y{false, std::min(std::sqrt(n_max), x.num.mag * amp) * wmag, x.num.special, 0.0, false};
  int yi = adopt(out, x.dims, y, red, tol);
  c_.features.insert("normalization");
  note(name(yi) + " = rms_norm(" + name(t) + ", " + std::to_string(n) + ", " +
       (w >= 0 ? name(w) : "none") + ", eps " + numText(eps) + ")");
  return true;
}

bool Generator::famBiasGelu() {
  int t = pick([](const GenTensor& g) { return !g.dims.empty() && g.num.mag <= 4; });
  if (t < 0) return false;
  int b = partner(t, [&](const GenTensor& g) {
    return g.dims.size() <= ts_[size_t(t)].dims.size() && g.num.mag <= 4;
  });
  if (b < 0) b = normParam(t, 1);
  if (b < 0) return false;
  const GenTensor x = ts_[size_t(t)];
  const GenTensor& bias = ts_[size_t(b)];
  if (bias.dims.size() > x.dims.size()) return false;
  auto shape = broadcastShape({t, b});
  if (!shape || !fits(*shape)) return false;
  if ((!x.num.exact || !bias.num.exact) && x.num.mag + bias.num.mag > 8) return false;
  double tol = std::max({1.0, errScale(tensorOpnd(t)), errScale(tensorOpnd(b))}) * 2;
  if (tol > kMaxTolScale) return false;
  bool tanh_approx = rng_.chance(0.5);
  TensorView* out = ops::biasGelu(
      x.tv, bias.tv, tanh_approx ? ops::GeluApproximation::Tanh : ops::GeluApproximation::None);
  commitShape({t, b});
  shape = broadcastShape({t, b});
  ++ts_[size_t(t)].uses;
  ++ts_[size_t(b)].uses;
  std::vector<int> red = redProduct(x.red) >= redProduct(bias.red) ? x.red : bias.red;
  Num o{false, x.num.mag + bias.num.mag, x.num.special || bias.num.special, 0.0, false};
  int idx = adopt(out, *shape, o, red, tol);
  note(name(idx) + " = bias_gelu(" + name(t) + ", " + name(b) + (tanh_approx ? ", tanh)" : ")"));
  return true;
}

bool Generator::famNormPattern() {
  int t = pick([](const GenTensor& g) { return !g.dims.empty(); });
  if (t < 0) return false;
  const auto rank = int64_t(ts_[size_t(t)].dims.size());
  std::vector<int64_t> axes =
      rng_.chance(0.6) ? std::vector<int64_t>{rank - 1} : randomAxes(rank, false);
  std::sort(axes.begin(), axes.end());
  static const Red kinds[] = {Red::Max, Red::Sum, Red::Mean, Red::Min};
  Red r = kinds[rng_.below(4)];
  // Reductions bound their input themselves; keep the bounded input to combine with.
  if (r == Red::Sum || r == Red::Mean) t = bounded(t, kReduceMag, 4.0);
  if (t < 0) return false;
  bool keepdim = rng_.chance(0.6);
  int s = reduceOp(r, t, axes, keepdim);
  if (s < 0) return false;
  if (!keepdim) {
    // Broadcast back by hand, as frontends do.
    std::vector<bool> flags(size_t(rank), false);
    for (int64_t a : axes) flags[size_t(a)] = true;
    s = broadcastOp(s, flags);
    if (s < 0) return false;
  }
  c_.features.insert("normalization");
  double m = rng_.uniform();
  if (r == Red::Max || r == Red::Min) {
    int d = binaryOp(Bin::Sub, tensorOpnd(t), tensorOpnd(s));
    if (d < 0) return false;
    if (m < 0.5) unaryOp(Un::Exp, d);
    return true;
  }
  if (m < 0.4) return binaryOp(Bin::Sub, tensorOpnd(t), tensorOpnd(s)) >= 0;
  if (m < 0.7) return binaryOp(Bin::Mul, tensorOpnd(t), tensorOpnd(s)) >= 0;
  // x / (|s| + 1): a denominator bounded away from zero.
  int a = unaryOp(Un::Abs, s);
  if (a < 0) return false;
  int den = binaryOp(Bin::Add, tensorOpnd(a), constant(1.0));
  if (den < 0) return false;
  ts_[size_t(den)].num.minAbs = std::max(ts_[size_t(den)].num.minAbs, 1.0);
  return binaryOp(Bin::Div, tensorOpnd(t), tensorOpnd(den)) >= 0;
}

bool Generator::famOuterReduction() {
  int t = pick([](const GenTensor& g) { return g.dims.size() >= 2; });
  if (t < 0) return false;
  static const Red kinds[] = {Red::Sum, Red::Max, Red::Mean, Red::Min};
  Red r = kinds[rng_.below(4)];
  if (r == Red::Sum || r == Red::Mean) t = bounded(t, kReduceMag, 4.0);
  if (t < 0) return false;
  int s = reduceOp(r, t, {0}, rng_.chance(0.4));
  if (s < 0) return false;
  if (rng_.chance(0.5)) {
    // The reduced row broadcasts against the input (dim 0 is the leading one).
    binaryOp(rng_.chance(0.5) ? Bin::Sub : Bin::Mul, tensorOpnd(t), tensorOpnd(s));
  }
  return true;
}

// The outer-persistent scheduler's shape: a statistic over the leading dims (the innermost kept,
// as NHWC batch-norm keeps C) used again with the same data, and half the time a variance of the
// centered data dividing it.
bool Generator::famOuterPersistent() {
  int t = pick([](const GenTensor& g) {
    return g.dims.size() >= 2 && g.dims.back().kind != DimKind::Bcast;
  });
  if (t < 0) return false;
  const auto rank = int64_t(ts_[size_t(t)].dims.size());
  std::vector<int64_t> axes;
  const auto lead = int64_t(1 + rng_.below(uint64_t(rank - 1)));
  for (int64_t a = 0; a < lead; ++a) axes.push_back(a);
  t = bounded(t, kReduceMag, 4.0);
  if (t < 0) return false;
  int s = reduceOp(rng_.chance(0.7) ? Red::Mean : Red::Sum, t, axes, /*keepdim=*/true);
  if (s < 0) return false;
  c_.features.insert("normalization");
  int d = binaryOp(Bin::Sub, tensorOpnd(t), tensorOpnd(s));
  if (d < 0 || !rng_.chance(0.5)) return d >= 0;
  int sq = binaryOp(Bin::Mul, tensorOpnd(d), tensorOpnd(d));
  if (sq < 0) return true;
  int v = reduceOp(Red::Mean, sq, axes, /*keepdim=*/true);
  if (v < 0) return true;
  int den = binaryOp(Bin::Add, tensorOpnd(v), constant(1.0));
  if (den < 0) return true;
  ts_[size_t(den)].num.minAbs = std::max(ts_[size_t(den)].num.minAbs, 1.0);
  binaryOp(Bin::Div, tensorOpnd(d), tensorOpnd(den));
  return true;
}

}  // namespace loom::fuzz::detail
