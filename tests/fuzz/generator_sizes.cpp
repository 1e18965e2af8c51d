// SPDX-License-Identifier: Apache-2.0
// Size classes (see fusion_generator.h): the union-find of dims that must be equal, classes
// derived from others (sums and products), the constraints every run must meet, and sizes
// given to ops as constants, extents or size scalars.
#include <algorithm>

#include "fuzz/generator_internal.h"
#include "loom/ir/builder.h"

namespace loom::fuzz::detail {

// ---- Size classes ---------------------------------------------------------------------------

int Generator::newClass(int64_t value, bool pinned, int64_t max_value) {
  c_.classRoot.push_back(int(c_.classRoot.size()));
  c_.classValues.push_back(value);
  c_.classPinned.push_back(pinned);
  c_.classMax.push_back(pinned ? value : std::max(value, max_value));
  return int(c_.classRoot.size()) - 1;
}

int Generator::root(int c) {
  while (c_.classRoot[size_t(c)] != c) {
    c_.classRoot[size_t(c)] = c_.classRoot[size_t(c_.classRoot[size_t(c)])];
    c = c_.classRoot[size_t(c)];
  }
  return c;
}

void Generator::pin(int c) {
  int r = root(c);
  auto f = c_.classFormulas.find(r);
  if (f != c_.classFormulas.end()) {
    const ClassFormula formula = f->second;
    c_.classFormulas.erase(f);
    for (const auto& [t, k] : formula.terms) pin(t);
  }
  c_.classPinned[size_t(r)] = true;
  c_.classMax[size_t(r)] = c_.classValues[size_t(r)];
}

bool Generator::dependsOn(int c, int target) {
  int r = root(c);
  if (r == root(target)) return true;
  auto f = c_.classFormulas.find(r);
  if (f == c_.classFormulas.end()) return false;
  for (const auto& [t, k] : f->second.terms) {
    if (dependsOn(t, target)) return true;
  }
  return false;
}

void Generator::unify(int a, int b) {
  a = root(a);
  b = root(b);
  if (a == b) return;
  if (c_.classValues[size_t(a)] != c_.classValues[size_t(b)]) {
    throw GeneratorError("unify: size classes of different sizes");
  }
  if (derived(a) || derived(b)) {
    // A free class may follow a derived one; anything else is fixed for good.
    const int d = derived(a) ? a : b;
    const int f = d == a ? b : a;
    if (!derived(f) && !c_.classPinned[size_t(f)] && !dependsOn(d, f)) {
      c_.classRoot[size_t(f)] = d;
      c_.classMax[size_t(d)] = std::min(c_.classMax[size_t(d)], c_.classMax[size_t(f)]);
      return;
    }
    pin(a);
    pin(b);
  }
  c_.classRoot[size_t(b)] = a;
  c_.classPinned[size_t(a)] = c_.classPinned[size_t(a)] || c_.classPinned[size_t(b)];
  c_.classMax[size_t(a)] = std::min(c_.classMax[size_t(a)], c_.classMax[size_t(b)]);
  if (c_.classPinned[size_t(a)]) c_.classMax[size_t(a)] = c_.classValues[size_t(a)];
}

int Generator::sumClass(const Terms& terms, int64_t offset) {
  std::map<int, int64_t> coef;  // by root
  std::function<void(int, int64_t)> add = [&](int c, int64_t k) {
    const int r = root(c);
    if (c_.classPinned[size_t(r)]) {
      offset += k * c_.classValues[size_t(r)];
      return;
    }
    auto f = c_.classFormulas.find(r);
    if (f != c_.classFormulas.end() && !f->second.product) {
      const ClassFormula formula = f->second;
      for (const auto& [t, m] : formula.terms) add(t, k * m);
      offset += k * formula.offset;
      return;
    }
    coef[r] += k;
  };
  for (const auto& [c, k] : terms) add(c, k);
  Terms out;
  int64_t value = offset;
  int64_t max_value = offset;
  for (const auto& [r, k] : coef) {
    if (k == 0) continue;
    out.emplace_back(r, k);
    value += k * c_.classValues[size_t(r)];
    if (k > 0) max_value += k * c_.classMax[size_t(r)];
  }
  if (value < 0) throw GeneratorError("a derived size class would be negative");
  if (out.empty()) return constClass(value);
  if (out.size() == 1 && out[0].second == 1 && offset == 0) return out[0].first;
  const int c = newClass(value, false, std::max(value, max_value));
  ClassFormula f;
  f.terms = std::move(out);
  f.offset = offset;
  c_.classFormulas[c] = f;
  return c;
}

int Generator::productClass(const std::vector<int>& classes, int64_t factor, int64_t divisor) {
  std::vector<int> free;
  int64_t value = factor;
  double max_value = double(factor);
  for (int c : classes) {
    const int r = root(c);
    value *= c_.classValues[size_t(r)];
    if (c_.classPinned[size_t(r)]) {
      factor *= c_.classValues[size_t(r)];
      max_value *= double(c_.classValues[size_t(r)]);
    } else {
      free.push_back(r);
      max_value *= double(c_.classMax[size_t(r)]);
    }
  }
  if (divisor <= 0 || value % divisor != 0) {
    throw GeneratorError("a derived size class does not divide");
  }
  value /= divisor;
  if (free.empty()) return constClass(value);
  if (free.size() == 1 && factor == divisor) return free[0];
  max_value = std::min(max_value / double(divisor), 0x1p40);
  const int c = newClass(value, false, std::max(value, int64_t(max_value)));
  ClassFormula f;
  f.product = true;
  for (int r : free) f.terms.emplace_back(r, 1);
  f.factor = factor;
  f.divisor = divisor;
  c_.classFormulas[c] = f;
  return c;
}

void Generator::require(const Terms& terms, int64_t offset, int64_t modulus) {
  ClassConstraint k;
  k.offset = offset;
  k.modulus = modulus;
  int64_t now = offset;
  bool all_pinned = true;
  for (const auto& [c, m] : terms) {
    now += m * c_.classValues[size_t(root(c))];
    all_pinned = all_pinned && c_.classPinned[size_t(root(c))];
    k.terms.emplace_back(c, m);
  }
  if (modulus == 0 ? now < 0 : now % modulus != 0) {
    throw GeneratorError("a size constraint does not hold for the first run");
  }
  if (!all_pinned) c_.classConstraints.push_back(std::move(k));
}

// ---- Sizes given as Scalars -------------------------------------------------------------------

ir::Scalar* Generator::sizeScalar(int cls, int64_t coef, int64_t offset) {
  InputSpec in;
  in.isTensor = false;
  in.dtype = DataType::Int64;
  in.scalarClass = cls;
  in.scalarCoef = coef;
  in.scalarOffset = offset;
  const int64_t v = cls >= 0 ? coef * c_.classValues[size_t(root(cls))] + offset : offset;
  in.scalarValues.assign(3, double(v));
  ir::Scalar* s = ir::IrBuilder::symbolic(DataType::Int64);
  c_.fusion->addInput(s);
  c_.inputs.push_back(in);
  c_.features.insert("size-scalar");
  std::string how = cls < 0 ? "constant" : "follows the sizes";
  note(s->toString() + " = size scalar input " + std::to_string(v) + " (" + how + ")");
  return s;
}

ops::Size Generator::sizeFor(int cls, bool allow_const) {
  const int r = root(cls);
  if (allow_const && c_.classPinned[size_t(r)] && rng_.chance(0.6)) {
    return ops::Size(c_.classValues[size_t(r)]);
  }
  std::vector<ir::Scalar*> extents;
  for (size_t t = 0; t < ts_.size(); ++t) {
    const GenTensor& g = ts_[t];
    for (size_t d = 0; d < g.dims.size(); ++d) {
      if (g.dims[d].kind != DimKind::Bcast && root(g.dims[d].cls) == r) {
        extents.push_back(extentScalar(int(t), d));
      }
    }
  }
  if (!extents.empty() && rng_.chance(0.5)) {
    ir::Scalar* e = rng_.pick(extents);
    if (allow_const || !e->isConst()) return ops::Size(e);
  }
  return ops::Size(sizeScalar(cls, 1, 0));
}

}  // namespace loom::fuzz::detail
