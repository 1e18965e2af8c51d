// SPDX-License-Identifier: Apache-2.0
// The ops with Resize IDs: slice bounds valid in every run, the slice and cat builders, and the
// slice, pad, cat and rotary families.
#include <algorithm>

#include "fuzz/generator_internal.h"

namespace loom::fuzz::detail {

// ---- Slice and cat ------------------------------------------------------------------------------

std::optional<Generator::SliceBound> Generator::sliceBound(int t, size_t d, bool allow_scalar) {
  const GenDim g = ts_[size_t(t)].dims[d];
  int64_t off = 0;
  const Terms n = termsOf(g, &off);  // the extent is n + off
  const int64_t N = value(g);
  const int64_t n_max = maxValue(g);
  ir::Scalar* extent = extentScalar(t, d);
  auto fixed = [&](int64_t v) -> ops::Size {
    return allow_scalar && rng_.chance(0.25) ? ops::Size(sizeScalar(-1, 0, v)) : ops::Size(v);
  };
  // "To the end": the extent itself, or a bound past any size the dim may take.
  auto to_end = [&]() -> ops::Size {
    return rng_.chance(0.7) ? ops::Size(extent) : fixed(int64_t(1) << 20);
  };
  auto with = [&](Terms terms, int64_t k, int64_t c) {
    terms.emplace_back(k, c);
    return terms;
  };
  SliceBound b;
  const double r = rng_.uniform();
  if (r < 0.15) {  // [0:k] (or [-1000:k], which clamps to 0)
    const int64_t k = rng_.range(0, N);
    b.start = rng_.chance(0.2) && n_max <= 1000 ? ops::Size(int64_t(-1000)) : ops::Size(int64_t(0));
    b.stop = fixed(k);
    require(n, off - k);
    b.cls = constClass(k);
  } else if (r < 0.3) {  // [-k:]
    if (N < 1) return std::nullopt;
    const int64_t k = rng_.range(1, N);
    b.start = fixed(-k);
    b.stop = to_end();
    require(n, off - k);
    b.cls = constClass(k);
  } else if (r < 0.45) {  // [s:]
    const int64_t s = rng_.range(0, N);
    b.start = fixed(s);
    b.stop = to_end();
    require(n, off - s);
    b.cls = sumClass(n, off - s);
  } else if (r < 0.58) {  // [:-e]
    if (N < 1) return std::nullopt;
    const int64_t e = rng_.range(1, N);
    b.stop = fixed(-e);
    require(n, off - e);
    b.cls = sumClass(n, off - e);
  } else if (r < 0.7) {  // [s:-e] or [s:t]
    if (N >= 1 && rng_.chance(0.5)) {
      const int64_t e = rng_.range(1, N);
      const int64_t s = rng_.range(0, N - e);
      b.start = fixed(s);
      b.stop = fixed(-e);
      require(n, off - s - e);
      b.cls = sumClass(n, off - s - e);
    } else {
      const int64_t s = rng_.range(0, N);
      const int64_t stop = rng_.range(s, N);
      b.start = fixed(s);
      b.stop = fixed(stop);
      require(n, off - stop);
      b.cls = constClass(stop - s);
    }
  } else if (r < 0.8) {  // stop before start: empty whatever the size
    int64_t s, stop;
    if (rng_.chance(0.5)) {
      s = rng_.range(1, 6);
      stop = rng_.range(0, s - 1);
    } else {
      s = -rng_.range(1, 3);
      stop = s - rng_.range(1, 3);
    }
    b.start = fixed(s);
    b.stop = fixed(stop);
    b.cls = constClass(0);
    c_.features.insert("slice-empty");
  } else if (allow_scalar) {  // a bound that follows a class of its own (the resized run moves it)
    const double q = rng_.uniform();
    if (q < 0.4) {  // [S:]
      const int64_t s = rng_.range(0, N);
      const int k = newClass(s, false, s + 4);
      b.start = ops::Size(sizeScalar(k, 1, 0));
      b.stop = to_end();
      require(with(n, k, -1), off);
      b.cls = sumClass(with(n, k, -1), off);
    } else if (q < 0.7) {  // [-K:]
      if (N < 1) return std::nullopt;
      const int64_t kv = rng_.range(1, N);
      const int k = newClass(kv, false, kv + 4);
      b.start = ops::Size(sizeScalar(k, -1, 0));
      b.stop = to_end();
      require({{k, 1}}, -1);
      require(with(n, k, -1), off);
      b.cls = k;
    } else {  // [:K]
      const int64_t kv = rng_.range(0, N);
      const int k = newClass(kv, false, kv + 4);
      b.stop = ops::Size(sizeScalar(k, 1, 0));
      require(with(n, k, -1), off);
      b.cls = k;
    }
    c_.features.insert("slice-scalar-bound");
  } else {
    return std::nullopt;
  }
  return b;
}

int Generator::sliceOp(int t, const std::vector<std::pair<size_t, SliceBound>>& bounds) {
  const GenTensor x = ts_[size_t(t)];
  const auto rank = int64_t(x.dims.size());
  TensorView* out = nullptr;
  std::string text;
  if (bounds.size() == 1 && rng_.chance(0.4)) {
    const auto d = int64_t(bounds[0].first);
    const int64_t spelled = rng_.chance(0.4) ? d - rank : d;
    const SliceBound& b = bounds[0].second;
    out = ops::slice(x.tv, spelled, b.start, b.stop);
    text = std::to_string(spelled) + ", " + b.start.toString() + ", " + b.stop.toString();
  } else {
    std::vector<ops::Size> starts, stops;
    for (int64_t d = 0; d < rank; ++d) {
      starts.emplace_back(int64_t(0));
      stops.emplace_back(extentScalar(t, size_t(d)));
    }
    for (const auto& [d, b] : bounds) {
      starts[d] = b.start;
      stops[d] = b.stop;
    }
    ops::SizeList s(starts), e(stops);
    out = ops::slice(x.tv, s, e);
    text = s.toString() + ", " + e.toString();
  }
  std::vector<GenDim> dims = x.dims;
  const bool sliced = out->definition() != nullptr && out->definition()->isA<ir::SliceOp>();
  for (const auto& [d, b] : bounds) {
    // A dim sliced whole (constant bounds 0 and its extent) stays what it was.
    if (sliced && out->logical()[d] != out->root()[d]) dims[d] = GenDim{DimKind::Iter, b.cls};
  }
  ++ts_[size_t(t)].uses;
  int idx = adopt(out, dims, x.num, x.red, x.tol);
  note(name(idx) + " = slice(" + name(t) + ", " + text + ")");
  c_.features.insert("slice");
  if (x.input >= 0) c_.features.insert("slice-of-input");
  return idx;
}

int Generator::catOp(const std::vector<int>& parts, int64_t dim, int64_t spelled) {
  const auto d = size_t(dim);
  const size_t rank = ts_[size_t(parts[0])].dims.size();
  std::vector<Operand> operands;
  std::vector<TensorView*> tvs;
  for (int p : parts) {
    operands.emplace_back(ts_[size_t(p)].tv);
    tvs.push_back(ts_[size_t(p)].tv);
  }
  const DataType dtype = ops::resultType(operands);
  Num o;
  o.mag = 0;
  o.minAbs = kInf;
  double tol = 1;
  std::vector<int> red;
  bool mixed = false;
  Terms cat_terms;
  int64_t cat_offset = 0;
  for (int p : parts) {
    const GenTensor& g = ts_[size_t(p)];
    if (g.dims.size() != rank) throw GeneratorError("cat of tensors of different ranks");
    mixed = mixed || g.tv->dtype() != dtype;
    std::optional<Num> n = castNum(g.num, g.tv->dtype(), dtype);
    if (!n) return -1;
    o.exact = o.exact && n->exact;
    o.mag = std::max(o.mag, n->mag);
    o.special = o.special || n->special;
    o.minAbs = std::min(o.minAbs, n->minAbs);
    o.product = o.product || n->product;
    o.zsign = o.zsign || n->zsign;
    tol = std::max(tol, g.tol);
    if (redProduct(g.red) > redProduct(red)) red = g.red;
    for (const auto& term : termsOf(g.dims[d], &cat_offset)) cat_terms.push_back(term);
  }
  if (!std::isfinite(o.minAbs)) o.minAbs = 0;
  if (!o.exact && o.mag > kInexactMag) return -1;
  // The other dims: equal sizes (checked by the callers), one class from now on; the output dim
  // as a pointwise op would choose it.
  std::vector<GenDim> dims(rank, GenDim{DimKind::Bcast, -1});
  for (size_t pos = 0; pos < rank; ++pos) {
    if (pos == d) continue;
    int first = -1;
    // A broadcast does not stretch in a cat: the others' size there stays 1.
    const bool bcast = std::any_of(parts.begin(), parts.end(), [&](int p) {
      return ts_[size_t(p)].dims[pos].kind == DimKind::Bcast;
    });
    for (int p : parts) {
      if (bcast && ts_[size_t(p)].dims[pos].kind != DimKind::Bcast)
        pin(ts_[size_t(p)].dims[pos].cls);
    }
    for (int p : parts) {
      const GenDim& g = ts_[size_t(p)].dims[pos];
      if (g.kind == DimKind::Bcast) continue;
      if (value(g) != value(ts_[size_t(parts[0])].dims[pos])) {
        throw GeneratorError("cat of tensors whose sizes differ outside the cat dim");
      }
      if (first < 0) {
        first = g.cls;
      } else {
        unify(first, g.cls);
      }
      if (g.kind == DimKind::Iter || dims[pos].kind == DimKind::Bcast) {
        if (dims[pos].kind != DimKind::Iter) dims[pos] = g;
      }
    }
  }
  dims[d] = GenDim{DimKind::Iter, sumClass(cat_terms, cat_offset)};
  if (!fits(dims)) return -1;
  TensorView* out = ops::cat(tvs, spelled);
  for (int p : parts) ++ts_[size_t(p)].uses;
  int idx = adopt(out, dims, o, red, tol);
  std::string names;
  for (int p : parts) names += (names.empty() ? "" : ", ") + name(p);
  note(name(idx) + " = cat([" + names + "], " + std::to_string(spelled) + ")");
  c_.features.insert("cat");
  if (mixed) c_.features.insert("cat-mixed-dtype");
  if (!pinned(dims[d])) c_.features.insert("cat-symbolic-extent");
  return idx;
}

bool Generator::famSlice() {
  auto ok = [](const GenTensor& g) { return !g.dims.empty(); };
  int t = rng_.chance(0.3) ? pick([&](const GenTensor& g) { return ok(g) && g.input >= 0; }) : -1;
  if (t < 0) t = pick(ok);
  if (t < 0) return false;
  const auto rank = int64_t(ts_[size_t(t)].dims.size());
  std::vector<size_t> which;
  if (rank >= 2 && rng_.chance(0.3)) {
    for (int64_t d = 0; d < rank; ++d) {
      if (rng_.chance(0.5)) which.push_back(size_t(d));
    }
  }
  if (which.empty()) {
    which.push_back(rng_.chance(0.5) ? size_t(rank - 1) : size_t(rng_.below(uint64_t(rank))));
  }
  std::vector<std::pair<size_t, SliceBound>> bounds;
  for (size_t d : which) {
    if (auto b = sliceBound(t, d, true)) bounds.emplace_back(d, *b);
  }
  if (bounds.empty()) return false;
  if (bounds.size() >= 2) c_.features.insert("slice-several-dims");
  return sliceOp(t, bounds) >= 0;
}

bool Generator::famPad() {
  auto ok = [](const GenTensor& g) { return !g.dims.empty(); };
  int t = rng_.chance(0.3) ? pick([&](const GenTensor& g) { return ok(g) && g.input >= 0; }) : -1;
  if (t < 0) t = pick(ok);
  if (t < 0) return false;
  const GenTensor x = ts_[size_t(t)];
  const auto rank = int64_t(x.dims.size());
  const int64_t pairs = rng_.chance(0.6) ? 1 : rng_.range(1, rank);
  std::vector<ops::Size> widths;
  std::vector<int> classes(size_t(rank), -1);  // the class of each padded dim
  std::vector<GenDim> dims = x.dims;
  bool cropped = false;
  for (int64_t k = 0; k < pairs; ++k) {
    const auto d = size_t(rank - 1 - k);
    if (k > 0 && rng_.chance(0.3)) {
      widths.emplace_back(int64_t(0));
      widths.emplace_back(int64_t(0));
      continue;
    }
    int64_t off = 0;
    Terms terms = termsOf(x.dims[d], &off);
    std::vector<ops::Size> lr;
    for (int side = 0; side < 2; ++side) {
      const double r = rng_.uniform();
      int64_t w;
      if (r < 0.25) {
        w = 0;
      } else if (r < 0.6) {
        w = rng_.range(1, 3);
      } else if (r < 0.85) {
        w = -rng_.range(1, 2);
      } else if (r < 0.93) {  // a width that follows a class of its own
        const int64_t v = rng_.range(0, 3);
        const int c = newClass(v, false, 5);
        lr.emplace_back(sizeScalar(c, 1, 0));
        terms.emplace_back(c, 1);
        continue;
      } else {
        w = rng_.range(4, 8);
      }
      lr.push_back(rng_.chance(0.2) ? ops::Size(sizeScalar(-1, 0, w)) : ops::Size(w));
      off += w;
      cropped = cropped || w < 0;
    }
    int64_t now = off;
    for (const auto& [c, m] : terms) now += m * c_.classValues[size_t(root(c))];
    if (now < 0) return false;  // cropped below zero
    require(terms, off);
    widths.push_back(lr[0]);
    widths.push_back(lr[1]);
    classes[d] = sumClass(terms, off);
    dims[d] = GenDim{DimKind::Iter, classes[d]};
  }
  if (!fits(dims)) return false;
  const Opnd v = fillValue(x.tv->dtype(), true);
  ops::SizeList w(widths);
  TensorView* out = ops::pad(x.tv, w, Operand(v.val));
  const bool padded = out->definition() != nullptr && out->definition()->isA<ir::PadOp>();
  for (int64_t d = 0; d < rank; ++d) {
    if (!padded || out->logical()[size_t(d)] == out->root()[size_t(d)])
      dims[size_t(d)] = x.dims[size_t(d)];
  }
  Num o = x.num;
  if (padded) {
    o.mag = std::max(o.mag, v.num.mag);
    o.special = o.special || v.num.special;
    o.minAbs = std::min(o.minAbs, v.num.minAbs);
    if (x.tv->dtype() == DataType::Bool) o = Num{};
  }
  ++ts_[size_t(t)].uses;
  int idx = adopt(out, dims, o, x.red, x.tol);
  note(name(idx) + " = pad(" + name(t) + ", " + w.toString() + ", " +
       (v.isConst ? numText(v.value) : v.val->toString()) + ")");
  c_.features.insert("pad");
  if (cropped) c_.features.insert("pad-negative");
  if (pairs < rank) c_.features.insert("pad-fewer-pairs");
  if (v.num.special) c_.features.insert("pad-special-value");
  return true;
}

bool Generator::famCat() {
  int t = pick([](const GenTensor& g) { return !g.dims.empty(); });
  if (t < 0) return false;
  const GenTensor x = ts_[size_t(t)];
  const auto rank = int64_t(x.dims.size());
  const int64_t d = rng_.chance(0.5) ? rank - 1 : int64_t(rng_.below(uint64_t(rank)));
  const int64_t spelled = rng_.chance(0.35) ? d - rank : d;
  static const double count_weights[] = {0.6, 0.3, 0.1};
  const size_t n = rng_.weighted(count_weights) + 2;
  auto matches = [&](const GenTensor& g) {
    if (g.dims.size() != x.dims.size()) return false;
    for (int64_t pos = 0; pos < rank; ++pos) {
      if (pos != d && value(g.dims[size_t(pos)]) != value(x.dims[size_t(pos)])) return false;
    }
    return true;
  };
  std::vector<int> parts{t};
  while (parts.size() < n) {
    const double r = rng_.uniform();
    int p = -1;
    if (r < 0.35) {
      p = pick(matches);
    } else if (r < 0.5) {
      p = rng_.pick(parts);
    } else if (r < 0.75) {
      if (auto b = sliceBound(t, size_t(d), true)) p = sliceOp(t, {{size_t(d), *b}});
    } else if (tensor_inputs_ < opts_.maxTensorInputs) {
      // A new input of symbolic extent along the cat dim, often of another dtype.
      std::vector<int> classes;
      const int64_t v = rng_.chance(0.1) ? 0 : rng_.range(1, 12);
      int64_t elems = std::max<int64_t>(v, 1);
      for (int64_t pos = 0; pos < rank; ++pos) {
        const GenDim& g = x.dims[size_t(pos)];
        if (pos == d) {
          classes.push_back(-2);
        } else {
          classes.push_back(g.kind == DimKind::Bcast ? -1 : g.cls);
          elems *= std::max<int64_t>(value(g), 1);
        }
      }
      if (elems <= opts_.maxInputNumel) {
        classes[size_t(d)] = newClass(v, false, std::max<int64_t>(2 * v + 3, 8));
        p = addTensorInput(classes, rng_.chance(0.5) ? x.tv->dtype() : drawDtype(), false);
      }
    }
    parts.push_back(p >= 0 ? p : t);
  }
  if (rng_.chance(0.3)) std::swap(parts[0], parts[rng_.below(parts.size())]);
  return catOp(parts, d, spelled) >= 0;
}

bool Generator::famRotary() {
  int t = pick([this](const GenTensor& g) {
    return !g.dims.empty() && g.tv->dtype() != DataType::Bool &&
           g.dims.back().kind != DimKind::Bcast && value(g.dims.back()) >= 2 &&
           (g.num.exact || g.num.mag <= kInexactMag);
  });
  if (t < 0) return false;
  const auto last = ts_[size_t(t)].dims.size() - 1;
  const GenDim g = ts_[size_t(t)].dims[last];
  const int64_t n = value(g);
  const int64_t h = rng_.chance(0.6) ? n / 2 : rng_.range(1, n - 1);
  require({{g.cls, 1}}, -h);
  const ops::Size hs = rng_.chance(0.25) ? ops::Size(sizeScalar(-1, 0, h)) : ops::Size(h);
  SliceBound lo, hi;
  lo.stop = hs;
  lo.cls = constClass(h);
  hi.start = hs;
  hi.stop = ops::Size(extentScalar(t, last));
  hi.cls = sumClass({{g.cls, 1}}, -h);
  int a = sliceOp(t, {{last, lo}});
  int b = sliceOp(t, {{last, hi}});
  int nb = unaryOp(Un::Neg, b);
  if (nb < 0) return false;
  int rot = catOp({nb, a}, int64_t(last), -1);
  if (rot < 0) return false;
  c_.features.insert("rotary");
  if (rng_.chance(0.4)) return true;
  // x * cos + rot * sin, with bounded factors (pool tensors or constants).
  auto factor = [&](int like) -> Opnd {
    int p =
        rng_.chance(0.5) ? partner(like, [](const GenTensor& f) { return f.num.mag <= 2; }) : -1;
    return p >= 0 ? tensorOpnd(p) : constant(rng_.pick(std::vector<double>{0.5, -0.75, 1.0}));
  };
  int xc = binaryOp(Bin::Mul, tensorOpnd(t), factor(t));
  int rs = binaryOp(Bin::Mul, tensorOpnd(rot), factor(rot));
  if (xc < 0 || rs < 0) return true;
  binaryOp(Bin::Add, tensorOpnd(xc), tensorOpnd(rs));
  return true;
}

}  // namespace loom::fuzz::detail
