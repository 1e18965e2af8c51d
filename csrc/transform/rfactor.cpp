// SPDX-License-Identifier: Apache-2.0
// rFactor for ReductionOp and WelfordOp.
//
// One tensor T with loop L is split into a producer P and a new domain for T. Both are built by
// cloning T's IDs and Split/Merge exprs (clones share extents with the originals):
//  * P: root = clones of T's logical; exprs on reduction IDs become root->logical transforms
//    (rFactor products) whose loop outputs are Reduction when in `axes`, Iteration otherwise;
//    exprs on iteration IDs stay logical->loop. P's logical = iteration IDs plus the reduction
//    frontier (the reduction loop IDs). P's loop and allocation mirror T's.
//  * T: logical = P's logical without the rFactored axes, the former frontier IDs as Reduction;
//    the iteration-side exprs are cloned again; loop and allocation mirror T's old ones minus
//    `axes`.
#include "loom/transform/rfactor.h"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "loom/ir/builder.h"
#include "loom/ir/exprs.h"
#include "loom/ir/iter_domain.h"
#include "loom/ir/transforms.h"
#include "loom/transform/replay.h"
#include "transform/utils.h"

namespace loom::transform {

using namespace loom::ir;

namespace {

using IdMap = std::unordered_map<IterDomain*, IterDomain*>;

IterDomain* cloneId(const IterDomain* src, IterType type, bool rfactor_product) {
  return IrBuilder::create<IterDomain>(src->start(), src->extent(), type, src->parallelType(),
                                       type == IterType::Broadcast ? src->expandedExtent() : nullptr,
                                       rfactor_product);
}

// Clones Split/Merge `e` onto the images of its inputs; `type_of` picks each output's IterType.
template <typename TypeOf>
void cloneExpr(Expr* e, IdMap& map, TypeOf type_of, bool rfactor_product) {
  if (auto* s = e->dynCast<Split>()) {
    auto* outer = cloneId(s->outer(), type_of(s->outer()), rfactor_product);
    auto* inner = cloneId(s->inner(), type_of(s->inner()), rfactor_product);
    IrBuilder::create<Split>(outer, inner, map.at(s->in()), s->factor(), s->innerSplit());
    map[s->outer()] = outer;
    map[s->inner()] = inner;
  } else {
    auto* m = e->as<Merge>();
    auto* out = cloneId(m->out(), type_of(m->out()), rfactor_product);
    IrBuilder::create<Merge>(out, map.at(m->outer()), map.at(m->inner()));
    map[m->out()] = out;
  }
}

bool touchesReduction(const Expr* e) {
  return std::any_of(e->outputs().begin(), e->outputs().end(),
                     [](Val* v) { return v->as<IterDomain>()->isReduction(); });
}

// Allocation of a new domain: images of T's non-reduction allocation IDs with their contiguity,
// and `reductions` (the new domain's reduction-side logical IDs) where T's first reduction was.
void mirrorAllocation(const TensorView* tv, const IdMap& map,
                      const std::vector<IterDomain*>& reductions, std::vector<IterDomain*>& alloc,
                      Contiguity& contig) {
  if (!tv->domain()->hasAllocation()) return;
  bool placed = false;
  auto place = [&] {
    for (IterDomain* r : reductions) {
      alloc.push_back(r);
      contig.push_back(r->isReduction() || r->isBroadcast() ? std::nullopt
                                                            : std::optional<bool>(true));
    }
    placed = true;
  };
  const auto& old = tv->allocation();
  for (size_t i = 0; i < old.size(); ++i) {
    if (old[i]->isReduction()) {
      if (!placed) place();
      continue;
    }
    alloc.push_back(map.at(old[i]));
    contig.push_back(tv->contiguity()[i]);
  }
  if (!placed) place();
}

struct SplitDomains {
  TensorDomain* producer;
  TensorDomain* consumer;
};

std::set<int64_t> checkAxes(const TensorView* tv, const std::vector<int64_t>& axes) {
  LOOM_CHECK(!axes.empty(), "rFactor of ", tv->toString(), ": no axes given");
  LOOM_CHECK(!tv->domain()->hasRoot(), "rFactor of ", tv->toString(),
             ": it already has a root domain (rFactored or reshaped)");
  LOOM_CHECK(tv->computeAtPosition() == 0 && tv->maxProducerPosition() == 0, "rFactor of ",
             tv->toString(), ": rFactor before inlining (compute-at position ",
             tv->computeAtPosition(), ")");
  std::set<int64_t> set;
  for (int64_t a : axes) {
    int64_t n = tv->domain()->normalizeAxis(a);
    LOOM_CHECK(set.insert(n).second, "rFactor of ", tv->toString(), ": axis ", a,
               " is given twice");
    LOOM_CHECK(tv->axis(n)->isReduction(), "rFactor of ", tv->toString(), ": axis ", a, " (",
               tv->axis(n)->toString(), ") is not a reduction IterDomain");
  }
  // A broadcast merged into a reduction would have to sit in both halves (the producer's
  // reduction frontier and the final tensor's logical broadcast), covering it twice.
  std::vector<IterDomain*> targets = tv->loop();
  targets.insert(targets.end(), tv->allocation().begin(), tv->allocation().end());
  for (Expr* e : detail::exprsBetween(tv->logical(), targets)) {
    auto* m = e->dynCast<Merge>();
    if (m == nullptr || !m->out()->isReduction()) continue;
    LOOM_CHECK(!m->outer()->isBroadcast() && !m->inner()->isBroadcast(), "rFactor of ",
               tv->toString(), ": its schedule merges broadcast ",
               (m->outer()->isBroadcast() ? m->outer() : m->inner())->toString(),
               " into reduction ", (m->outer()->isBroadcast() ? m->inner() : m->outer())->toString(),
               " (giving ", m->out()->toString(),
               "); rFactor cannot split such a merge. Merge the broadcast with an iteration ID, "
               "or leave it unmerged");
  }
  int64_t n_red = std::count_if(tv->loop().begin(), tv->loop().end(),
                                [](IterDomain* id) { return id->isReduction(); });
  LOOM_CHECK(int64_t(set.size()) < n_red, "rFactor of ", tv->toString(),
             ": every reduction axis is in the rFactor set; at least one must stay for the "
             "final reduction");
  return set;
}

SplitDomains splitDomains(const TensorView* tv, const std::set<int64_t>& axes) {
  std::unordered_set<IterDomain*> rf;
  for (int64_t a : axes) rf.insert(tv->axis(a));
  const auto& loop = tv->loop();
  auto in_loop = [&](IterDomain* id) { return std::find(loop.begin(), loop.end(), id) != loop.end(); };
  std::vector<IterDomain*> targets = loop;
  targets.insert(targets.end(), tv->allocation().begin(), tv->allocation().end());
  std::vector<Expr*> exprs = detail::exprsBetween(tv->logical(), targets);

  // ---- Producer.
  auto producer_type = [&](IterDomain* src) {
    if (!src->isReduction()) return src->iterType();
    if (rf.count(src) || !in_loop(src)) return IterType::Reduction;
    return IterType::Iteration;
  };
  IdMap pmap;
  std::vector<IterDomain*> p_root;
  for (IterDomain* id : tv->logical()) {
    // A reduction axis no split or merge touched is its own frontier: the producer's root and
    // logical share it, so it takes its producer type here (Iteration unless rFactored), as a
    // transformed frontier ID does in cloneExpr.
    p_root.push_back(cloneId(id, in_loop(id) ? producer_type(id) : id->iterType(), false));
    pmap[id] = p_root.back();
  }
  for (Expr* e : exprs) cloneExpr(e, pmap, producer_type, touchesReduction(e));
  // Reduction frontier, in loop order.
  std::vector<IterDomain*> frontier_src;
  for (IterDomain* id : loop) {
    if (id->isReduction()) frontier_src.push_back(id);
  }
  std::vector<IterDomain*> p_logical;
  std::vector<IterDomain*> p_frontier;
  for (IterDomain* id : frontier_src) p_frontier.push_back(pmap.at(id));
  bool placed = false;
  for (IterDomain* id : tv->logical()) {
    if (id->isReduction()) {
      if (!placed) p_logical.insert(p_logical.end(), p_frontier.begin(), p_frontier.end());
      placed = true;
      continue;
    }
    p_logical.push_back(pmap.at(id));
  }
  std::vector<IterDomain*> p_loop;
  for (IterDomain* id : loop) p_loop.push_back(pmap.at(id));
  std::vector<IterDomain*> p_alloc;
  Contiguity p_contig;
  mirrorAllocation(tv, pmap, p_frontier, p_alloc, p_contig);
  auto* producer = IrBuilder::create<TensorDomain>(p_root, p_logical, p_alloc, p_loop, p_contig);

  // ---- Consumer (tv's new domain).
  IdMap cmap;
  std::vector<IterDomain*> c_logical;
  std::vector<IterDomain*> c_reductions;
  placed = false;
  for (IterDomain* id : tv->logical()) {
    if (id->isReduction()) {
      if (placed) continue;
      placed = true;
      for (IterDomain* f : frontier_src) {
        if (rf.count(f)) continue;
        // The frontier ID is Iteration in the producer and reduced again here.
        cmap[f] = cloneId(f, IterType::Reduction, false);
        c_logical.push_back(cmap[f]);
        c_reductions.push_back(cmap[f]);
      }
      continue;
    }
    cmap[id] = cloneId(id, id->iterType(), false);
    c_logical.push_back(cmap[id]);
  }
  for (Expr* e : exprs) {
    if (!touchesReduction(e)) cloneExpr(e, cmap, [](IterDomain* s) { return s->iterType(); }, false);
  }
  std::vector<IterDomain*> c_loop;
  for (IterDomain* id : loop) {
    if (!rf.count(id)) c_loop.push_back(cmap.at(id));
  }
  std::vector<IterDomain*> c_alloc;
  Contiguity c_contig;
  mirrorAllocation(tv, cmap, c_reductions, c_alloc, c_contig);
  auto* consumer = IrBuilder::create<TensorDomain>(std::vector<IterDomain*>{}, c_logical, c_alloc,
                                                   c_loop, c_contig);
  return {producer, consumer};
}

TensorView* makeProducer(TensorView* tv, TensorDomain* domain) {
  auto* p = IrBuilder::create<TensorView>(domain, tv->dtype(), MemoryType::Local);
  p->setDeviceMesh(tv->deviceMesh());
  return p;
}

}  // namespace

namespace {

/// The init a partial of `red` starts at: the identity of a sum or a prod, else red's own init.
Scalar* identityLike(const ReductionOp* red) {
  if (red->hasIdentityInit()) return red->init();
  const DataType dt = red->init()->dtype();
  return IrBuilder::constant(reductionIdentity(red->opType(), dt), dt);
}

}  // namespace

TensorView* rFactor(TensorView* tv, const std::vector<int64_t>& axes) {
  Expr* def = tv->definition();
  LOOM_CHECK(def == nullptr || !(def->isA<MatmulOp>() || def->isA<LinearOp>()), "rFactor of ",
             tv->toString(), ": it is the output of a ", def->isA<MatmulOp>() ? "matmul" : "linear",
             "; its rFactor rewrites the product as partial products over blocks of k and a sum, "
             "which ops::rFactorContraction builds (loom/ops/contraction_rfactor.h; Python's "
             "rfactor calls it)");
  LOOM_CHECK(def != nullptr && (def->isA<ReductionOp>() || def->isA<WelfordOp>()), "rFactor of ",
             tv->toString(), ": it is not the output of a reduction");
  LOOM_CHECK(!def->isA<WelfordOp>(), "rFactor of ", tv->toString(),
             ": it is an output of a welford; use rFactor(tv, axes, siblings) with all three "
             "outputs");
  FusionGuard guard(tv->fusion());
  auto set = checkAxes(tv, axes);
  auto* red = def->as<ReductionOp>();
  TensorView* in = red->in();
  SplitDomains d = splitDomains(tv, set);
  TensorView* producer = makeProducer(tv, d.producer);
  tv->setDomain(d.consumer);
  // The partials start at the identity and the final reduction at the init, which it then
  // counts once (a sum's init 1.5 started every partial at 1.5).
  IrBuilder::create<ReductionOp>(red->opType(), identityLike(red), producer, in);
  IrBuilder::create<ReductionOp>(red->opType(), red->init(), tv, producer);
  return producer;
}

std::vector<TensorView*> rFactor(TensorView* tv, const std::vector<int64_t>& axes,
                                 const std::vector<TensorView*>& siblings) {
  Expr* def = tv->definition();
  LOOM_CHECK(def != nullptr && def->isA<WelfordOp>(), "multi-output rFactor of ", tv->toString(),
             ": it is not the output of a welford");
  auto outs = detail::tvOutputs(def);
  LOOM_CHECK(siblings == outs, "multi-output rFactor of ", tv->toString(),
             ": the siblings must be all outputs of ", def->toString(), " in order");
  FusionGuard guard(tv->fusion());
  auto set = checkAxes(tv, axes);
  // Every sibling first gets exactly tv's schedule, sharding included.
  for (TensorView* s : siblings) {
    if (s != tv) TransformReplay::selfReplay(tv, s);
  }
  auto* w = def->as<WelfordOp>();
  Val* in_avg = w->inAvg();
  Val* in_m2 = w->inM2();
  Val* in_n = w->inN();
  std::vector<TensorView*> producers;
  for (TensorView* s : siblings) {
    SplitDomains d = splitDomains(s, set);
    producers.push_back(makeProducer(s, d.producer));
    s->setDomain(d.consumer);
  }
  // Partials from (0, 0, 0); the final Welford combines the init once.
  IrBuilder::create<WelfordOp>(producers[0], producers[1], producers[2], in_avg, in_m2, in_n,
                               IrBuilder::constant(ScalarValue(0.0), w->initAvg()->dtype()),
                               IrBuilder::constant(ScalarValue(0.0), w->initM2()->dtype()),
                               IrBuilder::constant(ScalarValue(int64_t{0}), w->initN()->dtype()));
  IrBuilder::create<WelfordOp>(siblings[0], siblings[1], siblings[2], producers[0], producers[1],
                               producers[2], w->initAvg(), w->initM2(), w->initN());
  return producers;
}

}  // namespace loom::transform
