// SPDX-License-Identifier: Apache-2.0
// Symbolic sizes: dynamic reshapes (extents, products, scalar sizes, -1, merges, splits) and
// expands to scalar sizes or -1.
#include <algorithm>

#include "fuzz/generator_internal.h"
#include "loom/ir/scalar_math.h"

namespace loom::fuzz::detail {

bool Generator::famReshapeSymbolic() {
  int t = pick([](const GenTensor& g) {
    return std::any_of(g.dims.begin(), g.dims.end(),
                       [](const GenDim& d) { return d.kind == DimKind::Iter; }) &&
           std::none_of(g.dims.begin(), g.dims.end(),
                        [](const GenDim& d) { return d.kind == DimKind::Expanded; });
  });
  if (t < 0) return false;
  const GenTensor x = ts_[size_t(t)];
  const auto rank = int64_t(x.dims.size());
  // Atoms: x's non-broadcast dims, some split in two by a constant that divides them.
  struct Atom {
    int cls;
    int64_t dim;  // x's dim it is, -1 for a piece of a split
  };
  std::vector<Atom> atoms;
  bool split = false;
  for (int64_t d = 0; d < rank; ++d) {
    const GenDim& g = x.dims[size_t(d)];
    if (g.kind == DimKind::Bcast) continue;
    const int64_t v = value(g);
    if (rng_.chance(0.3)) {
      std::vector<int64_t> divisors;
      for (int64_t a : {2, 3, 4}) {
        if (v % a == 0) divisors.push_back(a);
      }
      if (!divisors.empty()) {
        const int64_t a = rng_.pick(divisors);
        if (!pinned(g)) require({{g.cls, 1}}, 0, a);
        Atom piece{constClass(a), -1};
        Atom rest{productClass({g.cls}, 1, a), -1};
        if (rng_.chance(0.5)) std::swap(piece, rest);
        atoms.push_back(piece);
        atoms.push_back(rest);
        split = true;
        continue;
      }
    }
    atoms.push_back({g.cls, d});
  }
  if (atoms.size() >= 2 && rng_.chance(0.25)) {
    std::vector<int64_t> perm = rng_.permutation(int64_t(atoms.size()));
    std::vector<Atom> shuffled;
    for (int64_t i : perm) shuffled.push_back(atoms[size_t(i)]);
    atoms = shuffled;
  }
  // Output dims: groups of adjacent atoms (merged), and size-1 dims here and there.
  struct Out {
    ops::Size size = int64_t(1);
    GenDim dim;
    bool one = false;  // an inserted size-1 dim
  };
  std::vector<Out> outs;
  bool merged = false;
  std::vector<std::vector<Atom>> groups;
  for (const Atom& a : atoms) {
    if (!groups.empty() && rng_.chance(0.35)) {
      groups.back().push_back(a);
      merged = true;
    } else {
      groups.push_back({a});
    }
  }
  for (const auto& group : groups) {
    Out o;
    std::vector<int> classes;
    bool from_dims = true;
    for (const Atom& a : group) {
      classes.push_back(a.cls);
      from_dims = from_dims && a.dim >= 0;
    }
    const int cls = group.size() == 1 ? group[0].cls : productClass(classes, 1, 1);
    o.dim = GenDim{DimKind::Iter, cls};
    if (group.size() == 1 && group[0].dim >= 0 && rng_.chance(0.4)) {
      o.size = ops::Size(extentScalar(t, size_t(group[0].dim)));
    } else if (group.size() >= 2 && from_dims && rng_.chance(0.4)) {
      ir::Scalar* e = extentScalar(t, size_t(group[0].dim));
      for (size_t i = 1; i < group.size(); ++i) {
        e = ir::scalar_math::mul(e, extentScalar(t, size_t(group[i].dim)));
      }
      o.size = ops::Size(e);
    } else {
      o.size = sizeFor(cls, true);
    }
    outs.push_back(o);
  }
  const int ones = rng_.chance(0.3) ? int(rng_.range(1, 2)) : 0;
  for (int i = 0; i < ones; ++i) {
    Out o;
    o.one = true;
    if (rng_.chance(0.5)) {
      o.dim = GenDim{DimKind::Bcast, -1};
    } else {
      // 1 at run time only: a Symbolic dim that concretization makes a broadcast.
      o.size = ops::Size(sizeScalar(-1, 0, 1));
      o.dim = GenDim{DimKind::Iter, constClass(1)};
      c_.features.insert("reshape-size-1-at-run-time");
    }
    outs.insert(outs.begin() + int64_t(rng_.below(outs.size() + 1)), o);
  }
  // One size may be -1 when the others can never be 0 (else it would infer 0).
  std::vector<size_t> groups_at;
  for (size_t i = 0; i < outs.size(); ++i) {
    if (!outs[i].one) groups_at.push_back(i);
  }
  if (!groups_at.empty() && rng_.chance(0.45)) {
    const size_t m = rng_.pick(groups_at);
    bool ok = true;
    for (size_t i = 0; i < outs.size(); ++i) {
      if (i != m && outs[i].dim.kind != DimKind::Bcast && value(outs[i].dim) < 1) ok = false;
    }
    if (ok) {
      for (size_t i = 0; i < outs.size(); ++i) {
        if (i != m && outs[i].dim.kind != DimKind::Bcast && !pinned(outs[i].dim)) {
          require({{outs[i].dim.cls, 1}}, -1);
        }
      }
      outs[m].size = ops::Size(int64_t(-1));
      c_.features.insert("reshape-minus-one");
    }
  }
  // Dynamic: some input extent or some size is a Scalar that is not a constant.
  bool dynamic = std::any_of(outs.begin(), outs.end(), [](const Out& o) {
    return o.size.scalar() != nullptr && !o.size.isConst();
  });
  for (ir::IterDomain* id : ir::TensorDomain::noReductions(x.tv->logical())) {
    dynamic = dynamic || !id->logicalExtent()->isConst();
  }
  if (!dynamic) {
    for (Out& o : outs) {
      if (!o.one && o.size.isConst() && o.size.constant() != -1) {
        o.size = ops::Size(sizeScalar(o.dim.cls, 1, 0));
        dynamic = true;
        break;
      }
    }
  }
  if (!dynamic) return false;
  std::vector<ops::Size> sizes;
  std::vector<GenDim> dims;
  for (const Out& o : outs) {
    sizes.push_back(o.size);
    // A constant 1 is a broadcast; any other size an Iteration (or Symbolic) dim.
    if (o.size.constant() == 1) {
      dims.push_back({DimKind::Bcast, -1});
    } else {
      dims.push_back(o.dim.kind == DimKind::Bcast ? GenDim{DimKind::Iter, constClass(1)} : o.dim);
    }
  }
  if (!fits(dims)) return false;
  ops::SizeList list(sizes);
  TensorView* out = ops::reshape(x.tv, list);
  // x's own extents give a copy, whose dims are x's.
  if (out->definition() != nullptr && out->definition()->isA<ir::LoadStoreOp>()) dims = x.dims;
  ++ts_[size_t(t)].uses;
  int idx = adopt(out, dims, x.num, x.red, x.tol);
  note(name(idx) + " = reshape(" + name(t) + ", " + list.toString() + ")");
  c_.features.insert("dynamic-reshape");
  if (merged) c_.features.insert("reshape-merge");
  if (split) c_.features.insert("reshape-split");
  return true;
}

bool Generator::famExpandSymbolic() {
  auto symbolic = [](const GenTensor& g, size_t d) {
    return ir::TensorDomain::noReductions(g.tv->logical())[d]->isSymbolic();
  };
  int t = pick([&](const GenTensor& g) {
    if (g.dims.size() < 4) return true;
    for (size_t d = 0; d < g.dims.size(); ++d) {
      if (g.dims[d].kind == DimKind::Bcast || symbolic(g, d)) return true;
    }
    return false;
  });
  if (t < 0) return false;
  const GenTensor x = ts_[size_t(t)];
  const auto rank = int64_t(x.dims.size());
  // A class for the size at a (right-aligned) position: often one a tensor already has there.
  auto class_at = [&](int64_t pos_from_right) -> int {
    std::vector<int> cands;
    for (const GenTensor& g : ts_) {
      auto r = int64_t(g.dims.size());
      if (pos_from_right < r) {
        const GenDim& d = g.dims[size_t(r - 1 - pos_from_right)];
        if (d.kind != DimKind::Bcast) cands.push_back(d.cls);
      }
    }
    if (!cands.empty() && rng_.chance(0.7)) return rng_.pick(cands);
    const int64_t v = rng_.chance(0.1) ? rng_.range(0, 1) : rng_.range(2, 16);
    return newClass(v, false, std::max<int64_t>(2 * v + 3, 8));
  };
  auto scalar_size = [&](int cls) {
    ops::Size s = sizeFor(cls, false);
    return s.isConst() ? ops::Size(sizeScalar(cls, 1, 0)) : s;
  };
  const int64_t lead = rank < 4 && rng_.chance(0.3) ? 1 : 0;
  std::vector<ops::Size> sizes;
  std::vector<GenDim> dims;
  for (int64_t i = 0; i < lead; ++i) {
    const int c = class_at(rank + lead - 1 - i);
    sizes.push_back(scalar_size(c));
    dims.push_back({DimKind::Expanded, c});
  }
  bool expanded = lead > 0;
  for (int64_t d = 0; d < rank; ++d) {
    const GenDim& g = x.dims[size_t(d)];
    if (g.kind == DimKind::Bcast && rng_.chance(0.7)) {
      const int c = class_at(rank - 1 - d);
      sizes.push_back(scalar_size(c));
      dims.push_back({DimKind::Expanded, c});
      expanded = true;
    } else if (g.kind == DimKind::Iter && symbolic(x, size_t(d)) && rng_.chance(0.5)) {
      // A Symbolic dim (a dynamic reshape's) given its own size.
      sizes.push_back(scalar_size(g.cls));
      dims.push_back(g);
    } else if (g.kind == DimKind::Iter && rng_.chance(0.15)) {
      sizes.emplace_back(extentScalar(t, size_t(d)));
      dims.push_back(g);
    } else {
      sizes.emplace_back(int64_t(-1));
      dims.push_back(g);
    }
  }
  if (std::all_of(sizes.begin(), sizes.end(), [](const ops::Size& s) { return s.isConst(); })) {
    return false;
  }
  if (!fits(dims)) return false;
  ops::SizeList list(sizes);
  TensorView* out = ops::expand(x.tv, list);
  ++ts_[size_t(t)].uses;
  int idx = adopt(out, dims, x.num, x.red, x.tol);
  note(name(idx) + " = expand(" + name(t) + ", " + list.toString() + ")");
  c_.features.insert(expanded ? "symbolic-expand" : "symbolic-expand-keep");
  return true;
}

}  // namespace loom::fuzz::detail
