// SPDX-License-Identifier: Apache-2.0
// cacheBefore, cacheAfter, cacheFork.
#include "loom/transform/cache.h"

#include "loom/ir/builder.h"
#include "loom/ir/exprs.h"
#include "loom/ir/iter_domain.h"
#include "loom/transform/replay.h"
#include "transform/utils.h"

namespace loom::transform {

using namespace loom::ir;

namespace {

const ReplayOptions kCacheReplay{.replay_allocation = true, .parallel = ParallelCopy::All};

}  // namespace

TensorView* cacheBefore(TensorView* tv, MemoryType memory, LoadStoreOpType op) {
  Expr* def = tv->definition();
  LOOM_CHECK(def != nullptr, "cacheBefore of ", tv->toString(),
             ": it has no definition (a fusion input); use cacheAfter");
  LOOM_CHECK(tv->computeAtPosition() == 0 && tv->maxProducerPosition() == 0, "cacheBefore of ",
             tv->toString(), ": cache before inlining");
  FusionGuard guard(tv->fusion());
  // The cache takes tv's whole domain (reductions, a reshape's root); tv gets a plain copy domain
  // that replays the old schedule.
  TensorDomain* old = tv->domain();
  TensorView* cache = detail::newTensor(tv, old, memory);
  tv->setDomain(detail::copyDomain(cache));
  std::vector<Val*> outs = def->outputs();
  for (Val*& o : outs) {
    if (o == tv) o = cache;
  }
  detail::recreateWithOutputs(def, outs);
  IrBuilder::create<LoadStoreOp>(op, tv, cache);
  TransformReplay::replayCasP(tv, cache, -1, kCacheReplay);
  return cache;
}

TensorView* cacheAfter(TensorView* tv, MemoryType memory, LoadStoreOpType op) {
  LOOM_CHECK(!tv->uses().empty(), "cacheAfter of ", tv->toString(), ": it has no uses");
  LOOM_CHECK(tv->computeAtPosition() == 0, "cacheAfter of ", tv->toString(),
             ": cache before inlining");
  FusionGuard guard(tv->fusion());
  TensorView* cache = detail::newTensor(tv, detail::copyDomain(tv), memory);
  std::vector<Expr*> uses = tv->uses();
  for (Expr* use : uses) {
    auto outs = detail::tvOutputs(use);
    for (TensorView* c : outs) {
      LOOM_CHECK(c->maxProducerPosition() == 0, "cacheAfter of ", tv->toString(), ": consumer ",
                 c->toString(), " is already inlined");
    }
    use->replaceInput(tv, cache);
  }
  IrBuilder::create<LoadStoreOp>(op, cache, tv);
  TransformReplay::replayCasP(cache, tv, -1, kCacheReplay);
  return cache;
}

std::vector<TensorView*> cacheAfterEachUse(TensorView* tv, MemoryType memory) {
  LOOM_CHECK(!tv->uses().empty(), "cacheAfterEachUse of ", tv->toString(), ": it has no uses");
  LOOM_CHECK(tv->computeAtPosition() == 0, "cacheAfterEachUse of ", tv->toString(),
             ": cache before inlining");
  FusionGuard guard(tv->fusion());
  std::vector<TensorView*> caches;
  const std::vector<Expr*> uses = tv->uses();
  for (Expr* use : uses) {
    for (TensorView* c : detail::tvOutputs(use)) {
      LOOM_CHECK(c->maxProducerPosition() == 0, "cacheAfterEachUse of ", tv->toString(),
                 ": consumer ", c->toString(), " is already inlined");
    }
    TensorView* cache = detail::newTensor(tv, detail::copyDomain(tv), memory);
    use->replaceInput(tv, cache);
    IrBuilder::create<LoadStoreOp>(LoadStoreOpType::Set, cache, tv);
    TransformReplay::replayCasP(cache, tv, -1, kCacheReplay);
    caches.push_back(cache);
  }
  return caches;
}

TensorView* cacheFork(TensorView* tv) {
  Fusion* f = tv->fusion();
  LOOM_CHECK(f->isOutput(tv), "cacheFork of ", tv->toString(), ": it is not a fusion output");
  LOOM_CHECK(!tv->uses().empty(), "cacheFork of ", tv->toString(),
             ": it has no uses; a fork is only needed for outputs that are also read");
  FusionGuard guard(f);
  TensorView* out = detail::newTensor(tv, detail::copyDomain(tv), MemoryType::Global);
  IrBuilder::create<LoadStoreOp>(LoadStoreOpType::Set, out, tv);
  f->replaceOutput(tv, out);
  TransformReplay::replayCasP(out, tv, -1, kCacheReplay);
  return out;
}

}  // namespace loom::transform
