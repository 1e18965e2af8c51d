// SPDX-License-Identifier: Apache-2.0
// The shape op families: broadcast (and its builder), broadcastInDim, expand, squeeze,
// permute, set and static reshape.
#include <algorithm>
#include <numeric>

#include "fuzz/generator_internal.h"

namespace loom::fuzz::detail {

int Generator::broadcastOp(int t, const std::vector<bool>& flags) {
  const GenTensor& x = ts_[size_t(t)];
  std::vector<GenDim> dims;
  size_t next = 0;
  for (bool f : flags) dims.push_back(f ? GenDim{DimKind::Bcast, -1} : x.dims[next++]);
  if (next != x.dims.size()) return -1;
  TensorView* out = ops::broadcast(x.tv, flags);
  if (out == x.tv) return t;
  ++ts_[size_t(t)].uses;
  GenTensor copy = ts_[size_t(t)];
  int idx = adopt(out, dims, copy.num, copy.red, copy.tol);
  std::string f;
  for (bool b : flags) f += b ? "B" : "-";
  note(name(idx) + " = broadcast(" + name(t) + ", " + f + ")");
  return idx;
}

bool Generator::famBroadcast() {
  int t = pick([](const GenTensor& g) { return g.dims.size() < 4; });
  if (t < 0) return false;
  const auto rank = int64_t(ts_[size_t(t)].dims.size());
  if (rng_.chance(0.5)) {
    // unsqueeze, with a negative position sometimes.
    int64_t d = rng_.range(0, rank);
    std::vector<bool> flags(size_t(rank + 1), false);
    flags[size_t(d)] = true;
    const GenTensor& x = ts_[size_t(t)];
    std::vector<GenDim> dims = x.dims;
    dims.insert(dims.begin() + d, GenDim{DimKind::Bcast, -1});
    int64_t spelled = rng_.chance(0.3) ? d - (rank + 1) : d;
    TensorView* out = ops::unsqueeze(x.tv, spelled);
    ++ts_[size_t(t)].uses;
    GenTensor copy = ts_[size_t(t)];
    int idx = adopt(out, dims, copy.num, copy.red, copy.tol);
    note(name(idx) + " = unsqueeze(" + name(t) + ", " + std::to_string(spelled) + ")");
    return true;
  }
  int64_t add = rank <= 2 && rng_.chance(0.4) ? 2 : 1;
  std::vector<bool> flags(size_t(rank + add), false);
  std::vector<int64_t> pos = rng_.permutation(rank + add);
  for (int64_t i = 0; i < add; ++i) flags[size_t(pos[size_t(i)])] = true;
  return broadcastOp(t, flags) >= 0;
}

bool Generator::famBroadcastInDim() {
  int t = pick([](const GenTensor& g) { return g.dims.size() < 4; });
  if (t < 0) return false;
  const GenTensor x = ts_[size_t(t)];
  const auto rank = int64_t(x.dims.size());
  const int64_t out_rank = rng_.range(std::max<int64_t>(rank, 1), 4);
  // Increasing positions for x's dims.
  std::vector<int64_t> all = rng_.permutation(out_rank);
  std::vector<int64_t> pos(all.begin(), all.begin() + rank);
  std::sort(pos.begin(), pos.end());
  std::vector<int64_t> shape(static_cast<size_t>(out_rank));
  std::vector<GenDim> dims(static_cast<size_t>(out_rank));
  std::vector<bool> mapped(size_t(out_rank), false);
  for (int64_t i = 0; i < rank; ++i) mapped[size_t(pos[size_t(i)])] = true;
  auto stretch_size = [&]() -> int64_t {
    // Often the size of a dim some tensor already has, so that the result combines.
    if (rng_.chance(0.6)) {
      const GenTensor& other = ts_[rng_.below(ts_.size())];
      for (const GenDim& d : other.dims) {
        if (d.kind != DimKind::Bcast && value(d) > 1 && rng_.chance(0.5)) return value(d);
      }
    }
    return rng_.range(1, 12);
  };
  int64_t j = 0;
  for (int64_t d = 0; d < out_rank; ++d) {
    if (mapped[size_t(d)]) {
      const GenDim& g = x.dims[size_t(j++)];
      if (g.kind == DimKind::Bcast && rng_.chance(0.5)) {
        int64_t s = stretch_size();
        shape[size_t(d)] = s;
        dims[size_t(d)] =
            s == 1 ? GenDim{DimKind::Bcast, -1} : GenDim{DimKind::Expanded, newClass(s, true, s)};
      } else {
        shape[size_t(d)] = pinned(g) ? value(g) : -1;
        dims[size_t(d)] = g;
        // An expanded dim of a symbolic size pinned to 1: broadcastInDim expands it to the
        // constant 1 (checked against the size at run time), which is a plain broadcast.
        if (g.kind == DimKind::Expanded && shape[size_t(d)] == 1) {
          dims[size_t(d)] = GenDim{DimKind::Bcast, -1};
        }
      }
    } else {
      int64_t s = rng_.chance(0.2) ? 1 : stretch_size();
      shape[size_t(d)] = s;
      dims[size_t(d)] =
          s == 1 ? GenDim{DimKind::Bcast, -1} : GenDim{DimKind::Expanded, newClass(s, true, s)};
    }
  }
  if (!fits(dims)) return false;
  TensorView* out = ops::broadcastInDim(x.tv, shape, pos);
  if (out == x.tv) return false;
  ++ts_[size_t(t)].uses;
  int idx = adopt(out, dims, x.num, x.red, x.tol);
  note(name(idx) + " = broadcast_in_dim(" + name(t) + ", " + shapeText(shape) + ", " +
       shapeText(pos) + ")");
  return true;
}

bool Generator::famExpand() {
  int t = pick([](const GenTensor& g) {
    return g.dims.size() < 4 || std::any_of(g.dims.begin(), g.dims.end(), [](const GenDim& d) {
             return d.kind == DimKind::Bcast;
           });
  });
  if (t < 0) return false;
  const GenTensor x = ts_[size_t(t)];
  const auto rank = int64_t(x.dims.size());
  int64_t lead = rank < 4 && rng_.chance(0.3) ? 1 : 0;
  std::vector<int64_t> sizes;
  std::vector<GenDim> dims;
  bool any = false;
  auto size_for = [&](int64_t pos_from_right) -> int64_t {
    // Prefer a size some other tensor has at this (right-aligned) position.
    std::vector<int64_t> cands;
    for (const GenTensor& g : ts_) {
      auto r = int64_t(g.dims.size());
      if (pos_from_right < r) {
        const GenDim& d = g.dims[size_t(r - 1 - pos_from_right)];
        if (d.kind != DimKind::Bcast && value(d) > 1) cands.push_back(value(d));
      }
    }
    if (!cands.empty() && rng_.chance(0.7)) return rng_.pick(cands);
    return rng_.range(2, 16);
  };
  for (int64_t i = 0; i < lead; ++i) {
    int64_t s = size_for(rank + lead - 1 - i);
    sizes.push_back(s);
    dims.push_back({DimKind::Expanded, newClass(s, true, s)});
    any = true;
  }
  for (int64_t d = 0; d < rank; ++d) {
    const GenDim& g = x.dims[size_t(d)];
    if (g.kind == DimKind::Bcast && rng_.chance(0.7)) {
      int64_t s = size_for(rank - 1 - d);
      sizes.push_back(s);
      dims.push_back({DimKind::Expanded, newClass(s, true, s)});
      any = true;
    } else {
      sizes.push_back(-1);
      dims.push_back(g);
    }
  }
  if (!any || !fits(dims)) return false;
  TensorView* out = ops::expand(x.tv, sizes);
  ++ts_[size_t(t)].uses;
  int idx = adopt(out, dims, x.num, x.red, x.tol);
  note(name(idx) + " = expand(" + name(t) + ", " + shapeText(sizes) + ")");
  c_.features.insert("expand");
  return true;
}

bool Generator::famSqueeze() {
  // Size 1 in the IR: a broadcast, or an iteration dim of constant extent 1.
  auto squeezable = [](const GenTensor& g, size_t d) {
    ir::IterDomain* id = ir::TensorDomain::noReductions(g.tv->logical())[d];
    return !id->hasExpandedExtent() && id->logicalExtent()->constInt() == 1;
  };
  int t = pick([&](const GenTensor& g) {
    for (size_t d = 0; d < g.dims.size(); ++d) {
      if (squeezable(g, d)) return true;
    }
    return false;
  });
  if (t < 0) return false;
  const GenTensor x = ts_[size_t(t)];
  const auto rank = int64_t(x.dims.size());
  std::vector<int64_t> which;
  std::vector<GenDim> dims;
  for (int64_t d = 0; d < rank; ++d) {
    if (squeezable(x, size_t(d)) && (which.empty() || rng_.chance(0.5))) {
      which.push_back(rng_.chance(0.2) ? d - rank : d);
    } else {
      dims.push_back(x.dims[size_t(d)]);
    }
  }
  TensorView* out = ops::squeeze(x.tv, which);
  ++ts_[size_t(t)].uses;
  int idx = adopt(out, dims, x.num, x.red, x.tol);
  note(name(idx) + " = squeeze(" + name(t) + ", " + shapeText(which) + ")");
  return true;
}

bool Generator::famPermute() {
  int t = pick([](const GenTensor& g) { return g.dims.size() >= 2; });
  if (t < 0) return false;
  const GenTensor x = ts_[size_t(t)];
  const auto rank = int64_t(x.dims.size());
  std::vector<int64_t> perm;
  TensorView* out;
  std::string text;
  if (rng_.chance(0.4)) {
    int64_t a = int64_t(rng_.below(uint64_t(rank)));
    int64_t b = (a + 1 + int64_t(rng_.below(uint64_t(rank - 1)))) % rank;
    perm.resize(size_t(rank));
    std::iota(perm.begin(), perm.end(), int64_t(0));
    std::swap(perm[size_t(a)], perm[size_t(b)]);
    int64_t sa = rng_.chance(0.3) ? a - rank : a;
    out = ops::transpose(x.tv, sa, b);
    text = "transpose(" + name(t) + ", " + std::to_string(sa) + ", " + std::to_string(b) + ")";
  } else {
    perm = rng_.permutation(rank);
    out = ops::permute(x.tv, perm);
    text = "permute(" + name(t) + ", " + shapeText(perm) + ")";
  }
  std::vector<GenDim> dims;
  for (int64_t p : perm) dims.push_back(x.dims[size_t(p)]);
  ++ts_[size_t(t)].uses;
  int idx = adopt(out, dims, x.num, x.red, x.tol);
  note(name(idx) + " = " + text);
  c_.features.insert("permute");
  return true;
}

// A transpose the transpose scheduler tiles: two dims of at least 32 (famPermute's dims are
// mostly smaller), of a new [a, b] or [n, a, b] input or of a pool tensor that has two such dims,
// with a pointwise op in front so the tile holds a producer too.
bool Generator::famTransposeTile() {
  auto wide = [this](const GenTensor& g, size_t d) {
    return g.dims[d].kind != DimKind::Bcast && value(g.dims[d]) >= 32;
  };
  int t = pick([&](const GenTensor& g) {
    if (g.dims.size() < 2) return false;
    int n = 0;
    for (size_t d = 0; d < g.dims.size(); ++d) n += wide(g, d);
    return n >= 2;
  });
  if (t < 0 || rng_.chance(0.5)) {
    if (tensor_inputs_ >= opts_.maxTensorInputs) {
      if (t < 0) return false;
    } else {
      const int64_t a = rng_.range(32, 64);
      const int64_t b = rng_.range(32, opts_.maxInputNumel / a);
      const int64_t n = a * b * 2 <= opts_.maxInputNumel && rng_.chance(0.3) ? 2 : 1;
      std::vector<int> classes;
      if (n > 1) classes.push_back(newClass(n, false, n + 1));
      classes.push_back(newClass(a, false, a + 8));
      classes.push_back(newClass(b, false, b + 8));
      const double r = rng_.uniform();
      const DataType dt =
          r < 0.45 ? DataType::Float32 : (r < 0.75 ? DataType::BFloat16 : drawDtype());
      t = addTensorInput(classes, dt, false);
    }
  }
  const GenTensor x = ts_[size_t(t)];
  std::vector<int64_t> wides;
  for (size_t d = 0; d < x.dims.size(); ++d) {
    if (wide(x, d)) wides.push_back(int64_t(d));
  }
  // The innermost wide dim and another one.
  const int64_t b = wides.back();
  const int64_t a = wides[rng_.below(wides.size() - 1)];
  int src = t;
  if (isFloatingType(x.tv->dtype()) && rng_.chance(0.7)) {
    int u = unaryOp(rng_.chance(0.5) ? Un::Neg : Un::Abs, t);
    if (u >= 0) src = u;
  }
  std::vector<int64_t> perm(ts_[size_t(src)].dims.size());
  std::iota(perm.begin(), perm.end(), int64_t(0));
  std::swap(perm[size_t(a)], perm[size_t(b)]);
  permuteOp(src, perm);
  c_.features.insert("transpose-tile");
  return true;
}

// Channels last and back with images narrower than a tile: a new [N, C, (D,) H, W] input with
// C of 32 or more and small spatial dims (the transpose scheduler tiles them merged, or leaves
// a product under 32 to the pointwise scheduler), permuted to [N, (D,) H, W, C], or a new
// [N, (D,) H, W, C] input permuted to [N, C, (D,) H, W]; a per-channel bias in front half the
// time.
bool Generator::famChannelsLast() {
  if (tensor_inputs_ >= opts_.maxTensorInputs) return false;
  const int64_t spatial = rng_.chance(0.25) ? 3 : 2;
  std::vector<int64_t> image;
  int64_t pixels = 1;
  for (int64_t k = 0; k < spatial; ++k) {
    image.push_back(rng_.range(spatial == 3 ? 2 : 3, spatial == 3 ? 5 : 9));
    pixels *= image.back();
  }
  const int64_t c = rng_.range(32, 72);
  const int64_t n = c * pixels * 2 <= opts_.maxInputNumel && rng_.chance(0.5) ? 2 : 1;
  if (n * c * pixels > opts_.maxInputNumel) return false;
  const bool to_last = rng_.chance(0.5);
  const auto rank = spatial + 2;
  // The input's dims in its own order, and the permutation to the other layout.
  std::vector<int> classes{newClass(n, false, n + 1)};
  std::vector<int64_t> perm{0};
  if (to_last) {
    classes.push_back(newClass(c, false, c + 8));
    for (int64_t v : image) classes.push_back(newClass(v, false, v + 2));
    for (int64_t k = 2; k < rank; ++k) perm.push_back(k);
    perm.push_back(1);
  } else {
    for (int64_t v : image) classes.push_back(newClass(v, false, v + 2));
    classes.push_back(newClass(c, false, c + 8));
    perm.push_back(rank - 1);
    for (int64_t k = 1; k < rank - 1; ++k) perm.push_back(k);
  }
  const double r = rng_.uniform();
  const DataType dt = r < 0.5 ? DataType::Float32 : (r < 0.8 ? DataType::BFloat16 : drawDtype());
  int src = addTensorInput(classes, dt, false);
  const int64_t channel = to_last ? 1 : rank - 1;
  if (isFloatingType(dt) && tensor_inputs_ < opts_.maxTensorInputs && rng_.chance(0.5)) {
    const GenTensor x = ts_[size_t(src)];
    int bias = addTensorInput({x.dims[size_t(channel)].cls}, dt, false);
    std::vector<bool> bcast(size_t(rank), true);
    bcast[size_t(channel)] = false;
    int bi = broadcastOp(bias, bcast);
    if (bi < 0) return false;
    int sum = binaryOp(Bin::Add, tensorOpnd(src), tensorOpnd(bi));
    if (sum >= 0) src = sum;
  }
  permuteOp(src, perm);
  c_.features.insert("channels-last");
  return true;
}

int Generator::permuteOp(int src, const std::vector<int64_t>& perm) {
  const GenTensor y = ts_[size_t(src)];
  TensorView* out = ops::permute(y.tv, perm);
  std::vector<GenDim> dims;
  for (int64_t p : perm) dims.push_back(y.dims[size_t(p)]);
  ++ts_[size_t(src)].uses;
  int idx = adopt(out, dims, y.num, y.red, y.tol);
  note(name(idx) + " = permute(" + name(src) + ", " + shapeText(perm) + ")");
  c_.features.insert("permute");
  return idx;
}

bool Generator::famSet() {
  int t = pick();
  if (t < 0) return false;
  const GenTensor x = ts_[size_t(t)];
  TensorView* out = ops::set(x.tv);
  ++ts_[size_t(t)].uses;
  int idx = adopt(out, x.dims, x.num, x.red, x.tol);
  note(name(idx) + " = set(" + name(t) + ")");
  return true;
}

bool Generator::famReshape() {
  // reshape needs constant extents in the IR (a pinned class is not enough: the tensor's own
  // extent may still be symbolic).
  int t = pick([this](const GenTensor& g) {
    for (const GenDim& d : g.dims) {
      if (d.kind == DimKind::Expanded) return false;
    }
    for (ir::IterDomain* id : ir::TensorDomain::noReductions(g.tv->logical())) {
      if (!id->logicalExtent()->constInt().has_value()) return false;
    }
    return numel(g.dims) > 0;
  });
  if (t < 0) return false;
  const GenTensor x = ts_[size_t(t)];
  int64_t numel_x = numel(x.dims);
  // Prime factors of the element count, dealt into 1-4 dims, with some 1s.
  std::vector<int64_t> primes;
  for (int64_t n = numel_x, p = 2; n > 1;) {
    if (p * p > n) {
      primes.push_back(n);
      break;
    }
    if (n % p == 0) {
      primes.push_back(p);
      n /= p;
    } else {
      ++p;
    }
  }
  int64_t rank = rng_.range(1, 4);
  std::vector<int64_t> sizes(size_t(rank), 1);
  for (int64_t p : primes) sizes[rng_.below(uint64_t(rank))] *= p;
  if (rank < 4 && rng_.chance(0.2))
    sizes.insert(sizes.begin() + int64_t(rng_.below(uint64_t(rank + 1))), 1);
  std::vector<int64_t> spelled = sizes;
  if (rng_.chance(0.3)) spelled[rng_.below(spelled.size())] = -1;
  std::vector<GenDim> dims;
  for (int64_t s : sizes) {
    dims.push_back(s == 1 ? GenDim{DimKind::Bcast, -1}
                          : GenDim{DimKind::Iter, newClass(s, true, s)});
  }
  TensorView* out = ops::reshape(x.tv, spelled);
  // Sizes equal to x's give a copy (a dim of constant extent 1 stays an Iteration dim).
  if (out->definition() != nullptr && out->definition()->isA<ir::LoadStoreOp>()) dims = x.dims;
  ++ts_[size_t(t)].uses;
  int idx = adopt(out, dims, x.num, x.red, x.tol);
  note(name(idx) + " = reshape(" + name(t) + ", " + shapeText(spelled) + ")");
  c_.features.insert("reshape");
  return true;
}

}  // namespace loom::fuzz::detail
