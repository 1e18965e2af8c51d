// SPDX-License-Identifier: Apache-2.0
// Structural equality of fusions.
//
// Walks both graphs from the inputs and outputs in lockstep, building a one-to-one map between
// their Vals, then matches their extent requirements (the size checks a run makes). Two Vals
// match when they have the same kind, dtype and fields, their referenced nodes (domains, IDs,
// extents) match, and their definitions match. A mapping is recorded before recursing so that
// siblings (outputs of one expr) are matched once.
#include "loom/ir/equality.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "loom/ir/dispatch.h"
#include "loom/ir/fusion.h"

namespace loom::ir {
namespace {

class Matcher {
 public:
  bool vals(const Val* a, const Val* b) {
    if (a == nullptr || b == nullptr) return fail(a == b, "one side is missing a value");
    if (auto it = a2b_.find(a); it != a2b_.end()) {
      return fail(it->second == b, a->toString() + " already matched another node than " +
                                       b->toString());
    }
    // Constants are values, not identities: two uses of `4` may share one Scalar in one fusion
    // and not in the other (the text form does not record which constants are shared).
    if (a->isA<Scalar>() && b->isA<Scalar>() && a->as<Scalar>()->isConst() &&
        b->as<Scalar>()->isConst()) {
      return fail(a->dtype() == b->dtype(), a->toString() + " and " + b->toString() +
                                                " have different data types") &&
             fields(a, b);
    }
    if (b2a_.count(b)) return fail(false, b->toString() + " already matched another node");
    if (!fail(a->kind() == b->kind(), a->toString() + " and " + b->toString() +
                                          " are different kinds of node"))
      return false;
    if (!fail(a->dtype() == b->dtype(), a->toString() + " and " + b->toString() +
                                            " have different data types"))
      return false;
    a2b_[a] = b;
    b2a_[b] = a;
    return fields(a, b) && definitions(a, b);
  }

  bool exprs(const Expr* a, const Expr* b) {
    if (a == nullptr || b == nullptr) return fail(a == b, "one side is missing a definition");
    if (auto it = e2e_.find(a); it != e2e_.end()) return fail(it->second == b, "exprs differ");
    if (!fail(a->kind() == b->kind() && a->sameAttributes(b),
              "'" + a->toString() + "' differs from '" + b->toString() + "'"))
      return false;
    e2e_[a] = b;
    auto lists = [&](const std::vector<Val*>& x, const std::vector<Val*>& y) {
      if (!fail(x.size() == y.size(), "'" + a->toString() + "' has a different number of operands"))
        return false;
      for (size_t i = 0; i < x.size(); ++i) {
        if (!vals(x[i], y[i])) return false;
      }
      return true;
    };
    return lists(a->outputs(), b->outputs()) && lists(a->inputs(), b->inputs()) &&
           lists(a->attributeVals(), b->attributeVals());
  }

  // Every extent requirement of `a` matches one of `b`'s (and so, with equal counts, the other
  // way): the same expected value, and value and extent Scalars that match structurally. In any
  // order (ops made in another order add theirs in another order); messages are not compared (they
  // name tensors, whose names differ between the two).
  bool requirements(const Fusion& a, const Fusion& b) {
    const std::vector<ExtentRequirement>& ra = a.extentRequirements();
    const std::vector<ExtentRequirement>& rb = b.extentRequirements();
    if (!fail(ra.size() == rb.size(), "different numbers of extent requirements (" +
                                          std::to_string(ra.size()) + " and " +
                                          std::to_string(rb.size()) + ")"))
      return false;
    std::vector<bool> used(rb.size(), false);
    for (const ExtentRequirement& x : ra) {
      bool found = false;
      for (size_t j = 0; j < rb.size() && !found; ++j) {
        if (used[j] || rb[j].expected != x.expected) continue;
        Matcher trial = *this;  // a failed try leaves this matcher's map as it was
        if (trial.vals(x.value, rb[j].value) && trial.vals(x.extent, rb[j].extent)) {
          *this = std::move(trial);
          used[j] = true;
          found = true;
        }
      }
      if (!found) return fail(false, "the requirement '" + x.what + "' has no counterpart");
    }
    return true;
  }

  std::string why;

