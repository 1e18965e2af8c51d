// SPDX-License-Identifier: Apache-2.0
// Inlining: legal compute-at positions, inlineAt, inlineMost, computeAt.
#include "loom/transform/inlining.h"

#include <algorithm>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "loom/ir/exprs.h"
#include "loom/ir/iter_domain.h"
#include "loom/transform/id_graph.h"
#include "loom/transform/loop_graph.h"
#include "loom/transform/replay.h"
#include "transform/utils.h"

namespace loom::transform {

using namespace loom::ir;

namespace {

bool isReductionTv(const TensorView* tv) {
  Expr* d = tv->definition();
  return d != nullptr && (d->isA<ReductionOp>() || d->isA<WelfordOp>()) &&
         tv->domain()->hasReduction();
}

// Where tv's loop[0, pos) lands in consumer c: the consumer position just after the last
// consumer loop ID matched (alignLoops, loop_graph.h), or -1 (with the failing axis in `why`).
int64_t alignedConsumerPos(const TensorView* tv, const TensorView* c, int64_t pos,
                           const IdGraph& graph, std::string* why) {
  std::vector<int64_t> at;
  if (!alignLoops(tv, c, pos, graph, at, why)) return -1;
  return at.empty() ? 0 : at.back() + 1;
}

// Computes the legal maximum; `why` receives the rule that stopped it.
int64_t maxPos(const TensorView* tv, const IdGraph& graph, InlineOptions options,
               std::string* why) {
  auto say = [&](auto&&... parts) {
    if (why == nullptr) return;
    std::ostringstream os;
    (os << ... << parts);
    *why = os.str();
  };
  if (tv->isFusionInput()) {
    say(tv->toString(), " is a fusion input");
    return 0;
  }
  auto consumers = detail::consumersOf(tv);
  if (consumers.empty()) {
    say(tv->toString(), " has no consumers");
    return 0;
  }
  // Reductions fed by tv, and for each the consumers of tv that come after it and its reduction
  // IDs (collected once, not per axis).
  struct Crossing {
    const TensorView* r;
    std::vector<const TensorView*> late;
    std::vector<IterDomain*> reduction_ids;
  };
  auto downstream = detail::downstreamOf(tv);
  std::vector<Crossing> crossings;
  for (const TensorView* r : downstream) {
    if (!isReductionTv(r)) continue;
    auto after = detail::downstreamOf(r);
    std::vector<const TensorView*> late;
    for (TensorView* c : consumers) {
      if (after.count(c)) late.push_back(c);
    }
    if (late.empty()) continue;
    std::vector<IterDomain*> reduction_ids;
    for (IterDomain* rid : detail::allIds(r)) {
      if (rid->isReduction()) reduction_ids.push_back(rid);
    }
    crossings.push_back({r, std::move(late), std::move(reduction_ids)});
  }
  for (int64_t k = 0; k < tv->nDims(); ++k) {
    IterDomain* id = tv->axis(k);
    if (id->isReduction()) {
      say("axis ", k, " (", id->toString(), ") of ", tv->toString(),
          " is a reduction; its consumers cannot share that loop");
      return k;
    }
    if (id->parallelType() == ParallelType::Vectorize) {
      say("axis ", k, " (", id->toString(), ") of ", tv->toString(), " is vectorized");
      return k;
    }
    if (!options.allow_unroll && id->parallelType() == ParallelType::Unroll) {
      say("axis ", k, " (", id->toString(), ") of ", tv->toString(), " is unrolled");
      return k;
    }
    for (TensorView* c : consumers) {
      int64_t before = alignedConsumerPos(tv, c, k, graph, nullptr);
      int64_t after = alignedConsumerPos(tv, c, k + 1, graph, why);
      if (after < 0) return k;
      for (int64_t j = before; j < after; ++j) {
        if (c->axis(j)->parallelType() == ParallelType::Vectorize) {
          say("axis ", j, " of consumer ", c->toString(), " is vectorized");
          return k;
        }
      }
    }
    for (const auto& [r, late, r_ids] : crossings) {
      bool reduced = std::any_of(r_ids.begin(), r_ids.end(),
                                 [&](IterDomain* rid) { return graph.areMapped(id, rid); });
      if (reduced) {
        say("axis ", k, " (", id->toString(), ") of ", tv->toString(), " is reduced by ",
            r->toString(), " and consumer ", late.front()->toString(),
            " reads the reduction's result; it cannot share that loop");
        return k;
      }
    }
  }
  return tv->nDims();
}

// Sets tv's compute-at position and gives each consumer the largest position aligned with one
// of its producers' compute-at positions.
void setPosition(TensorView* tv, int64_t pos, const IdGraph& graph) {
  tv->setComputeAtPosition(pos);
  for (TensorView* c : detail::consumersOf(tv)) {
    int64_t m = 0;
    for (TensorView* p : detail::producersOf(c)) {
      int64_t a = alignedConsumerPos(p, c, p->computeAtPosition(), graph, nullptr);
      LOOM_ASSERT(a >= 0, p->toString(), " is inlined at ", p->computeAtPosition(),
                  " but its loop does not align with consumer ", c->toString());
      m = std::max(m, a);
    }
    c->setMaxProducerPosition(m);
  }
}

void inlineWith(TensorView* tv, int64_t pos, bool best_effort, InlineOptions options,
                const IdGraph& graph) {
  int64_t n = tv->nDims();
  if (pos < 0) pos += n + 1;
  LOOM_CHECK(pos >= 0 && pos <= n, "inlineAt of ", tv->toString(), ": position ", pos,
             " is out of range for ", n, " loop IDs");
  std::string why;  // only an error reports it: best effort skips building the message
  int64_t max = maxPos(tv, graph, options, best_effort ? nullptr : &why);
  if (best_effort) {
    pos = std::min(pos, max);
  } else {
    LOOM_CHECK(pos <= max, "cannot inline ", tv->toString(), " at position ", pos,
               ": the largest legal position is ", max, " because ", why);
  }
  setPosition(tv, pos, graph);
}

void checkPermissive(const IdGraph& graph) {
  LOOM_ASSERT(graph.mode() == IdMappingMode::Permissive,
              "inlining needs a permissive IdGraph (broadcasts map to what they resolve to)");
}

}  // namespace

int64_t maxInlinePosition(const TensorView* tv, const IdGraph& permissive,
                          InlineOptions options) {
  checkPermissive(permissive);
  return maxPos(tv, permissive, options, nullptr);
}

int64_t maxInlinePosition(const TensorView* tv, InlineOptions options) {
  return maxInlinePosition(tv, IdGraph(*tv->fusion(), IdMappingMode::Permissive), options);
}

void inlineAt(TensorView* tv, int64_t pos, const IdGraph& permissive, bool best_effort,
              InlineOptions options) {
  checkPermissive(permissive);
  inlineWith(tv, pos, best_effort, options, permissive);
}

void inlineAt(TensorView* tv, int64_t pos, bool best_effort, InlineOptions options) {
  inlineAt(tv, pos, IdGraph(*tv->fusion(), IdMappingMode::Permissive), best_effort, options);
}

void inlineMost(const std::vector<TensorView*>& tvs, const IdGraph& permissive,
                InlineOptions options) {
  checkPermissive(permissive);
  for (TensorView* tv : tvs) {
    if (tv->isFusionInput()) continue;
    inlineWith(tv, -1, true, options, permissive);
  }
}

void inlineMost(const std::vector<TensorView*>& tvs, InlineOptions options) {
  if (tvs.empty()) return;
  inlineMost(tvs, IdGraph(*tvs.front()->fusion(), IdMappingMode::Permissive), options);
}

void inlineMost(Fusion& fusion, InlineOptions options) { inlineMost(fusion.allTvs(), options); }

void computeAt(TensorView* producer, TensorView* consumer, int64_t pos, InlineOptions options) {
  auto down = detail::downstreamOf(producer);
  LOOM_CHECK(down.count(consumer), "computeAt: ", producer->toString(), " is not upstream of ",
             consumer->toString());
  int64_t n = consumer->nDims();
  if (pos < 0) pos += n + 1;
  LOOM_CHECK(pos >= 0 && pos <= n, "computeAt: position ", pos, " is out of range for ",
             consumer->toString(), " with ", n, " loop IDs");
  // Tensors on paths producer -> consumer, consumers first.
  std::vector<TensorView*> between;
  auto tvs = producer->fusion()->allTvs();
  for (auto it = tvs.rbegin(); it != tvs.rend(); ++it) {
    TensorView* t = *it;
    if (t == consumer || (t != producer && !down.count(t))) continue;
    if (detail::downstreamOf(t).count(consumer)) between.push_back(t);
  }
  std::unordered_map<const TensorView*, int64_t> at{{consumer, pos}};
  for (TensorView* t : between) {
    for (TensorView* c : detail::consumersOf(t)) {
      auto it = at.find(c);
      if (it == at.end()) continue;
      at[t] = TransformReplay::replayPasC(t, c, it->second);
      break;
    }
  }
  IdGraph graph(*producer->fusion(), IdMappingMode::Permissive);
  for (auto it = between.rbegin(); it != between.rend(); ++it) {
    inlineWith(*it, at.at(*it), false, options, graph);
  }
}

}  // namespace loom::transform
