// SPDX-License-Identifier: Apache-2.0
// Index math shared by the predicates and indexing passes.
//
// Backward (loop -> logical): a split's input index is outer * inner_extent + inner (for inner
// and outer splits alike, inner_extent being the inner output's extent); a merge's inputs are
// outer = out / inner_extent and inner = out % inner_extent. Forward (logical -> allocation) is
// the inverse. Exprs are found by walking definitions from the target IDs back to the source IDs
// and are solved in a fixpoint, which is enough for the few exprs of one tensor.
#include "index_compute.h"

#include <algorithm>
#include <unordered_set>

#include "loom/eval/expression_evaluator.h"
#include "loom/ir/tensor_domain.h"
#include "loom/ir/transforms.h"
#include "loom/ir/logical_map.h"

namespace loom::lower {

kir::Value* IndexBuilder::add(kir::Value* a, kir::Value* b) {
  return kernel.create<kir::BinaryExpr>(kIndexType, ir::BinaryOpType::Add, a, b);
}
kir::Value* IndexBuilder::mul(kir::Value* a, kir::Value* b) {
  return kernel.create<kir::BinaryExpr>(kIndexType, ir::BinaryOpType::Mul, a, b);
}
kir::Value* IndexBuilder::div(kir::Value* a, kir::Value* b) {
  return kernel.create<kir::BinaryExpr>(kIndexType, ir::BinaryOpType::Div, a, b);
}
kir::Value* IndexBuilder::mod(kir::Value* a, kir::Value* b) {
  return kernel.create<kir::BinaryExpr>(kIndexType, ir::BinaryOpType::Mod, a, b);
}
kir::Value* IndexBuilder::sub(kir::Value* a, kir::Value* b) {
  return kernel.create<kir::BinaryExpr>(kIndexType, ir::BinaryOpType::Sub, a, b);
}
kir::Value* IndexBuilder::lt(kir::Value* a, kir::Value* b) {
  return kernel.create<kir::BinaryExpr>(DataType::Bool, ir::BinaryOpType::Lt, a, b);
}
kir::Value* IndexBuilder::ge(kir::Value* a, kir::Value* b) {
  return kernel.create<kir::BinaryExpr>(DataType::Bool, ir::BinaryOpType::Ge, a, b);
}
kir::Value* IndexBuilder::eq(kir::Value* a, kir::Value* b) {
  return kernel.create<kir::BinaryExpr>(DataType::Bool, ir::BinaryOpType::Eq, a, b);
}
kir::Value* IndexBuilder::logicalAnd(kir::Value* a, kir::Value* b) {
  if (a == nullptr) return b;
  return kernel.create<kir::BinaryExpr>(DataType::Bool, ir::BinaryOpType::LogicalAnd, a, b);
}

namespace {

// Split/Merge exprs on the paths from `targets` back to `sources` (definitions walked upward).
std::vector<ir::Expr*> exprsBetween(const std::vector<ir::IterDomain*>& sources,
                                    const std::vector<ir::IterDomain*>& targets) {
  std::unordered_set<const ir::IterDomain*> stop(sources.begin(), sources.end());
  std::vector<ir::Expr*> out;
  std::unordered_set<const ir::Expr*> seen;
  std::vector<ir::IterDomain*> work(targets.begin(), targets.end());
  while (!work.empty()) {
    ir::IterDomain* id = work.back();
    work.pop_back();
    if (stop.count(id)) continue;
    ir::Expr* def = id->definition();
    if (def == nullptr || !seen.insert(def).second) continue;
    out.push_back(def);
    for (ir::Val* in : def->inputs()) work.push_back(in->as<ir::IterDomain>());
  }
  return out;
}

void solveBackward(kir::Kernel& kernel, LowerContext& ctx, const std::vector<ir::Expr*>& exprs,
                   IndexMap& idx) {
  IndexBuilder b{kernel};
  for (bool progress = true; progress;) {
    progress = false;
    for (ir::Expr* e : exprs) {
      if (auto* s = e->dynCast<ir::Split>()) {
        if (idx.count(s->in()) || !idx.count(s->outer()) || !idx.count(s->inner())) continue;
        kir::Value* inner_ext = ctx.lowerScalar(kernel, s->inner()->extent());
        idx[s->in()] = b.add(b.mul(idx[s->outer()], inner_ext), idx[s->inner()]);
        progress = true;
      } else if (auto* m = e->dynCast<ir::Merge>()) {
        if (idx.count(m->outer()) || !idx.count(m->out())) continue;
        kir::Value* inner_ext = ctx.lowerScalar(kernel, m->inner()->extent());
        idx[m->outer()] = b.div(idx[m->out()], inner_ext);
        idx[m->inner()] = b.mod(idx[m->out()], inner_ext);
        progress = true;
      } else if (auto* r = e->dynCast<ir::Resize>()) {
        // out = in widened by `left` elements in front: in = out - left (negative or past the
        // input's extent in a pad's border).
        if (idx.count(r->in()) || !idx.count(r->out())) continue;
        idx[r->in()] = b.sub(idx[r->out()], ctx.lowerScalar(kernel, r->left()));
        progress = true;
      }
    }
  }
}

// When `index` has the form `outer * c + inner` with the constant c equal to `inner_ext` (what
// solveBackward builds for a split, and solveForward for a merge, with 0 <= inner < c), sets the
// operands and returns true: splitting it again by c gives them back without a division or
// modulo (register arrays stay indexed by loop indices, which unrolling makes constants).
bool splitOperands(kir::Value* index, kir::Value* inner_ext, kir::Value** outer,
                   kir::Value** inner) {
  auto* c = inner_ext->dynCast<kir::Const>();
  auto* add = index->dynCast<kir::BinaryExpr>();
  if (c == nullptr || !c->asInt() || add == nullptr || add->op != ir::BinaryOpType::Add) {
    return false;
  }
  auto* mul = add->lhs->dynCast<kir::BinaryExpr>();
  if (mul == nullptr || mul->op != ir::BinaryOpType::Mul) return false;
  auto* factor = mul->rhs->dynCast<kir::Const>();
  if (factor == nullptr || factor->asInt() != c->asInt()) return false;
  *outer = mul->lhs;
  *inner = add->rhs;
  return true;
}

void solveForward(kir::Kernel& kernel, LowerContext& ctx, const std::vector<ir::Expr*>& exprs,
                  IndexMap& idx) {
  IndexBuilder b{kernel};
  for (bool progress = true; progress;) {
    progress = false;
    // exprsBetween lists exprs from the targets back toward the sources, so a forward solve
    // takes them in reverse: one sweep solves a chain (in list order, one step per sweep).
    for (auto it = exprs.rbegin(); it != exprs.rend(); ++it) {
      ir::Expr* e = *it;
      if (auto* s = e->dynCast<ir::Split>()) {
        // Indices already known (loop indices of a local buffer's own loops) are kept.
        if ((idx.count(s->outer()) && idx.count(s->inner())) || !idx.count(s->in())) continue;
        kir::Value* inner_ext = ctx.lowerScalar(kernel, s->inner()->extent());
        kir::Value* outer = nullptr;
        kir::Value* inner = nullptr;
        if (!splitOperands(idx[s->in()], inner_ext, &outer, &inner)) {
          outer = b.div(idx[s->in()], inner_ext);
          inner = b.mod(idx[s->in()], inner_ext);
        }
        idx.emplace(s->outer(), outer);
        idx.emplace(s->inner(), inner);
        progress = true;
      } else if (auto* m = e->dynCast<ir::Merge>()) {
        if (idx.count(m->out()) || !idx.count(m->outer()) || !idx.count(m->inner())) continue;
        kir::Value* inner_ext = ctx.lowerScalar(kernel, m->inner()->extent());
        idx[m->out()] = b.add(b.mul(idx[m->outer()], inner_ext), idx[m->inner()]);
        progress = true;
      } else if (auto* r = e->dynCast<ir::Resize>()) {
        if (idx.count(r->out()) || !idx.count(r->in())) continue;
        idx[r->out()] = b.add(idx[r->in()], ctx.lowerScalar(kernel, r->left()));
        progress = true;
      }
    }
  }
}

}  // namespace

namespace {

// Same split or merge parameters: a constant factor/extent of equal value, or the same Scalar.
bool sameScalar(ir::Scalar* a, ir::Scalar* b) {
  if (a == b) return true;
  auto ca = a->constInt();
  auto cb = b->constInt();
  return ca.has_value() && cb.has_value() && *ca == *cb;
}

// A producer transformed like its consumer (propagated schedules, a register cache read by its
// consumer): each producer Split/Merge whose inputs correspond to consumer IDs and which has a
// consumer counterpart with the same inputs and parameters gives its outputs the counterpart's
// indices. With equal logical indices these equal what the forward solve would compute (outer =
// i / n and inner = i % n of i = outer * n + inner with inner < n), but they are the consumer's
// loop indices themselves, so a register array is indexed by (unrolled) loop indices, which the
// CUDA compiler folds to constants, instead of divisions of thread indices it cannot fold.
void mirrorConsumerTransforms(const ir::TensorView* producer, const ir::TensorView* consumer,
                              const IndexMap& consumer_idx,
                              std::unordered_map<const ir::IterDomain*, ir::IterDomain*>& to_c,
                              IndexMap& idx) {
  std::vector<ir::Expr*> p_exprs = exprsBetween(producer->logical(), producer->loop());
  if (p_exprs.empty()) return;
  std::vector<ir::Expr*> c_exprs = exprsBetween(consumer->domain()->maybeRoot(), consumer->loop());
  // The first consumer expr using each ID, looked up instead of searched (chains are long).
  std::unordered_map<const ir::IterDomain*, ir::Expr*> c_use;
  for (ir::Expr* e : c_exprs) {
    for (ir::Val* in : e->inputs()) c_use.emplace(in->as<ir::IterDomain>(), e);
  }
  auto use = [&](const ir::IterDomain* c_in) -> ir::Expr* {
    auto it = c_use.find(c_in);
    return it == c_use.end() ? nullptr : it->second;
  };
  // Indices only when the consumer has all of them: the forward solve fills an expr's outputs
  // together, so a half-filled split would be left without its other index.
  auto bind = [&](std::initializer_list<std::pair<ir::IterDomain*, ir::IterDomain*>> pairs) {
    bool all = true;
    for (auto [p_id, c_id] : pairs) {
      to_c[p_id] = c_id;
      all = all && consumer_idx.count(c_id) != 0;
    }
    if (!all) return;
    for (auto [p_id, c_id] : pairs) idx[p_id] = consumer_idx.at(c_id);
  };
  for (bool progress = true; progress;) {
    progress = false;
    // From the sources toward the targets (exprsBetween lists them the other way): one sweep
    // mirrors a chain.
    for (auto it = p_exprs.rbegin(); it != p_exprs.rend(); ++it) {
      ir::Expr* e = *it;
      if (auto* s = e->dynCast<ir::Split>()) {
        if (to_c.count(s->outer()) || !to_c.count(s->in())) continue;
        auto* cs = use(to_c.at(s->in())) ? use(to_c.at(s->in()))->dynCast<ir::Split>() : nullptr;
        if (cs == nullptr || cs->innerSplit() != s->innerSplit() ||
            !sameScalar(cs->factor(), s->factor())) {
          continue;
        }
        bind({{s->outer(), cs->outer()}, {s->inner(), cs->inner()}});
        progress = true;
      } else if (auto* m = e->dynCast<ir::Merge>()) {
        if (to_c.count(m->out()) || !to_c.count(m->outer()) || !to_c.count(m->inner())) continue;
        auto* cm = use(to_c.at(m->outer())) ? use(to_c.at(m->outer()))->dynCast<ir::Merge>()
                                            : nullptr;
        if (cm == nullptr || cm->outer() != to_c.at(m->outer()) ||
            cm->inner() != to_c.at(m->inner())) {
          continue;
        }
        bind({{m->out(), cm->out()}});
        progress = true;
      }
    }
  }
}

}  // namespace

std::string parallelIndexName(ir::ParallelType p) {
  std::string name(ir::parallelTypeName(p));
  return std::string(ir::isThreadDim(p) ? "threadIdx." : "blockIdx.") + name.back();
}

IndexMap consumerIndices(kir::Kernel& kernel, LowerContext& ctx, const ir::TensorView* tv,
                         const std::vector<kir::ForLoop*>& loops) {
  IndexMap idx;
  bool promoted = false;
  const transform::LoopGraph& lg = ctx.loopGraph();
  // The index of each enclosing loop by its group (the outermost one of a group): one lookup per
  // loop ID, where scanning the loops for each would be quadratic in a deep nest.
  std::unordered_map<int64_t, kir::Var*> loop_of_group;
  for (kir::ForLoop* f : loops) loop_of_group.emplace(ctx.loopGroup(f->id), f->index);
  for (ir::IterDomain* id : tv->loop()) {
    if (id->isBroadcast()) {
      idx[id] = kernel.constInt(0);
      continue;
    }
    bool found = false;
    if (auto it = loop_of_group.find(ctx.loopGroup(id)); it != loop_of_group.end()) {
      idx[id] = it->second;
      promoted |= !lg.isExactlyPromoted(id);
      found = true;
    }
    const ir::ParallelType p = ctx.loopParallelType(id);
    if (!found && ir::isThreadOrBlockDim(p)) {
      idx[id] = kernel.create<kir::NamedScalar>(parallelIndexName(p));
      promoted |= !lg.isExactlyPromoted(id);
    }
  }
  if (promoted) return promotedIndices(kernel, ctx, tv, idx);
  solveBackward(kernel, ctx, exprsBetween(tv->domain()->maybeRoot(), tv->loop()), idx);
  // A broadcast root ID merged with others keeps the index the merge gives it (z / e): readers
  // treat broadcast IDs as index 0 anyway, and the predicate needs it (< 1) to mask iterations
  // of the merged loop past the real dims. Otherwise it is 0.
  for (ir::IterDomain* id : tv->domain()->maybeRoot()) {
    if (id->isBroadcast()) idx.emplace(id, kernel.constInt(0));
  }
  return idx;
}

namespace {

// A local or shared producer written in a promoted space holds the element of its own loop
// iteration at each buffer position: a reader in the same loops reads the position of its own
// iteration, found through the promoted counterparts of the producer's allocation IDs and of the
// consumer's loop IDs.
void loopAlignedPositions(LowerContext& ctx, const ir::TensorView* producer,
                          const ir::TensorView* consumer, const IndexMap& consumer_idx,
                          IndexMap& idx) {
  const transform::IdGraph& exact = ctx.loopGraph().exact();
  Promotion pp = promotionOf(ctx, producer);
  Promotion cp = promotionOf(ctx, consumer);
  auto image = [](const Promotion& pr, ir::IterDomain* id) {
    auto it = pr.map.find(id);
    return it == pr.map.end() ? id : it->second;
  };
  const kir::Buffer* buf = ctx.buffers.at(producer);
  for (ir::IterDomain* a : buf->allocIds) {
    ir::IterDomain* pa = image(pp, a);
    kir::Value* found = nullptr;
    for (ir::IterDomain* y : consumer->loop()) {
      auto it = consumer_idx.find(y);
      if (it != consumer_idx.end() && exact.areMapped(pa, image(cp, y))) {
        found = it->second;
        break;
      }
    }
    LOOM_CHECK(found != nullptr, "lowering: ", consumer->toString(), " reads ",
               producer->toString(), ", whose loops run over promoted IDs, but has no loop "
               "matching its buffer axis ", a->toString(), "; inline ", producer->toString(),
               " further into it");
    idx[a] = found;
  }
}

}  // namespace

IndexMap producerIndices(kir::Kernel& kernel, LowerContext& ctx, const ir::TensorView* producer,
                         const ir::TensorView* consumer, const IndexMap& consumer_idx) {
  IndexMap idx;
  auto buf = ctx.buffers.find(producer);
  const bool loop_aligned = buf != ctx.buffers.end() &&
                            buf->second->kind != kir::BufferKind::Param &&
                            isPromoted(ctx, producer);
  if (loop_aligned) loopAlignedPositions(ctx, producer, consumer, consumer_idx, idx);
  for (ir::IterDomain* id : producer->logical()) {
    if (id->isBroadcast()) idx[id] = kernel.constInt(0);
  }
  std::unordered_map<const ir::IterDomain*, ir::IterDomain*> to_consumer;
  for (auto [p, c] : ir::pairwiseLogicalMap(producer, consumer)) {
    if (p->isBroadcast()) continue;
    to_consumer[p] = c;
    auto it = consumer_idx.find(c);
    if (it != consumer_idx.end()) idx[p] = it->second;
  }
  // A squeeze removes IDs of extent 1 (broadcasts, or Iteration IDs that are 1 at run time, as
  // concretized reshapes squeeze them): they are read at 0.
  if (consumer->definition() != nullptr && consumer->definition()->isA<ir::SqueezeOp>()) {
    for (ir::IterDomain* id : ir::TensorDomain::noReductions(producer->logical())) {
      if (!to_consumer.count(id)) idx.emplace(id, kernel.constInt(0));
    }
  }
  if (!loop_aligned) mirrorConsumerTransforms(producer, consumer, consumer_idx, to_consumer, idx);
  return idx;
}

namespace {

// One run of a parameter's allocation dims indexed as one linear offset: `index` covers the dims
// from the run's outermost to `last` (a logical position), whose stride the run is multiplied by.
struct Run {
  kir::Value* index;
  size_t last;
  bool contiguous;  ///< `last` is dense with the next inner dim (or, innermost, has stride 1)
};

// When `outer` is z / e and `inner` is z % e (the indices solveBackward gives a merge's inputs),
// the index of the two as one linear range: z. Null otherwise.
kir::Value* foldMerge(kir::Value* outer, kir::Value* inner) {
  auto* div = outer->dynCast<kir::BinaryExpr>();
  auto* mod = inner->dynCast<kir::BinaryExpr>();
  if (div == nullptr || mod == nullptr || div->op != ir::BinaryOpType::Div ||
      mod->op != ir::BinaryOpType::Mod || div->lhs != mod->lhs || div->rhs != mod->rhs) {
    return nullptr;
  }
  return div->lhs;
}

// A parameter's offset. Strides are runtime values in logical order; the contiguity flags (of
// fusion inputs, which the executor checks against the strides; Loom allocates every other
// parameter densely in allocation order) let two things go: the stride of a contiguous innermost
// dim (1), and the split of a merged loop index back into its dims: adjacent dims d1, d2 with d1
// contiguous and indices z / e and z % e give z * stride(d2) for both, since stride(d1) = e *
// stride(d2). Runs are folded until no adjacent pair folds, so merges nested either way combine.
kir::Value* paramOffset(kir::Kernel& kernel, const ir::TensorView* tv, const kir::Buffer* buf,
                        const IndexMap& idx) {
  IndexBuilder b{kernel};
  const std::vector<ir::IterDomain*> logical = ir::TensorDomain::noReductions(tv->logical());
  auto indexOf = [&](size_t k) {
    auto found = idx.find(logical[k]);
    LOOM_ASSERT(found != idx.end(), "no index for ", logical[k]->toString(), " of ",
                tv->toString());
    return found->second;
  };
  // Allocation order when the allocation domain is a permutation of logical; flags false
  // otherwise (every dim keeps its stride).
  std::vector<Run> runs;
  const std::vector<ir::IterDomain*>& alloc = tv->maybeAllocation();
  for (size_t a = 0; a < alloc.size(); ++a) {
    if (alloc[a]->isReduction()) continue;
    auto it = std::find(logical.begin(), logical.end(), alloc[a]);
    if (it == logical.end()) {
      runs.clear();
      for (size_t k = 0; k < logical.size(); ++k) {
        if (!logical[k]->isBroadcast()) runs.push_back({indexOf(k), k, false});
      }
      break;
    }
    if (alloc[a]->isBroadcast()) continue;
    const size_t k = size_t(it - logical.begin());
    const bool contiguous = !buf->isFusionInput || tv->contiguity()[a].value_or(false);
    runs.push_back({indexOf(k), k, contiguous});
  }
  for (bool folded = true; folded;) {
    folded = false;
    for (size_t r = 0; r + 1 < runs.size(); ++r) {
      if (!runs[r].contiguous) continue;
      if (kir::Value* z = foldMerge(runs[r].index, runs[r + 1].index)) {
        runs[r + 1].index = z;
        runs.erase(runs.begin() + int64_t(r));
        folded = true;
        break;
      }
    }
  }
  kir::Value* offset = nullptr;
  for (size_t r = 0; r < runs.size(); ++r) {
    kir::Value* term = runs[r].index;
    if (r + 1 < runs.size() || !runs[r].contiguous) {
      term = b.mul(term, kernel.create<kir::TensorSize>(buf, int64_t(runs[r].last), true));
    }
    offset = offset ? b.add(offset, term) : term;
  }
  return offset ? offset : kernel.constInt(0);
}

}  // namespace

kir::Value* bufferOffset(kir::Kernel& kernel, LowerContext& ctx, const ir::TensorView* tv,
                         IndexMap idx) {
  IndexBuilder b{kernel};
  auto it = ctx.buffers.find(tv);
  LOOM_ASSERT(it != ctx.buffers.end(), "no buffer for ", tv->toString());
  const kir::Buffer* buf = it->second;
  if (buf->kind == kir::BufferKind::Param) return paramOffset(kernel, tv, buf, idx);
  kir::Value* offset = nullptr;
  solveForward(kernel, ctx, exprsBetween(tv->logical(), buf->allocIds), idx);
  // The stride is `stride` times `symbolic_stride` (the product of the symbolic extents passed,
  // nullptr while there are none: only a shared buffer sized at launch has them).
  int64_t stride = 1;
  kir::Value* symbolic_stride = nullptr;
  const auto n = int64_t(buf->allocIds.size());
  for (int64_t k = n - 1; k >= 0; --k) {
    ir::IterDomain* id = buf->allocIds[size_t(k)];
    auto found = idx.find(id);
    LOOM_ASSERT(found != idx.end(), "no index for ", id->toString(), " of ", tv->toString());
    if (!buf->allocStrides.empty()) stride = buf->allocStrides[size_t(k)];  // padded rows
    kir::Value* s = kernel.constInt(stride);
    if (symbolic_stride != nullptr) s = stride == 1 ? symbolic_stride : b.mul(symbolic_stride, s);
    kir::Value* term = b.mul(found->second, s);
    offset = offset ? b.add(term, offset) : term;
    std::optional<ir::ScalarValue> extent = eval::ExpressionEvaluator().evaluate(id->extent());
    if (extent.has_value() && std::holds_alternative<int64_t>(*extent)) {
      stride *= std::get<int64_t>(*extent);
    } else {
      kir::Value* e = ctx.lowerScalar(kernel, id->extent());
      symbolic_stride = symbolic_stride != nullptr ? b.mul(symbolic_stride, e) : e;
    }
  }
  return offset ? offset : kernel.constInt(0);
}

kir::Value* inRangePredicate(kir::Kernel& kernel, LowerContext& ctx, const ir::TensorView* tv,
                             const IndexMap& idx, bool include_reductions) {
  IndexBuilder b{kernel};
  const auto& loop = tv->loop();
  kir::Value* cond = nullptr;
  std::vector<ir::IterDomain*> checked = resizedRoot(tv);
  // The outer input of a merge between logical and loop gets z / e, unbounded when the loop
  // pads: a merge of split pieces in another order (a reshape replayed back to a transposed
  // producer: z -> (z / 21, z % 21) -> (z % 21) * 3 + z / 21) maps padding iterations back into
  // range, so that outer piece is checked itself. (A merge of logical IDs is already checked
  // through them.)
  for (ir::Expr* e : exprsBetween(tv->domain()->maybeRoot(), tv->loop())) {
    auto* m = e->dynCast<ir::Merge>();
    if (m == nullptr || std::find(checked.begin(), checked.end(), m->outer()) != checked.end()) {
      continue;
    }
    const auto& logical = tv->logical();
    if (std::find(logical.begin(), logical.end(), m->outer()) == logical.end()) {
      checked.push_back(m->outer());
    }
  }
  // Loops over promoted IDs of other tensors run over those tensors' spaces: their root indices
  // (promotedIndices puts them in idx) are checked too.
  if (isPromoted(ctx, tv)) {
    for (const ir::TensorView* ref : promotionOf(ctx, tv).refs) {
      for (ir::IterDomain* id : resizedRoot(ref)) {
        if (!id->isBroadcast() && !id->isReduction() && idx.count(id) &&
            std::find(checked.begin(), checked.end(), id) == checked.end()) {
          checked.push_back(id);
        }
      }
    }
  }
  for (ir::IterDomain* id : checked) {
    if (id->isReduction() && !include_reductions) continue;
    if (id->isBroadcast()) {
      // Index 0 unless a merge gave it one (see consumerIndices): then it must be below 1.
      auto it = idx.find(id);
      auto* c = it == idx.end() ? nullptr : it->second->dynCast<kir::Const>();
      if (it == idx.end() || (c != nullptr && c->asInt() == 0)) continue;
    }
    if (std::find(loop.begin(), loop.end(), id) != loop.end()) continue;
    auto it = idx.find(id);
    if (it == idx.end()) continue;
    cond = b.logicalAnd(cond, b.lt(it->second, ctx.lowerScalar(kernel, id->extent())));
  }
  return cond;
}

kir::Value* substitute(kir::Kernel& kernel, kir::Value* v,
                       const std::unordered_map<const kir::Var*, kir::Value*>& repl) {
  if (v == nullptr) return v;
  return kir::rebuildBottomUp(kernel, v, [&](kir::Value* x) {
    auto* var = x->dynCast<kir::Var>();
    auto it = var == nullptr ? repl.end() : repl.find(var);
    return it == repl.end() ? x : it->second;
  });
}

}  // namespace loom::lower
