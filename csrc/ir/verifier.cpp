// SPDX-License-Identifier: Apache-2.0
// The IR verifier: checks the contract written in base.h.
#include "loom/ir/verifier.h"

#include <algorithm>
#include <unordered_set>

#include "ir/verify_exprs.h"
#include "loom/ir/dispatch.h"
#include "loom/ir/fusion.h"
#include "loom/ir/tensor_view.h"
#include "loom/support/strings.h"

namespace loom::ir {
namespace {

std::string idList(const std::vector<IterDomain*>& ids) {
  std::vector<std::string> names;
  for (auto* id : ids) names.push_back(id->toString());
  return "[" + join(names) + "]";
}

// IDs reachable from `from` by applying Split/Merge exprs (and Resize with `resize`) whose inputs
// are all reachable.
std::unordered_set<const IterDomain*> reachableFrom(const std::vector<IterDomain*>& from,
                                                    bool resize) {
  std::unordered_set<const IterDomain*> seen(from.begin(), from.end());
  std::vector<const IterDomain*> work(from.begin(), from.end());
  while (!work.empty()) {
    const IterDomain* id = work.back();
    work.pop_back();
    for (Expr* use : id->uses()) {
      if (!use->isA<Split>() && !use->isA<Merge>() && !(resize && use->isA<Resize>())) continue;
      bool ready = std::all_of(use->inputs().begin(), use->inputs().end(), [&](Val* v) {
        return seen.count(v->as<IterDomain>()) != 0;
      });
      if (!ready) continue;
      for (Val* out : use->outputs()) {
        auto* o = out->as<IterDomain>();
        if (seen.insert(o).second) work.push_back(o);
      }
    }
  }
  return seen;
}

void checkDerived(const TensorView* tv, const std::vector<IterDomain*>& from,
                  const std::vector<IterDomain*>& to, const char* from_name, const char* to_name,
                  bool resize = false) {
  auto reach = reachableFrom(from, resize);
  for (auto* id : to) {
    LOOM_ASSERT(reach.count(id), tv->toString(), ": ", to_name, " ID ", id->toString(),
                " of ", idList(to), " is not derived from the ", from_name, " domain ",
                idList(from));
  }
}

void verifyTensor(const TensorView* tv) {
  const TensorDomain* td = tv->domain();
  LOOM_ASSERT(td->fusion() == tv->fusion(), tv->toString(), "'s domain is in another fusion");
  // Logical derives from root through Split/Merge/Resize, except in a dynamic reshape, whose
  // logical IDs are fresh (concretization derives them). Loop and allocation derive from logical
  // through Split/Merge only.
  auto* reshape = tv->definition() != nullptr ? tv->definition()->dynCast<ReshapeOp>() : nullptr;
  if (reshape != nullptr && reshape->isDynamic()) {
    const auto& root = td->root();
    for (auto* id : td->logical()) {
      bool fresh =
          id->definition() == nullptr && std::find(root.begin(), root.end(), id) == root.end();
      LOOM_ASSERT(fresh, tv->toString(), ": logical ID ", id->toString(),
                  " of the dynamic reshape output ", idList(td->logical()),
                  " must be a fresh ID (no transform from the root domain ", idList(root), ")");
    }
  } else if (td->hasRoot()) {
    checkDerived(tv, td->root(), td->logical(), "root", "logical", /*resize=*/true);
  }
  checkDerived(tv, td->logical(), td->loop(), "logical", "loop");
  // Constant extents are sizes: never negative; a broadcast's is 1 (its size is its expanded
  // extent, when it has one).
  for (IterDomain* id : td->maybeRoot()) {
    auto c = id->extent()->constInt();
    LOOM_ASSERT(!c.has_value() || *c >= 0, tv->toString(), ": ", id->toString(),
                " has the negative extent ", *c);
    LOOM_ASSERT(!id->isBroadcast() || !c.has_value() || *c == 1, tv->toString(), ": broadcast ",
                id->toString(), " has the extent ", *c,
                " (a broadcast's extent is 1; a size of its own is an expanded extent)");
    if (id->expandedExtent() != nullptr) {
      auto e = id->expandedExtent()->constInt();
      LOOM_ASSERT(!e.has_value() || *e >= 0, tv->toString(), ": ", id->toString(),
                  " has the negative expanded extent ", *e);
    }
  }
  if (td->hasAllocation()) {
    checkDerived(tv, td->logical(), td->allocation(), "logical", "allocation");
  }
  LOOM_ASSERT(td->contiguity().size() == td->maybeAllocation().size(), tv->toString(),
              ": contiguity is not aligned with the allocation domain");
  std::unordered_set<int> used;
  for (auto* id : td->loop()) {
    ParallelType p = id->parallelType();
    if (p == ParallelType::Serial || p == ParallelType::Bulk) continue;  // a box has several
    // A DID on a reduction ID (nvFuser's mark of partials summed across devices) sits next to
    // the same DID on an iteration ID of a reduce-scattered output; propagate_shardings clears it.
    if (isDeviceDim(p) && id->isReduction()) continue;
    LOOM_ASSERT(used.insert(int(p)).second, tv->toString(), ": parallel type ",
                parallelTypeName(p), " appears twice in loop domain ", idList(td->loop()));
  }
}

bool isTransform(const Expr* e) { return e->isA<Split>() || e->isA<Merge>() || e->isA<Resize>(); }

}  // namespace

std::optional<std::string> exprProblem(const Expr* e) {
  return isTransform(e) ? transformProblem(e) : mathExprProblem(e);
}

void verify(const Fusion& fusion) {
  for (Statement* s : fusion.statements()) {
    LOOM_ASSERT(s->fusion() == &fusion, s->toString(), " belongs to another fusion");
    if (auto* e = s->dynCast<Expr>()) {
      // Every expr, also one no output depends on (extent math, a transform of a loop domain).
      auto problem = exprProblem(e);
      LOOM_ASSERT(!problem, *problem);
      for (Val* out : e->outputs()) {
        LOOM_ASSERT(out->definition() == e, out->toString(), " is an output of '", e->toString(),
                    "' but its definition is another expr");
      }
      for (Val* in : e->inputs()) {
        const auto& uses = in->uses();
        LOOM_ASSERT(std::find(uses.begin(), uses.end(), e) != uses.end(), in->toString(),
                    " is an input of '", e->toString(), "' but does not list it as a use");
      }
    } else {
      auto* v = s->as<Val>();
      if (Expr* d = v->definition()) {
        const auto& outs = d->outputs();
        LOOM_ASSERT(std::find(outs.begin(), outs.end(), v) != outs.end(), v->toString(),
                    "'s definition does not output it");
      }
      for (Expr* use : v->uses()) {
        const auto& ins = use->inputs();
        LOOM_ASSERT(std::find(ins.begin(), ins.end(), v) != ins.end(), v->toString(),
                    " lists a use that does not take it as input");
      }
    }
  }
  for (Val* in : fusion.inputs()) {
    LOOM_ASSERT(in->definition() == nullptr, "fusion input ", in->toString(),
                " has a definition");
  }
  for (const auto& [out, in] : fusion.aliases()) {
    LOOM_ASSERT(fusion.isOutput(out) && fusion.isInput(in) && !fusion.isInput(out), "alias ",
                out->toString(), " -> ", in->toString(), " is not a computed output and an input");
    LOOM_ASSERT(out->as<TensorView>()->dtype() == in->as<TensorView>()->dtype(), "alias ",
                out->toString(), " -> ", in->toString(), " joins two dtypes");
  }
  // Every output is computed or is an input, and so is every tensor the outputs depend on.
  for (Val* out : fusion.outputs()) {
    LOOM_ASSERT(out->definition() != nullptr || fusion.isInput(out) || out->isA<Scalar>(),
                "fusion output ", out->toString(), " is neither computed nor a fusion input");
  }
  for (Expr* e : fusion.exprs()) {
    for (Val* in : e->inputs()) {
      if (!in->isA<TensorView>()) continue;
      LOOM_ASSERT(in->definition() != nullptr || fusion.isInput(in), "tensor ", in->toString(),
                  " is used by '", e->toString(), "' but is neither computed nor a fusion input");
    }
  }
  for (TensorView* tv : fusion.allTvs()) verifyTensor(tv);
}

void verifyRunnable(const Fusion& fusion) {
  // A reduction reduces: its output has a reduction ID whenever its input has any ID.
  for (Expr* e : fusion.exprs()) {
    if (!e->isA<ReductionOp>() && !e->isA<WelfordOp>()) continue;
    auto* in = e->input(0)->dynCast<TensorView>();
    auto* out = e->output(0)->as<TensorView>();
    if (in == nullptr || in->logical().empty()) continue;
    const auto& ids = out->domain()->maybeRoot();
    bool reduces = std::any_of(ids.begin(), ids.end(), [](IterDomain* id) {
      return id->isReduction();
    });
    LOOM_ASSERT(reduces, "'", e->toString(), "' reduces no dim: its output ", out->toString(),
                " has no reduction ID (mark the reduced dims r)");
  }
}

}  // namespace loom::ir
