// SPDX-License-Identifier: Apache-2.0
// recomputeAcrossThreads (transform/recompute.h).
#include "loom/transform/recompute.h"

#include <algorithm>
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include "loom/ir/exprs.h"
#include "loom/transform/loop_graph.h"
#include "loom/transform/replay.h"
#include "transform/utils.h"

namespace loom::transform {

using namespace loom::ir;

namespace {

bool recomputable(const TensorView* tv) {
  Expr* def = tv->definition();
  return def != nullptr && def->outputs().size() == 1 && !def->isA<ReductionOp>() &&
         !def->isA<WelfordOp>() && !tv->domain()->hasRoot() &&
         tv->memoryType() == MemoryType::Local;
}

// A copy of tv's expr (same inputs) whose output replaces tv in `use`, scheduled like the
// consumer it feeds there.
TensorView* recomputeFor(TensorView* tv, Expr* use) {
  FusionGuard guard(tv->fusion());
  TensorView* copy = detail::newTensor(tv, detail::copyDomain(tv), MemoryType::Local);
  detail::recreate(tv->definition(), tv->definition()->inputs(), {copy});
  use->replaceInput(tv, copy);
  auto* consumer = use->output(0)->as<TensorView>();
  TransformReplay::replayPasC(copy, consumer, -1, ReplayOptions{.parallel = ParallelCopy::All});
  return copy;
}

}  // namespace

int64_t recomputeAcrossThreads(Fusion& fusion, InlineOptions options) {
  int64_t copies = 0;
  // Each round moves the problem one producer up (toward the inputs), so the number of
  // tensors bounds the rounds.
  const size_t rounds = fusion.allTvs().size();
  for (size_t round = 0; round < rounds; ++round) {
    std::vector<std::pair<TensorView*, Expr*>> hazards;
    std::unique_ptr<LoopGraph> graph;
    try {
      graph = std::make_unique<LoopGraph>(fusion);
    } catch (const UserError&) {
      break;  // loops lowering refuses anyway, with its own message
    }
    {
      const LoopGraph& lg = *graph;
      const std::vector<Expr*> exprs = fusion.exprs();
      const std::unordered_set<const Expr*> live(exprs.begin(), exprs.end());
      for (TensorView* tv : fusion.allTvs()) {
        if (!recomputable(tv)) continue;
        for (Expr* use : tv->uses()) {
          if (live.count(use) == 0) continue;  // a use no output depends on
          auto* consumer = use->output(0)->dynCast<TensorView>();
          if (consumer != nullptr && lg.registersReadAcrossThreads(tv, consumer) != nullptr) {
            hazards.emplace_back(tv, use);
          }
        }
      }
    }
    if (hazards.empty()) break;
    std::unordered_set<TensorView*> affected;
    for (auto [tv, use] : hazards) {
      TensorView* copy = recomputeFor(tv, use);
      ++copies;
      affected.insert(copy);
      for (TensorView* p : detail::producersOf(copy)) {
        if (!p->isFusionInput()) affected.insert(p);
      }
    }
    // Positions of the copies and of their producers (which gained a consumer) are chosen
    // again, producers first. The producers' old positions, aligned with their other consumers
    // only, are dropped first: inlining checks every producer of a consumer it updates.
    std::vector<TensorView*> order;
    for (TensorView* tv : fusion.allTvs()) {
      if (affected.count(tv) == 0) continue;
      order.push_back(tv);
      tv->setComputeAtPosition(0);
    }
    inlineMost(order, options);
  }
  return copies;
}

TensorView* recomputeChain(TensorView* tv, Expr* use, std::span<TensorView* const> leaves) {
  FusionGuard guard(tv->fusion());
  const std::unordered_set<const TensorView*> leaf_set(leaves.begin(), leaves.end());
  // The exprs between the leaves and tv, consumers first (an iterative walk: chains can be long).
  std::vector<Expr*> chain;
  std::unordered_set<const Expr*> seen;
  std::vector<TensorView*> work{tv};
  while (!work.empty()) {
    TensorView* t = work.back();
    work.pop_back();
    if (leaf_set.count(t) != 0) continue;
    Expr* def = t->definition();
    LOOM_ASSERT(def != nullptr, "recomputeChain: ", t->toString(), " (on the way to ",
                tv->toString(), ") is not computed from the leaves");
    LOOM_ASSERT(def->outputs().size() == 1 && (def->isA<UnaryOp>() || def->isA<BinaryOp>() ||
                                               def->isA<TernaryOp>()),
                "recomputeChain: ", def->toString(), " is not a pointwise expr");
    if (!seen.insert(def).second) continue;
    chain.push_back(def);
    for (TensorView* in : detail::tvInputs(def)) work.push_back(in);
  }
  // Producers before consumers: an expr comes after every expr of the chain that feeds it.
  std::vector<Expr*> ordered;
  for (Expr* e : tv->fusion()->exprs()) {
    if (seen.count(e) != 0) ordered.push_back(e);
  }
  std::unordered_map<const Val*, Val*> copies;
  for (Expr* e : ordered) {
    std::vector<Val*> inputs;
    for (Val* in : e->inputs()) {
      auto it = copies.find(in);
      inputs.push_back(it != copies.end() ? it->second : in);
    }
    auto* out = e->output(0)->as<TensorView>();
    TensorView* copy = detail::newTensor(out, detail::copyDomain(out), MemoryType::Local);
    TransformReplay::selfReplay(out, copy);  // the sharding (DID pieces of loop and allocation)
    detail::recreate(e, inputs, {copy});
    copies[out] = copy;
  }
  auto* result = copies.at(tv)->as<TensorView>();
  use->replaceInput(tv, result);
  return result;
}

}  // namespace loom::transform
