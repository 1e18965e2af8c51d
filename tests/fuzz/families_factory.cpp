// SPDX-License-Identifier: Apache-2.0
// The factory families: full/zeros/ones and iota/arange, alone or combined with a tensor.
#include <algorithm>

#include "fuzz/generator_internal.h"
#include "loom/ir/builder.h"

namespace loom::fuzz::detail {
namespace {

// Whether v is a value of dtype dt (finite, with few enough significant bits).
bool representable(double v, DataType dt) {
  if (v == 0) return true;
  if (!std::isfinite(v) || std::fabs(v) > maxFinite(dt)) return false;
  int bits = 53;
  double smallest = 0x1p-1022;
  switch (dt) {
    case DataType::Float16:
      bits = 11;
      smallest = 0x1p-14;
      break;
    case DataType::BFloat16:
      bits = 8;
      smallest = 0x1p-126;
      break;
    case DataType::Float32:
      bits = 24;
      smallest = 0x1p-126;
      break;
    case DataType::Float64: break;
    default: return v == std::trunc(v) && std::fabs(v) <= intLimit(dt);
  }
  if (std::fabs(v) < smallest) return false;
  int e = 0;
  const double m = std::frexp(std::fabs(v), &e);
  const double scaled = std::ldexp(m, bits);
  return scaled == std::trunc(scaled);
}

// v rounded to dtype dt (the rounding iota applies to start and step), as far as it matters
// here: exact values stay, others are marked by `exact`.
double roundedTo(double v, DataType dt, bool* exact) {
  if (representable(v, dt)) return v;
  *exact = false;
  return dt == DataType::Float32 ? double(float(v)) : v;
}

}  // namespace

bool Generator::famFull() {
  std::vector<ops::Size> shape;
  std::vector<GenDim> dims;
  const int p =
      rng_.chance(0.65) ? pick([](const GenTensor& g) { return g.dims.size() <= 4; }) : -1;
  if (p >= 0) {
    // p's shape (some dims 1), so that the result combines with it.
    const std::vector<GenDim> like = ts_[size_t(p)].dims;
    for (const GenDim& g : like) {
      if (g.kind == DimKind::Bcast || rng_.chance(0.15)) {
        shape.emplace_back(int64_t(1));
        dims.push_back({DimKind::Bcast, -1});
      } else {
        shape.push_back(sizeFor(g.cls, true));
        // A constant 1 (a pinned size 1) is a broadcast.
        dims.push_back(shape.back().constant() == 1 ? GenDim{DimKind::Bcast, -1}
                                                    : GenDim{DimKind::Iter, g.cls});
      }
    }
  } else {
    const int64_t rank = rng_.range(0, 3);
    for (int64_t i = 0; i < rank; ++i) {
      const int64_t v = rng_.chance(0.1) ? 0 : rng_.range(1, 24);
      if (rng_.chance(0.5)) {
        shape.emplace_back(v);
        dims.push_back(v == 1 ? GenDim{DimKind::Bcast, -1} : GenDim{DimKind::Iter, constClass(v)});
      } else {
        const int c = newClass(v, false, std::max<int64_t>(2 * v + 3, 8));
        shape.emplace_back(sizeScalar(c, 1, 0));
        dims.push_back({DimKind::Iter, c});
        c_.features.insert("full-scalar-size");
      }
    }
  }
  if (!fits(dims)) return false;
  static const DataType types[] = {DataType::Bool,    DataType::Int32,    DataType::Int64,
                                   DataType::Float16, DataType::BFloat16, DataType::Float32,
                                   DataType::Float64};
  const DataType dt =
      p >= 0 && rng_.chance(0.5) ? ts_[size_t(p)].tv->dtype() : types[rng_.below(std::size(types))];
  ops::SizeList sizes(shape);
  TensorView* out;
  Num o;
  std::string what;
  const double r = rng_.uniform();
  if (r < 0.2) {
    out = ops::zeros(sizes, dt);
    o = Num{true, 0.0, false, 0.0, false};
    what = "zeros(";
  } else if (r < 0.4) {
    out = ops::ones(sizes, dt);
    o = Num{true, 1.0, false, 1.0, false};
    what = "ones(";
  } else {
    const Opnd v = fillValue(dt, true);
    out = ops::full(sizes, Operand(v.val), dt);
    o = v.num;
    if (dt == DataType::Bool) o = Num{};
    what = "full(" + std::string(v.isConst ? numText(v.value) : v.val->toString()) + ", ";
  }
  int f = adopt(out, dims, o, {}, 1.0);
  note(name(f) + " = " + what + sizes.toString() + ", " + std::string(dataTypeName(dt)) + ")");
  c_.features.insert("full");
  if (p >= 0 && rng_.chance(0.6)) {
    static const Bin ops_list[] = {Bin::Add, Bin::Mul, Bin::Sub, Bin::Maximum, Bin::Minimum};
    const Bin b = ops_list[rng_.below(std::size(ops_list))];
    if (rng_.chance(0.5)) {
      binaryOp(b, tensorOpnd(p), tensorOpnd(f));
    } else {
      binaryOp(b, tensorOpnd(f), tensorOpnd(p));
    }
    c_.features.insert("full-operand");
  }
  return true;
}

bool Generator::famIota() {
  // Along a dim of a pool tensor (then broadcast and combined with it), or on its own.
  int p = -1;
  size_t pd = 0;
  if (rng_.chance(0.55)) {
    p = pick([](const GenTensor& g) {
      return std::any_of(g.dims.begin(), g.dims.end(),
                         [](const GenDim& d) { return d.kind != DimKind::Bcast; });
    });
  }
  if (p >= 0) {
    std::vector<size_t> cands;
    const auto& pdims = ts_[size_t(p)].dims;
    for (size_t d = 0; d < pdims.size(); ++d) {
      if (pdims[d].kind != DimKind::Bcast) cands.push_back(d);
    }
    pd = rng_.pick(cands);
  }
  static const DataType int_types[] = {DataType::Int32, DataType::Int64};
  static const DataType float_types[] = {DataType::Float32, DataType::Float16, DataType::BFloat16,
                                         DataType::Float64};
  TensorView* out = nullptr;
  int len_cls = -1;  // -1: a constant length 1 (a broadcast)
  double start = 0, step = 1;
  DataType dt = DataType::Int64;
  std::string text;
  const double r = rng_.uniform();
  if (p >= 0 || r < 0.45) {
    // iota(length, start, step, dtype), or arange(0, length) with a Scalar end.
    ops::Size length = int64_t(0);
    if (p >= 0) {
      len_cls = ts_[size_t(p)].dims[pd].cls;
      length = sizeFor(len_cls, true);
    } else {
      const int64_t v = rng_.chance(0.1) ? rng_.range(0, 1) : rng_.range(2, 40);
      if (rng_.chance(0.5)) {
        len_cls = v == 1 ? -1 : constClass(v);
        length = ops::Size(v);
      } else {
        len_cls = newClass(v, false, std::max<int64_t>(2 * v + 3, 8));
        length = ops::Size(sizeScalar(len_cls, 1, 0));
        c_.features.insert("iota-scalar-length");
      }
    }
    const bool floating = rng_.chance(0.5);
    if (floating) {
      static const std::vector<double> starts = {0.0, 0.5, -1.25, 2.0, -8.0};
      static const std::vector<double> steps = {1.0, 0.5, 0.25, -0.75, 0.1, 2.0};
      dt = float_types[rng_.below(std::size(float_types))];
      start = rng_.pick(starts);
      step = rng_.pick(steps);
    } else {
      static const std::vector<int64_t> starts = {0, 1, -3, 5};
      static const std::vector<int64_t> steps = {1, 2, -1, 3};
      dt = int_types[rng_.below(std::size(int_types))];
      start = double(rng_.pick(starts));
      step = double(rng_.pick(steps));
    }
    ir::Scalar* ls = length.scalar();
    if (ls != nullptr && !floating && start == 0 && step == 1 && rng_.chance(0.4)) {
      out = ops::arange(int64_t(0), Operand(ls), int64_t(1), dt);
      text = "arange(0, " + length.toString() + ", 1, " + std::string(dataTypeName(dt)) + ")";
    } else {
      Operand s0 = floating ? Operand(start) : Operand(int64_t(start));
      Operand st = floating ? Operand(step) : Operand(int64_t(step));
      out = ops::iota(length, s0, st, dt);
      text = "iota(" + length.toString() + ", " + numText(start) + ", " + numText(step) + ", " +
             std::string(dataTypeName(dt)) + ")";
    }
    if (len_cls >= 0 && value(GenDim{DimKind::Iter, len_cls}) == 1 && length.isConst())
      len_cls = -1;
  } else {
    // arange with constant bounds (fractional steps, empty and negative ranges), sometimes with
    // a Scalar end that follows a class of its own.
    struct Range {
      double start, end, step;
    };
    static const std::vector<Range> ranges = {
        {0, 5, 1},   {2, 9, 3},       {5, 0, -1}, {0, 3, 0.25}, {-1, 2.5, 0.5},
        {0, 1, 0.1}, {1.5, -2, -0.5}, {3, 3, 1},  {0, 40, 1},   {-4, 4, 0.75}};
    const Range rg = rng_.pick(ranges);
    const bool ints = rg.start == std::trunc(rg.start) && rg.end == std::trunc(rg.end) &&
                      rg.step == std::trunc(rg.step);
    if (ints && rng_.chance(0.4)) {
      // arange(s, E) with E a size scalar worth s + (a size of its own): that size is the length.
      const int64_t s = int64_t(std::min(rg.start, rg.end));
      const int64_t len = rng_.range(0, 20);
      len_cls = newClass(len, false, std::max<int64_t>(2 * len + 3, 8));
      ir::Scalar* e = sizeScalar(len_cls, 1, s);
      dt = rng_.chance(0.5) ? DataType::Int64 : DataType::Float32;
      out = ops::arange(s, Operand(e), int64_t(1), dt);
      start = double(s);
      step = 1;
      text = "arange(" + std::to_string(s) + ", " + e->toString() + ", 1, " +
             std::string(dataTypeName(dt)) + ")";
      c_.features.insert("iota-scalar-length");
    } else {
      std::optional<DataType> want;
      if (rng_.chance(0.4)) {
        want = ints && rng_.chance(0.5) ? int_types[rng_.below(2)]
                                        : float_types[rng_.below(std::size(float_types))];
      }
      dt = want.value_or(ints ? DataType::Int64 : DataType::Float32);
      if (isIntegralType(dt) && !ints) return false;  // fractional values cast to integers
      const auto len = int64_t(std::ceil((rg.end - rg.start) / rg.step));
      len_cls = len == 1 ? -1 : constClass(len);
      start = rg.start;
      step = rg.step;
      Operand a = ints ? Operand(int64_t(rg.start)) : Operand(rg.start);
      Operand b = ints ? Operand(int64_t(rg.end)) : Operand(rg.end);
      Operand c = ints ? Operand(int64_t(rg.step)) : Operand(rg.step);
      out = ops::arange(a, b, c, want);
      text = "arange(" + numText(rg.start) + ", " + numText(rg.end) + ", " + numText(rg.step) +
             (want ? ", " + std::string(dataTypeName(*want)) : std::string()) + ")";
      if (rg.step != std::trunc(rg.step)) c_.features.insert("arange-fractional");
    }
  }
  // What is known of the values start + i * step (start and step rounded to dt first).
  const int64_t n_max = len_cls < 0 ? 1 : maxValue(GenDim{DimKind::Iter, len_cls});
  bool exact = true;
  const double s0 = roundedTo(start, dt, &exact);
  const double st = roundedTo(step, dt, &exact);
  Num o;
  o.mag = 0;
  o.minAbs = kInf;
  for (int64_t i = 0; i < std::max<int64_t>(n_max, 1); ++i) {
    const double v = s0 + double(i) * st;
    exact = exact && representable(v, dt) && representable(double(i) * st, dt) &&
            representable(v, DataType::Float32);
    o.mag = std::max(o.mag, std::fabs(v));
    o.minAbs = std::min(o.minAbs, std::fabs(v));
  }
  o.exact = exact;
  if (!exact) o.minAbs = 0;
  if (o.mag > maxFinite(dt)) return false;
  if (!exact && o.mag > kInexactMag) return false;
  std::vector<GenDim> dims{len_cls < 0 ? GenDim{DimKind::Bcast, -1}
                                       : GenDim{DimKind::Iter, len_cls}};
  int idx = adopt(out, dims, o, {}, 1.0);
  note(name(idx) + " = " + text);
  c_.features.insert("iota");
  if (isFloatingType(dt)) c_.features.insert("iota-float");
  if (p >= 0) {
    // Broadcast along p's dim pd and combine with p (an index, a mask, an offset).
    const size_t prank = ts_[size_t(p)].dims.size();
    std::vector<bool> flags(prank, true);
    flags[pd] = false;
    int b = broadcastOp(idx, flags);
    if (b < 0) return true;
    static const Bin ops_list[] = {Bin::Add, Bin::Sub, Bin::Mul, Bin::Lt, Bin::Ge, Bin::Maximum};
    const Bin op = ops_list[rng_.below(std::size(ops_list))];
    int c = rng_.chance(0.5) ? binaryOp(op, tensorOpnd(p), tensorOpnd(b))
                             : binaryOp(op, tensorOpnd(b), tensorOpnd(p));
    if (c >= 0) c_.features.insert("iota-combined");
  } else if (rng_.chance(0.5)) {
    int q = partner(idx);
    if (q >= 0 && q != idx) {
      binaryOp(rng_.chance(0.5) ? Bin::Add : Bin::Mul, tensorOpnd(q), tensorOpnd(idx));
    }
  }
  return true;
}

}  // namespace loom::fuzz::detail
