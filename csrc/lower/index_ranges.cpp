// SPDX-License-Identifier: Apache-2.0
// Interval bounds of kernel index values (see index_ranges.h for what is known and why).
#include "index_ranges.h"

#include <algorithm>
#include <limits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "loom/eval/expression_evaluator.h"

namespace loom::lower {

namespace {

using Op = ir::BinaryOpType;

// Bounds outside int32 are treated as unknown (an int32 kernel would overflow there).
std::optional<IndexRange> checked(int64_t lo, int64_t hi) {
  constexpr int64_t kMin = std::numeric_limits<int32_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  if (lo < kMin || hi > kMax || lo > hi) return std::nullopt;
  return IndexRange{lo, hi};
}

std::string indexName(ir::ParallelType p) {
  std::string name(ir::parallelTypeName(p));  // "TIDx" -> "threadIdx.x"
  return std::string(ir::isThreadDim(p) ? "threadIdx." : "blockIdx.") + name.back();
}

bool isIndex(const kir::Value* v) {
  return v->dtype() == DataType::Int64 || v->dtype() == DataType::Int32;
}

}  // namespace

IndexRanges::IndexRanges(const kir::Kernel& kernel) {
  for (const kir::LaunchDim& d : kernel.launch) {
    std::optional<int64_t> extent = kir::constantLaunchExtent(kernel, d.ptype);
    if (!extent || *extent < 1) continue;
    launch_[d.ptype] = {0, *extent - 1};
    named_[indexName(d.ptype)] = {0, *extent - 1};
  }
}

void IndexRanges::enterLoop(const kir::ForLoop* loop) {
  forget();
  if (loop->isParallel()) {
    auto it = launch_.find(loop->ptype);
    if (it != launch_.end()) vars_[loop->index] = it->second;
    return;
  }
  auto start = range(loop->start);
  auto stop = range(loop->stop);
  // The body runs only for start <= i < stop, so i <= max(stop) - 1 (an empty loop runs nothing).
  if (start && stop && stop->hi - 1 >= start->lo) vars_[loop->index] = {start->lo, stop->hi - 1};
  forget();
}

void IndexRanges::exitLoop(const kir::ForLoop* loop) {
  vars_.erase(loop->index);
  forget();
}

std::optional<IndexRange> IndexRanges::range(const kir::Value* v) const {
  if (v == nullptr || !isIndex(v)) return std::nullopt;
  if (auto it = memo_.find(v); it != memo_.end()) return it->second;
  // Operands first, with an explicit stack: only index BinaryExprs have operands here.
  std::vector<std::pair<const kir::Value*, bool>> stack{{v, false}};
  while (!stack.empty()) {
    auto [x, expanded] = stack.back();
    if (memo_.count(x) != 0) {
      stack.pop_back();
      continue;
    }
    auto* b = x->dynCast<kir::BinaryExpr>();
    if (b != nullptr && isIndex(b) && !expanded) {
      stack.back().second = true;
      for (const kir::Value* in : {b->rhs, b->lhs}) {
        if (isIndex(in) && memo_.count(in) == 0) stack.push_back({in, false});
      }
      continue;
    }
    stack.pop_back();
    memo_[x] = rangeOfNode(x);
  }
  return memo_.at(v);
}

std::optional<IndexRange> IndexRanges::rangeOfNode(const kir::Value* v) const {
  if (!isIndex(v)) return std::nullopt;
  if (auto* c = v->dynCast<kir::Const>()) {
    auto i = c->asInt();
    if (!i) return std::nullopt;
    return checked(*i, *i);
  }
  if (auto* var = v->dynCast<kir::Var>()) {
    auto it = vars_.find(var);
    if (it == vars_.end()) return std::nullopt;
    return it->second;
  }
  if (auto* n = v->dynCast<kir::NamedScalar>()) {
    auto it = named_.find(n->name);
    if (it == named_.end()) return std::nullopt;
    return it->second;
  }
  auto* b = v->dynCast<kir::BinaryExpr>();
  if (b == nullptr || !isIndex(b->lhs) || !isIndex(b->rhs)) return std::nullopt;
  const std::optional<IndexRange>& l = memo_.at(b->lhs);
  const std::optional<IndexRange>& r = memo_.at(b->rhs);
  if (!l || !r) return std::nullopt;
  // Operands are within int32, so int64 arithmetic below cannot overflow.
  switch (b->op) {
    case Op::Add: return checked(l->lo + r->lo, l->hi + r->hi);
    case Op::Sub: return checked(l->lo - r->hi, l->hi - r->lo);
    case Op::Mul: {
      int64_t p[4] = {l->lo * r->lo, l->lo * r->hi, l->hi * r->lo, l->hi * r->hi};
      return checked(*std::min_element(p, p + 4), *std::max_element(p, p + 4));
    }
    case Op::Div: {
      // Truncating division by a positive divisor is monotone in each operand: corners bound it.
      if (r->lo <= 0) return std::nullopt;
      int64_t p[4] = {l->lo / r->lo, l->lo / r->hi, l->hi / r->lo, l->hi / r->hi};
      return checked(*std::min_element(p, p + 4), *std::max_element(p, p + 4));
    }
    case Op::Mod: {
      if (r->lo <= 0) return std::nullopt;
      if (l->lo >= 0 && l->hi < r->lo) return l;  // x % d == x for 0 <= x < d
      if (l->lo >= 0) return checked(0, std::min(l->hi, r->hi - 1));
      return checked(1 - r->hi, std::max<int64_t>(0, std::min(l->hi, r->hi - 1)));
    }
    case Op::CeilDiv: {
      if (r->lo <= 0 || l->lo < 0) return std::nullopt;
      return checked((l->lo + r->hi - 1) / r->hi, (l->hi + r->lo - 1) / r->lo);
    }
    case Op::Max: return checked(std::max(l->lo, r->lo), std::max(l->hi, r->hi));
    case Op::Min: return checked(std::min(l->lo, r->lo), std::min(l->hi, r->hi));
    default: return std::nullopt;
  }
}

namespace {

bool isAnd(const kir::Value* v) {
  auto* b = v->dynCast<kir::BinaryExpr>();
  return b != nullptr && b->op == Op::LogicalAnd;
}

// The conjuncts of `cond` (its && operands, nested ones flattened) from left to right.
std::vector<const kir::Value*> conjuncts(const kir::Value* cond) {
  std::vector<const kir::Value*> out;
  std::vector<const kir::Value*> work{cond};
  while (!work.empty()) {
    const kir::Value* v = work.back();
    work.pop_back();
    if (isAnd(v)) {
      work.push_back(v->as<kir::BinaryExpr>()->rhs);
      work.push_back(v->as<kir::BinaryExpr>()->lhs);
    } else {
      out.push_back(v);
    }
  }
  return out;
}

}  // namespace

bool IndexRanges::provablyTrue(const kir::Value* cond) const {
  for (const kir::Value* c : conjuncts(cond)) {
    if (auto* k = c->dynCast<kir::Const>()) {
      auto* v = std::get_if<bool>(&k->value);
      if (v == nullptr || !*v) return false;
      continue;
    }
    auto* b = c->dynCast<kir::BinaryExpr>();
    if (b == nullptr || b->dtype() != DataType::Bool) return false;
    auto l = range(b->lhs);
    auto r = range(b->rhs);
    if (!l || !r) return false;
    bool holds = false;
    switch (b->op) {
      case Op::Lt: holds = l->hi < r->lo; break;
      case Op::Le: holds = l->hi <= r->lo; break;
      case Op::Gt: holds = l->lo > r->hi; break;
      case Op::Ge: holds = l->lo >= r->hi; break;
      case Op::Eq: holds = l->lo == l->hi && r->lo == r->hi && l->lo == r->lo; break;
      case Op::Ne: holds = l->hi < r->lo || r->hi < l->lo; break;
      default: break;
    }
    if (!holds) return false;
  }
  return true;
}

kir::Value* IndexRanges::dropProvable(kir::Kernel& kernel, kir::Value* cond) const {
  // Bottom-up over the && nodes (explicit stack); a node keeps its shape where nothing dropped.
  std::unordered_map<const kir::Value*, kir::Value*> kept;  // null: always true
  std::vector<std::pair<kir::Value*, bool>> stack{{cond, false}};
  while (!stack.empty()) {
    auto [v, expanded] = stack.back();
    if (!isAnd(v)) {
      stack.pop_back();
      kept[v] = provablyTrue(v) ? nullptr : v;
      continue;
    }
    auto* b = v->as<kir::BinaryExpr>();
    if (!expanded) {
      stack.back().second = true;
      stack.push_back({b->rhs, false});
      stack.push_back({b->lhs, false});
      continue;
    }
    stack.pop_back();
    kir::Value* l = kept.at(b->lhs);
    kir::Value* r = kept.at(b->rhs);
    if (l == nullptr) {
      kept[v] = r;
    } else if (r == nullptr) {
      kept[v] = l;
    } else if (l == b->lhs && r == b->rhs) {
      kept[v] = v;
    } else {
      kept[v] = kernel.create<kir::BinaryExpr>(DataType::Bool, Op::LogicalAnd, l, r);
    }
  }
  return kept.at(cond);
}

void IndexRanges::narrow(const kir::Value* cond) {
  for (const kir::Value* c : conjuncts(cond)) narrowBy(c);
}

void IndexRanges::narrowBy(const kir::Value* cond) {
  forget();
  auto* b = cond->dynCast<kir::BinaryExpr>();
  if (b == nullptr || b->dtype() != DataType::Bool) return;
  if (b->op != Op::Lt && b->op != Op::Eq) return;
  IndexRange* x = nullptr;
  if (auto* var = b->lhs->dynCast<kir::Var>()) {
    auto it = vars_.find(var);
    if (it != vars_.end()) x = &it->second;
  } else if (auto* n = b->lhs->dynCast<kir::NamedScalar>()) {
    auto it = named_.find(n->name);
    if (it != named_.end()) x = &it->second;
  }
  auto bound = range(b->rhs);
  if (x == nullptr || !bound) return;
  // Inside the branch the condition held; an empty result means the branch never runs.
  if (b->op == Op::Lt) {
    x->hi = std::min(x->hi, bound->hi - 1);
  } else {
    x->lo = std::max(x->lo, bound->lo);
    x->hi = std::min(x->hi, bound->hi);
  }
  if (x->hi < x->lo) x->hi = x->lo;  // never runs: any bound is vacuously true; keep it ordered
  forget();
}

}  // namespace loom::lower