 private:
  bool fail(bool ok, const std::string& msg) {
    if (!ok && why.empty()) why = msg;
    return ok;
  }

  bool idLists(const std::vector<IterDomain*>& a, const std::vector<IterDomain*>& b,
               const char* what) {
    if (!fail(a.size() == b.size(), std::string(what) + " domains have different lengths"))
      return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!vals(a[i], b[i])) return false;
    }
    return true;
  }

  bool definitions(const Val* a, const Val* b) {
    return exprs(a->definition(), b->definition());
  }

  bool fields(const Val* a, const Val* b) {
    switch (a->kind()) {
      case NodeKind::Scalar: {
        auto* x = a->as<Scalar>();
        auto* y = b->as<Scalar>();
        bool same = x->value().index() == y->value().index();
        if (same) {
          auto dx = x->constDouble(), dy = y->constDouble();
          if (dx && dy) same = *dx == *dy || (std::isnan(*dx) && std::isnan(*dy));
        }
        return fail(same, "scalars " + x->toString() + " and " + y->toString() + " differ");
      }
      case NodeKind::IterDomain: {
        auto* x = a->as<IterDomain>();
        auto* y = b->as<IterDomain>();
        if (!fail(x->iterType() == y->iterType() && x->parallelType() == y->parallelType() &&
                      x->isRFactorProduct() == y->isRFactorProduct() &&
                      x->hasExpandedExtent() == y->hasExpandedExtent(),
                  "IterDomains " + x->toString() + " and " + y->toString() + " differ"))
          return false;
        return vals(x->start(), y->start()) && vals(x->extent(), y->extent()) &&
               vals(x->expandedExtent(), y->expandedExtent());
      }
      case NodeKind::TensorDomain: {
        auto* x = a->as<TensorDomain>();
        auto* y = b->as<TensorDomain>();
        return idLists(x->root(), y->root(), "root") &&
               idLists(x->logical(), y->logical(), "logical") &&
               idLists(x->allocation(), y->allocation(), "allocation") &&
               idLists(x->loop(), y->loop(), "loop") &&
               fail(x->contiguity() == y->contiguity(), "contiguity differs");
      }
      case NodeKind::TensorView: {
        auto* x = a->as<TensorView>();
        auto* y = b->as<TensorView>();
        if (!fail(x->memoryType() == y->memoryType() && x->deviceMesh() == y->deviceMesh() &&
                      x->computeAtPosition() == y->computeAtPosition() &&
                      x->maxProducerPosition() == y->maxProducerPosition(),
                  "tensors " + x->toString() + " and " + y->toString() +
                      " differ in memory type, mesh or inline positions"))
          return false;
        return vals(x->domain(), y->domain());
      }
      default:
        return fail(false, "unexpected value kind");
    }
  }

  std::unordered_map<const Val*, const Val*> a2b_, b2a_;
  std::unordered_map<const Expr*, const Expr*> e2e_;
};

}  // namespace

bool structurallyEqual(const Fusion& a, const Fusion& b, std::string* why) {
  Matcher m;
  bool ok = true;
  if (a.inputs().size() != b.inputs().size() || a.outputs().size() != b.outputs().size()) {
    m.why = "different numbers of inputs or outputs";
    ok = false;
  }
  for (size_t i = 0; ok && i < a.inputs().size(); ++i) ok = m.vals(a.inputs()[i], b.inputs()[i]);
  for (size_t i = 0; ok && i < a.outputs().size(); ++i) {
    ok = m.vals(a.outputs()[i], b.outputs()[i]);
  }
  // In-place outputs: the same outputs written into the same inputs.
  auto positions = [](const Fusion& f) {
    std::vector<std::pair<int64_t, int64_t>> out;
    for (const auto& [o, i] : f.aliases()) {
      out.emplace_back(std::find(f.outputs().begin(), f.outputs().end(), o) - f.outputs().begin(),
                       std::find(f.inputs().begin(), f.inputs().end(), i) - f.inputs().begin());
    }
    return out;
  };
  if (ok && positions(a) != positions(b)) {
    m.why = "different in-place outputs (outputs written into inputs)";
    ok = false;
  }
  ok = ok && m.requirements(a, b);
  if (!ok && why != nullptr) *why = m.why;
  return ok;
}

}  // namespace loom::ir
