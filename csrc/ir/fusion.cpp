// SPDX-License-Identifier: Apache-2.0
// Fusion: ownership, SSA wiring, traversal, dead-code removal, cloning; FusionGuard; IrBuilder.
#include "loom/ir/fusion.h"

#include <algorithm>
#include <unordered_set>

#include "loom/ir/builder.h"
#include "loom/ir/cloner.h"
#include "loom/ir/iter_domain.h"
#include "loom/ir/scalar.h"
#include "loom/ir/tensor_domain.h"
#include "loom/ir/tensor_view.h"

namespace loom::ir {
namespace {
thread_local Fusion* active_fusion = nullptr;
constexpr size_t kNumKinds = kNumNodeKinds;
}  // namespace

Fusion::Fusion() : next_name_(kNumKinds, 0) {}
Fusion::~Fusion() = default;

void Fusion::registerStatement(Statement* s, std::optional<int64_t> name) {
  LOOM_ASSERT(s->fusion_ == nullptr, "statement registered twice");
  std::unique_ptr<Statement> owned(s);
  s->fusion_ = this;
  int64_t& next = next_name_[size_t(s->kind())];
  if (name.has_value()) {
    // Names are counted up from the largest given one, which must leave room to count.
    constexpr int64_t kMaxName = int64_t{1} << 62;
    LOOM_CHECK(*name >= 0 && *name <= kMaxName, "the name number ", *name,
               " is out of range (0 to ", kMaxName, ")");
    s->name_ = *name;
    next = std::max(next, *name + 1);
  } else {
    s->name_ = next++;
  }
  s->slot_ = stmts_.size();
  stmts_.push_back(std::move(owned));
  if (auto* e = s->dynCast<Expr>()) {
    for (Val* v : e->inputs()) {
      LOOM_ASSERT(v != nullptr && v->fusion() == this, "expr ", e->opName(),
                  " has an input from another fusion");
    }
    for (Val* v : e->outputs()) {
      LOOM_ASSERT(v != nullptr && v->fusion() == this, "expr ", e->opName(),
                  " has an output from another fusion");
      // SSA: a new definition replaces the old one.
      if (v->definition_ != nullptr && v->definition_ != e) removeExpr(v->definition_);
    }
    wireExpr(e);
  }
}

void Fusion::wireExpr(Expr* e) {
  invalidateOrders();
  for (Val* v : e->inputs()) {
    if (std::find(v->uses_.begin(), v->uses_.end(), e) == v->uses_.end()) v->uses_.push_back(e);
  }
  for (Val* v : e->outputs()) v->definition_ = e;
}

void Fusion::unwireExpr(Expr* e) {
  invalidateOrders();
  for (Val* v : e->inputs()) std::erase(v->uses_, e);
  for (Val* v : e->outputs()) {
    if (v->definition_ == e) v->definition_ = nullptr;
  }
}

void Fusion::deleteStatement(Statement* s) {
  invalidateOrders();
  const size_t pos = s->slot_;
  LOOM_ASSERT(s->fusion_ == this && pos < stmts_.size() && stmts_[pos].get() == s,
              "statement is not in this fusion");
  stmts_.erase(stmts_.begin() + int64_t(pos));
  for (size_t i = pos; i < stmts_.size(); ++i) stmts_[i]->slot_ = i;
}

void Fusion::removeExpr(Expr* e) {
  LOOM_ASSERT(e->fusion() == this);
  unwireExpr(e);
  deleteStatement(e);
}

void Fusion::removeVal(Val* v) {
  LOOM_ASSERT(v->fusion() == this);
  LOOM_ASSERT(v->uses().empty(), v->toString(), " still has uses");
  LOOM_ASSERT(!isInput(v) && !isOutput(v), v->toString(), " is a fusion input or output");
  if (v->definition() != nullptr) removeExpr(v->definition());
  deleteStatement(v);
}

void Fusion::addInput(Val* v) {
  LOOM_CHECK(v->fusion() == this, "fusion input ", v->toString(), " belongs to another fusion");
  LOOM_CHECK(v->isA<TensorView>() || v->isA<Scalar>(), "fusion input ", v->toString(),
             " must be a tensor or a scalar");
  LOOM_CHECK(v->definition() == nullptr, "fusion input ", v->toString(),
             " is computed by ", v->definition()->toString(), "; inputs cannot have a definition");
  LOOM_CHECK(!isInput(v), v->toString(), " is already a fusion input");
  if (auto* s = v->dynCast<Scalar>()) {
    LOOM_CHECK(!s->isConst(), "constant ", s->toString(), " cannot be a fusion input");
  }
  // Fusion inputs and outputs live in global memory by definition.
  if (auto* tv = v->dynCast<TensorView>()) tv->setMemoryType(MemoryType::Global);
  inputs_.push_back(v);
  invalidateOrders();
}

void Fusion::addOutput(Val* v) {
  LOOM_CHECK(v->fusion() == this, "fusion output ", v->toString(), " belongs to another fusion");
  LOOM_CHECK(v->isA<TensorView>(), "fusion output ", v->toString(), " must be a tensor");
  LOOM_CHECK(!isOutput(v), v->toString(), " is already a fusion output");
  outputs_.push_back(v);
  invalidateOrders();
  v->as<TensorView>()->setMemoryType(MemoryType::Global);
}

void Fusion::replaceOutput(Val* old_out, Val* new_out) {
  auto it = std::find(outputs_.begin(), outputs_.end(), old_out);
  LOOM_CHECK(it != outputs_.end(), old_out->toString(), " is not a fusion output");
  LOOM_CHECK(!isOutput(new_out), new_out->toString(), " is already a fusion output");
  LOOM_CHECK(new_out->isA<TensorView>(), "fusion output ", new_out->toString(),
             " must be a tensor");
  *it = new_out;
  for (auto& alias : aliases_) {
    if (alias.first == old_out) alias.first = new_out;
  }
  invalidateOrders();
  new_out->as<TensorView>()->setMemoryType(MemoryType::Global);
}

void Fusion::replaceAllUses(Val* old, Val* replacement) {
  std::vector<Expr*> uses = old->uses();  // a copy: replaceInput edits the list
  for (Expr* use : uses) use->replaceInput(old, replacement);
  if (isOutput(old)) replaceOutput(old, replacement);
}

void Fusion::removeOutput(Val* v) {
  auto it = std::find(outputs_.begin(), outputs_.end(), v);
  LOOM_CHECK(it != outputs_.end(), v->toString(), " is not a fusion output");
  outputs_.erase(it);
  std::erase_if(aliases_, [&](const auto& alias) { return alias.first == v; });
  invalidateOrders();
}

void Fusion::removeInput(Val* v) {
  auto it = std::find(inputs_.begin(), inputs_.end(), v);
  LOOM_CHECK(it != inputs_.end(), v->toString(), " is not a fusion input");
  inputs_.erase(it);
  std::erase_if(aliases_, [&](const auto& alias) { return alias.second == v; });
  invalidateOrders();
}

void Fusion::aliasOutputToInput(Val* output, Val* input) {
  LOOM_CHECK(output != nullptr && input != nullptr,
             "aliasOutputToInput needs an output and an input");
  const std::string what = "output " + output->toString() + " written into input " +
                           input->toString() + " (an in-place update)";
  LOOM_CHECK(output->fusion() == this && input->fusion() == this, what,
             ": both must belong to this fusion");
  auto* out = output->dynCast<TensorView>();
  auto* in = input->dynCast<TensorView>();
  LOOM_CHECK(out != nullptr && in != nullptr, what, ": both must be tensors");
  LOOM_CHECK(isInput(in), what, ": ", in->toString(), " is not a fusion input");
  LOOM_CHECK(out != in, what, ": a tensor cannot be written into itself");
  LOOM_CHECK(!isInput(out), what, ": ", out->toString(),
             " is a fusion input; alias a tensor the fusion computes (set() copies an input)");
  for (const auto& [o, i] : aliases_) {
    LOOM_CHECK(o != out, what, ": ", out->toString(), " is written into ", i->toString(),
               " already");
    LOOM_CHECK(i != in, what, ": ", o->toString(), " is written into ", in->toString(),
               " already; an input takes one in-place output");
  }
  LOOM_CHECK(out->dtype() == in->dtype(), what, ": the dtypes differ (", out->dtype(), " and ",
             in->dtype(), "); cast the output to ", in->dtype(), " first");
  LOOM_CHECK(out->rank() == in->rank(), what, ": the ranks differ (", out->rank(), " and ",
             in->rank(), ")");
  const std::vector<IterDomain*> out_ids = TensorDomain::noReductions(out->logical());
  const std::vector<IterDomain*> in_ids = TensorDomain::noReductions(in->logical());
  for (size_t d = 0; d < out_ids.size(); ++d) {
    auto a = out_ids[d]->extent()->constInt();
    auto b = in_ids[d]->extent()->constInt();
    LOOM_CHECK(!a || !b || *a == *b, what, ": dimension ", d, " has extent ", *a, " in ",
               out->toString(), " but ", *b, " in ", in->toString());
  }
  if (!isOutput(out)) addOutput(out);
  aliases_.emplace_back(out, in);
}

void Fusion::addExtentRequirement(ExtentRequirement requirement) {
  LOOM_ASSERT(requirement.value != nullptr && requirement.value->fusion() == this &&
                  requirement.extent != nullptr && requirement.extent->fusion() == this,
              "an extent requirement on scalars of another fusion");
  requirements_.push_back(std::move(requirement));
}

Val* Fusion::aliasedInput(const Val* output) const {
  for (const auto& [o, i] : aliases_) {
    if (o == output) return i;
  }
  return nullptr;
}

bool Fusion::isInput(const Val* v) const {
  return std::find(inputs_.begin(), inputs_.end(), v) != inputs_.end();
}
bool Fusion::isOutput(const Val* v) const {
  return std::find(outputs_.begin(), outputs_.end(), v) != outputs_.end();
}

std::vector<Expr*> Fusion::exprs() const {
  std::lock_guard<std::mutex> lock(orders_mutex_);
  return exprsLocked();
}

const std::vector<Expr*>& Fusion::exprsLocked() const {
  if (exprs_valid_) return exprs_;
  // Iterative post-order DFS from the outputs through definitions, so deep graphs do not
  // overflow the stack.
  // A frame visits its expr's inputs, then its attribute vals (fetched once, when the inputs are
  // done: most exprs have none, and the call builds a vector).
  std::vector<Expr*> order;
  // Visit state per statement position (slot_): 0 new, 1 on the DFS stack, 2 done.
  std::vector<uint8_t> state(stmts_.size(), 0);
  auto stateOf = [&](const Expr* e) -> uint8_t& { return state[e->slot_]; };
  struct Frame {
    Expr* expr;
    size_t next_input;
    std::vector<Val*> attributes;
    bool attributes_fetched = false;
  };
  std::vector<Frame> stack;
  for (Val* out : outputs_) {
    if (out->definition() == nullptr || stateOf(out->definition()) == 2) continue;
    stack.push_back({out->definition(), 0, {}, false});
    stateOf(out->definition()) = 1;
    while (!stack.empty()) {
      Frame& f = stack.back();
      const std::vector<Val*>& ins = f.expr->inputs();
      if (f.next_input >= ins.size() && !f.attributes_fetched) {
        f.attributes = f.expr->attributeVals();
        f.attributes_fetched = true;
      }
      if (f.next_input < ins.size() + f.attributes.size()) {
        const size_t k = f.next_input++;
        Val* in = k < ins.size() ? ins[k] : f.attributes[k - ins.size()];
        Expr* d = in->definition();
        if (d != nullptr && stateOf(d) != 2) {
          LOOM_ASSERT(stateOf(d) != 1, "cycle through ", d->toString());
          stateOf(d) = 1;
          stack.push_back({d, 0, {}, false});
        }
        continue;
      }
      stateOf(f.expr) = 2;
      order.push_back(f.expr);
      stack.pop_back();
    }
  }
  exprs_ = std::move(order);
  exprs_valid_ = true;
  return exprs_;
}

void Fusion::invalidateOrders() {
  exprs_valid_ = false;
  tvs_valid_ = false;
}

std::vector<TensorView*> Fusion::allTvs() const {
  std::lock_guard<std::mutex> lock(orders_mutex_);
  if (tvs_valid_) return tvs_;
  std::vector<TensorView*> tvs;
  std::vector<bool> seen(stmts_.size(), false);  // by slot_
  auto add = [&](Val* v) {
    auto* tv = v->dynCast<TensorView>();
    if (tv != nullptr && !seen[tv->slot_]) {
      seen[tv->slot_] = true;
      tvs.push_back(tv);
    }
  };
  for (Val* in : inputs_) add(in);
  for (Expr* e : exprsLocked()) {
    for (Val* v : e->inputs()) add(v);
    for (Val* v : e->outputs()) add(v);
  }
  for (Val* out : outputs_) add(out);
  tvs_ = std::move(tvs);
  tvs_valid_ = true;
  return tvs_;
}

std::vector<Statement*> Fusion::statements() const {
  std::vector<Statement*> out;
  out.reserve(stmts_.size());
  for (auto& s : stmts_) out.push_back(s.get());
  return out;
}

std::vector<Val*> Fusion::vals() const {
  std::vector<Val*> out;
  for (auto& s : stmts_) {
    if (auto* v = s->dynCast<Val>()) out.push_back(v);
  }
  return out;
}

std::vector<Expr*> Fusion::allExprs() const {
  std::vector<Expr*> out;
  for (auto& s : stmts_) {
    if (auto* e = s->dynCast<Expr>()) out.push_back(e);
  }
  return out;
}

void Fusion::removeDeadCode() {
  std::unordered_set<const Statement*> live;
  std::vector<Val*> work;
  auto markVal = [&](Val* v) {
    if (v != nullptr && live.insert(v).second) work.push_back(v);
  };
  for (Val* v : inputs_) markVal(v);
  for (Val* v : outputs_) markVal(v);
  for (const ExtentRequirement& r : requirements_) {
    markVal(r.value);
    markVal(r.extent);
  }
  for (Expr* e : exprs()) {
    live.insert(e);
    for (Val* v : e->inputs()) markVal(v);
    for (Val* v : e->outputs()) markVal(v);
    for (Val* v : e->attributeVals()) markVal(v);
  }
  // Everything a live value refers to is live: a tensor's domain, a domain's IDs and the
  // transforms between them, an ID's extents, a scalar's definition.
  while (!work.empty()) {
    Val* v = work.back();
    work.pop_back();
    if (auto* tv = v->dynCast<TensorView>()) {
      markVal(tv->domain());
    } else if (auto* td = v->dynCast<TensorDomain>()) {
      for (auto* ids : {&td->root(), &td->logical(), &td->allocation(), &td->loop()}) {
        for (IterDomain* id : *ids) markVal(id);
      }
    } else if (auto* id = v->dynCast<IterDomain>()) {
      markVal(id->start());
      markVal(id->extent());
      markVal(id->expandedExtent());
    }
    // Definitions of IDs (transforms) and of scalars (scalar math) are needed by their outputs.
    // Only definitions whose outputs are all live would be exact; keeping a transform live keeps
    // its other outputs too, which is what a domain's history needs.
    if (!v->isA<TensorView>() && v->definition() != nullptr && !live.count(v->definition())) {
      Expr* d = v->definition();
      live.insert(d);
      for (Val* in : d->inputs()) markVal(in);
      for (Val* o : d->outputs()) markVal(o);
      for (Val* a : d->attributeVals()) markVal(a);
    }
  }
  // Delete dead exprs first (unwiring them), then dead vals.
  std::vector<Statement*> dead;
  for (auto& s : stmts_) {
    if (!live.count(s.get())) dead.push_back(s.get());
  }
  for (Statement* s : dead) {
    if (auto* e = s->dynCast<Expr>()) unwireExpr(e);
  }
  std::unordered_set<const Statement*> dead_set(dead.begin(), dead.end());
  std::vector<std::unique_ptr<Statement>> kept;
  kept.reserve(stmts_.size() - dead.size());
  for (auto& s : stmts_) {
    if (!dead_set.count(s.get())) kept.push_back(std::move(s));
  }
  stmts_ = std::move(kept);
  for (size_t i = 0; i < stmts_.size(); ++i) stmts_[i]->slot_ = i;
  // Live vals may still list dead exprs as uses only if those were unwired above; nothing else.
}

std::unique_ptr<Fusion> Fusion::clone() const {
  auto out = std::make_unique<Fusion>();
  copyInto(*out);
  return out;
}

IrCloner Fusion::copyInto(Fusion& target) const {
  LOOM_ASSERT(target.stmts_.empty() && target.inputs_.empty() && target.outputs_.empty() &&
                  target.aliases_.empty() && target.requirements_.empty(),
              "copyInto needs an empty target fusion");
  IrCloner c(&target);
  for (auto& s : stmts_) c.clone(s.get());
  for (Val* v : inputs_) target.inputs_.push_back(c.clone(v));
  for (Val* v : outputs_) target.outputs_.push_back(c.clone(v));
  for (const auto& [o, i] : aliases_) target.aliases_.emplace_back(c.clone(o), c.clone(i));
  for (const ExtentRequirement& r : requirements_) {
    target.requirements_.push_back({c.clone(r.value), r.expected, c.clone(r.extent), r.what});
  }
  target.invalidateOrders();
  return c;
}

FusionGuard::FusionGuard(Fusion* fusion) : previous_(active_fusion) { active_fusion = fusion; }
FusionGuard::~FusionGuard() { active_fusion = previous_; }
Fusion* FusionGuard::current() { return active_fusion; }

Fusion* IrBuilder::activeFusion() {
  Fusion* f = FusionGuard::current();
  LOOM_CHECK(f != nullptr, "no active fusion: create IR inside a FusionGuard");
  return f;
}

}  // namespace loom::ir
