// SPDX-License-Identifier: Apache-2.0
// The pool of tensors the generator built: adopting an op's result (its shape checked against
// the IR), what is known of the precision upstream, and picking operands that fit.
#include <algorithm>
#include <set>

#include "fuzz/generator_internal.h"

namespace loom::fuzz::detail {

// ---- The pool ---------------------------------------------------------------------------------

int Generator::adopt(TensorView* tv, std::vector<GenDim> dims, Num num, std::vector<int> red,
                     double tol) {
  auto ids = ir::TensorDomain::noReductions(tv->logical());
  auto fail = [&](const std::string& why) {
    std::ostringstream os;
    os << "the generator's model of " << tv->toString() << " is wrong: " << why << " (family "
       << family_ << ", defined by " << (tv->definition() ? tv->definition()->toString() : "-")
       << "); steps so far:";
    for (const std::string& s : c_.steps) os << "\n  " << s;
    throw GeneratorError(os.str());
  };
  if (ids.size() != dims.size()) {
    fail("rank " + std::to_string(ids.size()) + ", expected " + std::to_string(dims.size()));
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    ir::IterDomain* id = ids[i];
    DimKind k = id->isBroadcast() ? (id->hasExpandedExtent() ? DimKind::Expanded : DimKind::Bcast)
                                  : DimKind::Iter;
    if (k != dims[i].kind) fail("the kind of dim " + std::to_string(i) + " differs");
    auto c = id->logicalExtent()->constInt();
    if (k == DimKind::Bcast) {
      if (c != 1) fail("broadcast dim " + std::to_string(i) + " is not of size 1");
      continue;
    }
    if (c.has_value()) {
      if (*c != value(dims[i])) {
        fail("dim " + std::to_string(i) + " has constant size " + std::to_string(*c) +
             ", expected " + std::to_string(value(dims[i])));
      }
      pin(dims[i].cls);
    }
  }
  if (!(num.mag < 1e300)) num.mag = kInf;
  if (!num.exact) num.lowp = tv->dtype() != DataType::Float64 || upstreamLowPrecision(tv);
  if (tol > kMaxTolScale) throw GeneratorError("tolerance scale above the limit was adopted");
  pool_index_[tv] = int(ts_.size());
  GenTensor t;
  t.tv = tv;
  t.dims = std::move(dims);
  t.num = num;
  t.red = std::move(red);
  t.tol = std::max(1.0, tol);
  ts_.push_back(std::move(t));
  std::vector<int> classes;
  for (const GenDim& d : ts_.back().dims) classes.push_back(d.kind == DimKind::Bcast ? -1 : d.cls);
  c_.tensorClasses.push_back(std::move(classes));
  return int(ts_.size()) - 1;
}

DataType Generator::coarsestInexactUpstream(int t) {
  // Machine epsilon orders the floating types: BFloat16 is the coarsest.
  auto coarser = [](DataType a, DataType b) {
    auto eps = [](DataType d) {
      switch (d) {
        case DataType::BFloat16: return 0x1p-8;
        case DataType::Float16: return 0x1p-11;
        case DataType::Float32: return 0x1p-24;
        default: return 0x1p-53;
      }
    };
    return eps(a) > eps(b) ? a : b;
  };
  DataType result = DataType::Float64;
  std::vector<ir::Val*> stack{ts_[size_t(t)].tv};
  std::set<ir::Val*> seen;
  while (!stack.empty()) {
    ir::Val* v = stack.back();
    stack.pop_back();
    if (!seen.insert(v).second) continue;
    auto* tv = v->as<TensorView>();
    // Tensors inside a composite op are not in the pool: walked through, judged by what the
    // pool knows above and below them.
    auto it = pool_index_.find(tv);
    if (it != pool_index_.end()) {
      const GenTensor& g = ts_[size_t(it->second)];
      if (!g.num.exact && isFloatingType(tv->dtype())) result = coarser(result, tv->dtype());
    }
    ir::Expr* def = tv->definition();
    if (def == nullptr) continue;
    for (ir::Val* in : def->inputs()) {
      if (in->isA<TensorView>()) stack.push_back(in);
    }
  }
  return result;
}

bool Generator::upstreamLowPrecision(TensorView* tv) {
  std::vector<ir::Val*> stack{tv};
  std::set<ir::Val*> seen;
  while (!stack.empty()) {
    ir::Val* v = stack.back();
    stack.pop_back();
    ir::Expr* def = v->definition();
    if (def == nullptr) continue;
    for (ir::Val* in : def->inputs()) {
      auto* t = in->dynCast<TensorView>();
      if (t == nullptr || !seen.insert(t).second) continue;
      auto it = pool_index_.find(t);
      if (it != pool_index_.end()) {
        const Num& n = ts_[size_t(it->second)].num;
        if (!n.exact && n.lowp) return true;
        continue;
      }
      if (isFloatingType(t->dtype()) && t->dtype() != DataType::Float64) return true;
      stack.push_back(t);
    }
  }
  return false;
}

int Generator::pick(const std::function<bool(const GenTensor&)>& ok) {
  std::vector<double> w(ts_.size(), 0.0);
  bool any = false;
  for (size_t i = 0; i < ts_.size(); ++i) {
    if (ok && !ok(ts_[i])) continue;
    w[i] = (1.0 + 0.3 * double(i)) * (ts_[i].uses == 0 ? 3.0 : 1.0);
    any = true;
  }
  if (!any) return -1;
  return int(rng_.weighted(w));
}

int Generator::partner(int a, const std::function<bool(const GenTensor&)>& ok) {
  std::vector<double> w(ts_.size(), 0.0);
  bool any = false;
  for (size_t i = 0; i < ts_.size(); ++i) {
    if (ok && !ok(ts_[i])) continue;
    auto shape = broadcastShape({a, int(i)});
    if (!shape || !fits(*shape)) continue;
    w[i] = (int(i) == a ? 0.3 : 1.0 + 0.2 * double(i)) * (ts_[i].uses == 0 ? 2.0 : 1.0);
    any = true;
  }
  if (!any) return -1;
  return int(rng_.weighted(w));
}

std::optional<std::vector<GenDim>> Generator::broadcastShape(const std::vector<int>& tensors) {
  size_t rank = 0;
  for (int t : tensors) rank = std::max(rank, ts_[size_t(t)].dims.size());
  std::vector<GenDim> out(rank, GenDim{DimKind::Bcast, -1});
  for (size_t pos = 0; pos < rank; ++pos) {
    std::optional<int64_t> sized;
    bool any_iter = false;
    for (int t : tensors) {
      const auto& dims = ts_[size_t(t)].dims;
      if (pos + dims.size() < rank) continue;
      const GenDim& d = dims[pos + dims.size() - rank];
      if (d.kind == DimKind::Bcast) continue;
      int64_t s = value(d);
      if (sized && *sized != s) return std::nullopt;
      sized = s;
      if (d.kind == DimKind::Iter && !any_iter) {
        out[pos] = d;
        any_iter = true;
      } else if (!any_iter && out[pos].kind == DimKind::Bcast) {
        out[pos] = d;
      }
    }
  }
  return out;
}

void Generator::commitShape(const std::vector<int>& tensors) {
  size_t rank = 0;
  for (int t : tensors) rank = std::max(rank, ts_[size_t(t)].dims.size());
  for (size_t pos = 0; pos < rank; ++pos) {
    int first = -1;
    for (int t : tensors) {
      const auto& dims = ts_[size_t(t)].dims;
      if (pos + dims.size() < rank) continue;
      const GenDim& d = dims[pos + dims.size() - rank];
      if (d.kind == DimKind::Bcast) continue;
      if (first < 0) {
        first = d.cls;
      } else {
        unify(first, d.cls);
      }
    }
  }
}

}  // namespace loom::fuzz::detail
